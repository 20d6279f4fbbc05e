package db_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
)

// The authentication cache must not change any answer: with every valid
// token already cached, a wrong id, a revocation or an expiry is seen on
// the very next call.
func TestAuthCacheSemantics(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	d := openTree(t, filepath.Join(t.TempDir(), db.FileName), clk.Now)
	ctx := context.Background()
	issue := func(req db.IssueTokenRequest) (string, *db.Token) {
		t.Helper()
		s, tok, err := d.IssueToken(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return s, tok
	}
	teamA, tokA := issue(db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments"})
	teamB, tokB := issue(db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", Write: true})
	admin, adminTok := issue(db.IssueTokenRequest{Kind: db.TokenAdmin})
	expiring, _ := issue(db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", TTL: time.Minute})
	// Warm the cache.
	for _, s := range []string{teamA, teamB, admin, expiring} {
		for range 3 {
			if _, err := d.Authenticate(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	idA, secretA, _ := strings.Cut(teamA, ".")
	idB, secretB, _ := strings.Cut(teamB, ".")
	_, adminSecret, _ := strings.Cut(admin, ".")
	for name, bearer := range map[string]string{
		"id of B with secret of A":  idB + "." + secretA,
		"id of A with secret of B":  idA + "." + secretB,
		"admin prefix, team secret": "admin." + secretA,
		"team id, admin secret":     idA + "." + adminSecret,
		"admin id with its secret":  adminTok.ID + "." + adminSecret,
	} {
		if _, err := d.Authenticate(ctx, bearer); db.ErrorCode(err) != db.EUNAUTHORIZED {
			t.Errorf("%s: err = %v, want unauthorized", name, err)
		}
	}
	// The cached record keeps its own permissions.
	if tok, err := d.Authenticate(ctx, teamB); err != nil || tok.ID != tokB.ID || !tok.HasPermission(db.PermTeamWrite) {
		t.Fatalf("B = %+v, %v", tok, err)
	}
	if tok, err := d.Authenticate(ctx, teamA); err != nil || tok.ID != tokA.ID || tok.HasPermission(db.PermTeamWrite) {
		t.Fatalf("A = %+v, %v", tok, err)
	}
	// Expiry is checked on every call, cached or not.
	clk.Add(61 * time.Second)
	if _, err := d.Authenticate(ctx, expiring); db.ErrorCode(err) != db.ETOKENEXPIRED {
		t.Fatalf("expired: err = %v", err)
	}
	// Revocation of a cached team token and a cached admin token.
	for _, c := range []struct{ bearer, id string }{{teamA, tokA.ID}, {admin, adminTok.ID}} {
		if err := d.RevokeToken(ctx, c.id); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Authenticate(ctx, c.bearer); db.ErrorCode(err) != db.EUNAUTHORIZED {
			t.Fatalf("revoked %s: err = %v", c.id, err)
		}
	}
	// Others still work after the cache was emptied.
	if _, err := d.Authenticate(ctx, teamB); err != nil {
		t.Fatal(err)
	}
}

// TestAuthCacheRevokeRace: while many goroutines authenticate a token,
// it is revoked; every call that starts after RevokeToken returns fails.
func TestAuthCacheRevokeRace(t *testing.T) {
	d := openTree(t, filepath.Join(t.TempDir(), db.FileName), nil)
	ctx := context.Background()
	for round := range 20 {
		secret, tok, err := d.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments"})
		if err != nil {
			t.Fatal(err)
		}
		var revoked atomic.Bool
		var bad atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					after := revoked.Load()
					_, err := d.Authenticate(ctx, secret)
					if after && err == nil {
						bad.Add(1)
					}
				}
			})
		}
		time.Sleep(time.Millisecond)
		if err := d.RevokeToken(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		revoked.Store(true)
		time.Sleep(2 * time.Millisecond)
		close(stop)
		wg.Wait()
		if n := bad.Load(); n > 0 {
			t.Fatalf("round %d: %d calls started after the revocation succeeded", round, n)
		}
	}
}

// A cached token's last-used time still moves: ListTokens shows a use at
// once when it is the first through the cache entry or comes at least a
// second after the last one noted, and uses within that second are
// coalesced into the first. Close writes the latest noted time.
func TestAuthCacheLastUsedNotes(t *testing.T) {
	path := filepath.Join(t.TempDir(), db.FileName)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	d := openTree(t, path, clk.Now)
	ctx := context.Background()
	secret, tok, err := d.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := func() time.Time {
		t.Helper()
		list, err := d.ListTokens(ctx)
		if err != nil || len(list) != 1 || list[0].ID != tok.ID || list[0].LastUsedAt == nil {
			t.Fatalf("ListTokens = %+v, %v", list, err)
		}
		return *list[0].LastUsedAt
	}
	for _, c := range []struct {
		advance time.Duration
		want    time.Duration // since t0
	}{
		{0, 0}, // first use: read from the file, noted
		{300 * time.Millisecond, 0},
		{600 * time.Millisecond, 0}, // 0.9 s: within a second of the note
		{200 * time.Millisecond, 1100 * time.Millisecond}, // 1.1 s: a second after it
		{500 * time.Millisecond, 1100 * time.Millisecond},
		{2 * time.Second, 3600 * time.Millisecond},
		{11 * time.Second, 14600 * time.Millisecond}, // the cache entry expired: read again
	} {
		clk.Add(c.advance)
		got, err := d.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		if !got.LastUsedAt.Equal(clk.Now()) {
			t.Errorf("Authenticate's LastUsedAt = %v, want the time of the call %v", got.LastUsedAt, clk.Now())
		}
		if lu := lastUsed(); !lu.Equal(t0.Add(c.want)) {
			t.Errorf("at %v: last used %v, want %v", clk.Now().Sub(t0), lu.Sub(t0), c.want)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := db.Open(path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	list, err := d2.ListTokens(ctx)
	if err != nil || len(list) != 1 || list[0].LastUsedAt == nil || !list[0].LastUsedAt.Equal(t0.Add(14600*time.Millisecond)) {
		t.Fatalf("after Close: %+v, %v", list, err)
	}
}

// Authenticate's answer is the caller's: changing it changes nothing that
// a later call returns.
func TestAuthenticateReturnsACopy(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	d := openTree(t, filepath.Join(t.TempDir(), db.FileName), clk.Now)
	ctx := context.Background()
	secret, _, err := d.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", Write: true, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second from the cache
		tok, err := d.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		if len(tok.Permissions) != 2 || tok.Permissions[0] != db.PermTeamRead || tok.Permissions[1] != db.PermTeamWrite {
			t.Fatalf("permissions %v", tok.Permissions)
		}
		tok.Permissions[0] = db.PermAdminWrite
		tok.Permissions = append(tok.Permissions, db.PermAdminRead)
		*tok.ExpiresAt = tok.ExpiresAt.Add(24 * time.Hour)
		tok.Hash[0] ^= 0xff
	}
	clk.Add(time.Hour)
	if _, err := d.Authenticate(ctx, secret); db.ErrorCode(err) != db.ETOKENEXPIRED {
		t.Fatalf("after an hour: err = %v, want token_expired", err)
	}
}

// AuthenticateIdentity writes the permissions into the caller's storage
// when it is large enough; they are the caller's to change, and a token
// revoked is refused on the very next call, though it came from the cache.
func TestAuthenticateIdentityStorage(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	d := openTree(t, filepath.Join(t.TempDir(), db.FileName), clk.Now)
	ctx := context.Background()
	secret, tok, err := d.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", Write: true, Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 1, 2, 4} {
		storage := make([]string, 0, size)
		id := db.TokenIdentity{Permissions: storage}
		if err := d.AuthenticateIdentity(ctx, secret, &id); err != nil {
			t.Fatal(err)
		}
		if id.ID != tok.ID || id.Kind != db.TokenTeam || id.Team != "payments" || id.Name != "ci" ||
			!reflect.DeepEqual(id.Permissions, []string{db.PermTeamRead, db.PermTeamWrite}) {
			t.Fatalf("storage %d: %+v", size, id)
		}
		if size >= 2 && &id.Permissions[0] != &storage[:1][0] {
			t.Errorf("storage of %d: the permissions are not in it", size)
		}
		id.Permissions[0] = db.PermAdminWrite // the caller's copy
	}
	var id db.TokenIdentity
	if err := d.AuthenticateIdentity(ctx, secret, &id); err != nil || id.Permissions[0] != db.PermTeamRead {
		t.Fatalf("after the caller changed its copy: %+v, %v", id, err)
	}
	if err := d.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.AuthenticateIdentity(ctx, secret, &id); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Fatalf("after revoke: %v, want unauthorized", err)
	}
}
