package db_test

import (
	"context"
	"path/filepath"
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
