package db_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openTree(t *testing.T, path string, now func() time.Time) *db.DB {
	t.Helper()
	d, err := db.Open(path, db.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := d.EnsureOrg(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []db.Node{
		{Name: "platform", Parent: "acme", Kind: db.KindGroup},
		{Name: "payments", Parent: "platform", Kind: db.KindTeam},
	} {
		if _, err := d.CreateNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

var (
	teamTokenRE  = regexp.MustCompile(`^rct_[a-z2-7]{16}\.[A-Za-z0-9_-]{43}$`)
	adminTokenRE = regexp.MustCompile(`^admin\.[A-Za-z0-9_-]{43}$`)
)

func TestIssueToken(t *testing.T) {
	d := openTree(t, filepath.Join(t.TempDir(), db.FileName), nil)
	ctx := context.Background()
	tests := []struct {
		name  string
		req   db.IssueTokenRequest
		code  string
		perms string
		re    *regexp.Regexp
	}{
		{"OK team read", db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments"}, "", "team:read", teamTokenRE},
		{"OK team write", db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", Write: true, Name: "ci"}, "", "team:read,team:write", teamTokenRE},
		{"OK admin", db.IssueTokenRequest{Kind: db.TokenAdmin, TTL: time.Hour}, "", "admin:read,admin:write,team:read,team:write", adminTokenRE},
		{"ErrNotFound team", db.IssueTokenRequest{Kind: db.TokenTeam, Team: "nope"}, db.ENOTFOUND, "", nil},
		{"ErrInvalid group as team", db.IssueTokenRequest{Kind: db.TokenTeam, Team: "platform"}, db.EINVALID, "", nil},
		{"ErrInvalid org as team", db.IssueTokenRequest{Kind: db.TokenTeam, Team: "acme"}, db.EINVALID, "", nil},
		{"ErrInvalid team missing", db.IssueTokenRequest{Kind: db.TokenTeam}, db.EINVALID, "", nil},
		{"ErrInvalid admin with team", db.IssueTokenRequest{Kind: db.TokenAdmin, Team: "payments"}, db.EINVALID, "", nil},
		{"ErrInvalid kind", db.IssueTokenRequest{Kind: "root"}, db.EINVALID, "", nil},
		{"ErrInvalid negative ttl", db.IssueTokenRequest{Kind: db.TokenAdmin, TTL: -time.Second}, db.EINVALID, "", nil},
		{"ErrInvalid long name", db.IssueTokenRequest{Kind: db.TokenAdmin, Name: strings.Repeat("n", 101)}, db.EINVALID, "", nil},
		{"ErrInvalid control char name", db.IssueTokenRequest{Kind: db.TokenAdmin, Name: "a\nb"}, db.EINVALID, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret, tok, err := d.IssueToken(ctx, tt.req)
			if db.ErrorCode(err) != tt.code {
				t.Fatalf("err = %v, want code %q", err, tt.code)
			}
			if tt.code != "" {
				return
			}
			if !tt.re.MatchString(secret) {
				t.Fatalf("token %q does not have the expected form", secret)
			}
			if got := strings.Join(tok.Permissions, ","); got != tt.perms {
				t.Fatalf("permissions = %s, want %s", got, tt.perms)
			}
			if !strings.HasPrefix(tok.ID, db.TokenIDPrefix) {
				t.Fatalf("id = %q", tok.ID)
			}
			if tt.req.TTL > 0 && (tok.ExpiresAt == nil || tok.ExpiresAt.Sub(tok.CreatedAt) != tt.req.TTL) {
				t.Fatalf("expires = %v", tok.ExpiresAt)
			}
			got, err := d.Authenticate(ctx, secret)
			if err != nil || got.ID != tok.ID || got.Kind != tt.req.Kind {
				t.Fatalf("Authenticate(issued) = %+v, %v", got, err)
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
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
	team, teamTok := issue(db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments"})
	admin, adminTok := issue(db.IssueTokenRequest{Kind: db.TokenAdmin})
	admin2, _ := issue(db.IssueTokenRequest{Kind: db.TokenAdmin})
	expiring, _ := issue(db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", TTL: time.Minute})
	expAdmin, _ := issue(db.IssueTokenRequest{Kind: db.TokenAdmin, TTL: time.Minute})
	revoked, revTok := issue(db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", TTL: time.Minute})
	if err := d.RevokeToken(ctx, revTok.ID); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Minute)

	teamID, teamSecret, _ := strings.Cut(team, ".")
	_, adminSecret, _ := strings.Cut(admin, ".")
	_, expSecret, _ := strings.Cut(expiring, ".")
	tests := []struct {
		name   string
		bearer string
		code   string
		id     string
	}{
		{"OK team", team, "", teamTok.ID},
		{"OK team with Bearer prefix", "Bearer " + team, "", teamTok.ID},
		{"OK admin", admin, "", adminTok.ID},
		{"OK second admin", admin2, "", ""},
		{"ErrUnauthorized empty", "", db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized Bearer alone", "Bearer", db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized Bearer space", "Bearer ", db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized garbage", "garbage", db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized dot only", ".", db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized admin no secret", "admin.", db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized admin wrong secret", "admin.wrong", db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized admin with team secret", "admin." + teamSecret, db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized team id with admin secret", teamID + "." + adminSecret, db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized admin token id with its secret", adminTok.ID + "." + adminSecret, db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized wrong secret", teamID + "." + strings.Repeat("A", 43), db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized unknown id", "rct_aaaaaaaaaaaaaaaa." + teamSecret, db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized malformed id", "rct_AAAA." + teamSecret, db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized huge secret", teamID + "." + strings.Repeat("A", 100000), db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized expired with wrong secret", strings.SplitN(expiring, ".", 2)[0] + ".x" + expSecret[1:], db.EUNAUTHORIZED, ""},
		{"ErrUnauthorized revoked", revoked, db.EUNAUTHORIZED, ""},
		{"ErrTokenExpired team", expiring, db.ETOKENEXPIRED, ""},
		{"ErrTokenExpired admin", expAdmin, db.ETOKENEXPIRED, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := d.Authenticate(ctx, tt.bearer)
			if db.ErrorCode(err) != tt.code {
				t.Fatalf("err = %v, want code %q", err, tt.code)
			}
			if tt.code == "" && tt.id != "" && tok.ID != tt.id {
				t.Fatalf("id = %s, want %s", tok.ID, tt.id)
			}
			// AuthenticateIdentity answers the same, from the record
			// and from the cache, and leaves dst alone on an error.
			for range 2 {
				id := db.TokenIdentity{ID: "untouched"}
				err := d.AuthenticateIdentity(ctx, tt.bearer, &id)
				if db.ErrorCode(err) != tt.code {
					t.Fatalf("AuthenticateIdentity: err = %v, want code %q", err, tt.code)
				}
				if tt.code != "" {
					if id.ID != "untouched" {
						t.Fatalf("AuthenticateIdentity wrote %+v on an error", id)
					}
					continue
				}
				want := db.TokenIdentity{ID: tok.ID, Kind: tok.Kind, Team: tok.Team, Name: tok.Name, Permissions: tok.Permissions}
				if !reflect.DeepEqual(id, want) {
					t.Fatalf("AuthenticateIdentity = %+v, Authenticate %+v", id, want)
				}
			}
		})
	}
}

func TestRevokeToken(t *testing.T) {
	d := openTree(t, filepath.Join(t.TempDir(), db.FileName), nil)
	ctx := context.Background()
	secret, tok, err := d.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenAdmin})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK effective at once", func(t *testing.T) {
		if _, err := d.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
		if err := d.RevokeToken(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Authenticate(ctx, secret); db.ErrorCode(err) != db.EUNAUTHORIZED {
			t.Fatalf("after revoke: %v", err)
		}
	})
	t.Run("OK twice", func(t *testing.T) {
		if err := d.RevokeToken(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if err := d.RevokeToken(ctx, "rct_nope"); db.ErrorCode(err) != db.ENOTFOUND {
			t.Fatalf("err = %v", err)
		}
	})
	list, err := d.ListTokens(ctx)
	if err != nil || len(list) != 1 || list[0].RevokedAt == nil || list[0].Hash != nil {
		t.Fatalf("ListTokens = %+v, %v", list, err)
	}
}

func TestLastUsed(t *testing.T) {
	path := filepath.Join(t.TempDir(), db.FileName)
	d := openTree(t, path, nil)
	ctx := context.Background()
	secret, tok, err := d.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	list, _ := d.ListTokens(ctx)
	if list[0].LastUsedAt == nil {
		t.Fatal("ListTokens does not show the in-memory last-used time")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := db.Open(path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	list, _ = d2.ListTokens(ctx)
	if len(list) != 1 || list[0].ID != tok.ID || list[0].LastUsedAt == nil {
		t.Fatalf("last-used not written at close: %+v", list)
	}
}

// TestSecretNotStored scans the raw file for the secret in every encoding
// an implementation might carelessly store.
func TestSecretNotStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), db.FileName)
	d := openTree(t, path, nil)
	ctx := context.Background()
	var secrets []string
	for _, req := range []db.IssueTokenRequest{
		{Kind: db.TokenAdmin},
		{Kind: db.TokenTeam, Team: "payments", Write: true},
	} {
		s, _, err := d.IssueToken(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Authenticate(ctx, s); err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, s)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		_, secret, _ := strings.Cut(s, ".")
		for _, needle := range []string{s, secret, secret[:16]} {
			if bytes.Contains(raw, []byte(needle)) {
				t.Fatalf("the database file contains %q", needle)
			}
		}
	}
	// The hashes are stored: the test above is not vacuous.
	if !bytes.Contains(raw, []byte(`"hash"`)) {
		t.Fatal("no token hash in the file; did the write happen?")
	}
}

// BenchmarkAuthenticate is the store's share of every authenticated API
// request: a token checked against a warm authentication cache (the keyed
// hash of the secret, the constant-time comparison, the id, revocation and
// expiry checks, the last-used note and the copy returned). "parallel" runs
// it from every core at once, as the server does.
//
//	go test ./db -run '^$' -bench Authenticate -count 3
func BenchmarkAuthenticate(b *testing.B) {
	d := db.MustOpen(b)
	ctx := context.Background()
	if _, err := d.EnsureOrg(ctx, "acme"); err != nil {
		b.Fatal(err)
	}
	if _, err := d.CreateNode(ctx, db.Node{Name: "payments", Parent: "acme", Kind: db.KindTeam}); err != nil {
		b.Fatal(err)
	}
	admin, _, err := d.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenAdmin})
	if err != nil {
		b.Fatal(err)
	}
	team, _, err := d.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", Write: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, secret string }{{"admin", admin}, {"team", team}} {
		b.Run(c.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Authenticate(ctx, c.secret); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := d.Authenticate(ctx, c.secret); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
