package oidcauth

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/oidcauth/oidctest"
	"github.com/rootcause/rootcause/secretref"
	"github.com/rootcause/rootcause/server"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newTestVerifier(t *testing.T, is *oidctest.Issuer, clk *clock, mod func(*Settings)) *Verifier {
	t.Helper()
	s := Settings{
		Issuer:      is.URL,
		ClientID:    is.ClientID,
		AdminGroups: []string{"sre-admins"},
		TeamGroups:  map[string]string{"payments-eng": "payments", "payments-viewers": "payments", "search-eng": "search"},
		WriteGroups: []string{"payments-eng"},
		Logger:      quiet,
	}
	if clk != nil {
		s.Now = clk.Now
	}
	if mod != nil {
		mod(&s)
	}
	v, err := NewVerifier(context.Background(), s)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	if got := db.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %s, want %s", err, got, code)
	}
}

func TestVerifyValidTokens(t *testing.T) {
	is := oidctest.New(t)
	v := newTestVerifier(t, is, nil, nil)
	ctx := context.Background()
	for _, kid := range []string{"rsa-1", "ec-1"} {
		raw := oidctest.Sign(is.Key(kid), "", is.Claims("u-1", map[string]any{
			"email": "alice@example.com", "name": "Alice", "groups": []any{"payments-eng", "other"},
		}))
		p, err := v.Verify(ctx, raw)
		if err != nil {
			t.Fatalf("%s: %v", kid, err)
		}
		want := server.Principal{ID: "oidc:u-1", Subject: "u-1", Kind: server.KindOIDC, Email: "alice@example.com", Name: "Alice",
			Team: "payments", Permissions: []string{db.PermTeamRead, db.PermTeamWrite}}
		if fmt.Sprint(*p) != fmt.Sprint(want) {
			t.Errorf("%s: principal = %+v, want %+v", kid, *p, want)
		}
	}
}

func TestVerifyRejects(t *testing.T) {
	is := oidctest.New(t)
	clk := newClock()
	v := newTestVerifier(t, is, clk, nil)
	ctx := context.Background()
	rsa1 := is.Key("rsa-1")
	now := clk.Now()
	valid := oidctest.Sign(rsa1, "", is.Claims("u-1", nil))
	parts := strings.Split(valid, ".")
	pub, err := x509.MarshalPKIXPublicKey(rsa1.Signer.Public())
	if err != nil {
		t.Fatal(err)
	}
	pemPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	stranger := oidctest.New(t) // another provider: same kid names, other keys

	tampered := func() string {
		// Change the payload, keep the signature.
		other := strings.Split(oidctest.Sign(rsa1, "", is.Claims("admin", nil)), ".")
		return parts[0] + "." + other[1] + "." + parts[2]
	}()
	badSig := func() string {
		sig := []byte(parts[2])
		sig[10] ^= 1
		if sig[10] == '.' {
			sig[10] = 'A'
		}
		return parts[0] + "." + parts[1] + "." + string(sig)
	}()

	cases := []struct {
		name, raw, code string
	}{
		{"expired", oidctest.Sign(rsa1, "", is.Claims("u-1", map[string]any{"exp": now.Add(-2 * time.Minute).Unix()})), db.ETOKENEXPIRED},
		{"expired and wrong audience", oidctest.Sign(rsa1, "", is.Claims("u-1", map[string]any{"exp": now.Add(-2 * time.Minute).Unix(), "aud": "other"})), db.EUNAUTHORIZED},
		{"wrong audience", oidctest.Sign(rsa1, "", is.Claims("u-1", map[string]any{"aud": "someone-else"})), db.EUNAUTHORIZED},
		{"wrong issuer", oidctest.Sign(rsa1, "", is.Claims("u-1", map[string]any{"iss": "https://evil.example.com"})), db.EUNAUTHORIZED},
		{"other provider's key under a known kid", oidctest.Sign(stranger.Key("rsa-1"), "", is.Claims("u-1", nil)), db.EUNAUTHORIZED},
		{"unknown kid", oidctest.Sign(stranger.Key("rsa-1"), "no-such-key", is.Claims("u-1", nil)), db.EUNAUTHORIZED},
		{"alg none", oidctest.Unsigned(is.Claims("u-1", nil)), db.EUNAUTHORIZED},
		{"tampered payload", tampered, db.EUNAUTHORIZED},
		{"tampered signature", badSig, db.EUNAUTHORIZED},
		{"HS256 with the public key as secret (PEM)", oidctest.SignHS256(pemPub, "rsa-1", is.Claims("u-1", nil)), db.EUNAUTHORIZED},
		{"HS256 with the public key as secret (DER)", oidctest.SignHS256(pub, "rsa-1", is.Claims("u-1", nil)), db.EUNAUTHORIZED},
		{"missing email", oidctest.Sign(rsa1, "", is.Claims("u-1", map[string]any{"email": nil})), db.EUNAUTHORIZED},
		{"unverified email", oidctest.Sign(rsa1, "", is.Claims("u-1", map[string]any{"email_verified": false})), db.EUNAUTHORIZED},
		{"no subject", oidctest.Sign(rsa1, "", is.Claims("", nil)), db.EUNAUTHORIZED},
		{"not a JWT", "eyJhbGciOiJSUzI1NiJ9.e30", db.EUNAUTHORIZED},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := v.Verify(ctx, c.raw)
			if p != nil {
				t.Errorf("principal %+v for a bad token", p)
			}
			wantCode(t, err, c.code)
		})
	}

	// The missing email is explained to the caller.
	_, err = v.Verify(ctx, oidctest.Sign(rsa1, "", is.Claims("u-1", map[string]any{"email": nil})))
	var ce *server.ClaimsError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, `"email" claim`) {
		t.Errorf("missing email: error %v, want a ClaimsError naming the claim", err)
	}

	// Within the clock skew an expired token still passes; HS256 and none
	// cannot even be configured.
	if _, err := v.Verify(ctx, oidctest.Sign(rsa1, "", is.Claims("u-1", map[string]any{"exp": now.Add(-30 * time.Second).Unix()}))); err != nil {
		t.Errorf("expired 30 s ago, skew 60 s: %v", err)
	}
	for _, alg := range []string{"none", "HS256"} {
		if _, err := NewVerifier(ctx, Settings{Issuer: is.URL, ClientID: "x", AllowedAlgs: []string{alg}}); err == nil {
			t.Errorf("allowed_algs [%s] accepted", alg)
		}
	}
	// An algorithm the config does not allow is refused even when signed
	// by a published key.
	rsOnly := newTestVerifier(t, is, clk, func(s *Settings) { s.AllowedAlgs = []string{"RS256"} })
	if _, err := rsOnly.Verify(ctx, oidctest.Sign(is.Key("ec-1"), "", is.Claims("u-1", nil))); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Errorf("ES256 with allowed_algs [RS256]: %v", err)
	}
}

// TestJWKSRefetchFloor sends 1,000 JWTs with random key ids over 10 seconds
// (of the verifier's clock) and counts the JWKS fetches on the issuer.
func TestJWKSRefetchFloor(t *testing.T) {
	is := oidctest.New(t)
	attacker := oidctest.New(t).Key("rsa-1")
	hammer := func(floor time.Duration) int64 {
		clk := newClock()
		v := newTestVerifier(t, is, clk, func(s *Settings) { s.MinJWKSRefresh = floor })
		ctx := context.Background()
		if _, err := v.Verify(ctx, oidctest.Sign(is.Key("rsa-1"), "", is.Claims("u", nil))); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Minute) // the floor allows the next fetch
		before := is.JWKSFetches()
		var wg sync.WaitGroup
		var accepted atomic.Int64
		for i := range 1000 {
			if i%100 == 99 {
				wg.Wait()
				clk.Add(time.Second)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				raw := oidctest.Sign(attacker, fmt.Sprintf("kid-%d", rand.Int64()), is.Claims("u", nil))
				if _, err := v.Verify(ctx, raw); err == nil {
					accepted.Add(1)
				} else if db.ErrorCode(err) != db.EUNAUTHORIZED {
					t.Errorf("random kid: %v", err)
				}
			}()
		}
		wg.Wait()
		if accepted.Load() != 0 {
			t.Fatalf("%d forged tokens accepted", accepted.Load())
		}
		return is.JWKSFetches() - before
	}
	if n := hammer(DefaultMinJWKSRefresh); n < 1 || n > 2 {
		t.Errorf("1,000 random key ids in 10 s caused %d JWKS fetches, want 1 (at most 2)", n)
	} else {
		t.Logf("1,000 random key ids in 10 s: %d JWKS fetch(es)", n)
	}
	// Without the floor (as with go-oidc's RemoteKeySet) the same traffic
	// fetches the key set again and again: the count above is meaningful.
	if n := hammer(time.Nanosecond); n < 10 {
		t.Errorf("without a floor: only %d fetches; the counter does not measure refetches", n)
	} else {
		t.Logf("without a floor: %d JWKS fetches", n)
	}
}

// TestKeyRotation: a new key id is fetched once the floor allows it.
func TestKeyRotation(t *testing.T) {
	is := oidctest.New(t)
	clk := newClock()
	v := newTestVerifier(t, is, clk, nil)
	ctx := context.Background()
	if _, err := v.Verify(ctx, oidctest.Sign(is.Key("rsa-1"), "", is.Claims("u", nil))); err != nil {
		t.Fatal(err)
	}
	// A random kid just triggered nothing yet; make one use the floor.
	clk.Add(DefaultMinJWKSRefresh)
	_, _ = v.Verify(ctx, oidctest.Sign(is.Key("rsa-1"), "bogus", is.Claims("u", nil)))
	fetches := is.JWKSFetches()

	k2 := is.AddKey("rsa-2")
	tok := oidctest.Sign(k2, "", is.Claims("u", nil))
	if _, err := v.Verify(ctx, tok); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Fatalf("new key within the floor: %v, want unauthorized", err)
	}
	if is.JWKSFetches() != fetches {
		t.Fatalf("fetched within the floor")
	}
	clk.Add(DefaultMinJWKSRefresh)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("new key after the floor: %v", err)
	}
	if is.JWKSFetches() != fetches+1 {
		t.Errorf("fetches = %d, want %d", is.JWKSFetches(), fetches+1)
	}
	// A tampered token under a known kid never triggers a fetch.
	clk.Add(DefaultMinJWKSRefresh)
	parts := strings.Split(tok, ".")
	forged := parts[0] + "." + strings.Split(oidctest.Sign(k2, "", is.Claims("root", nil)), ".")[1] + "." + parts[2]
	if _, err := v.Verify(ctx, forged); db.ErrorCode(err) != db.EUNAUTHORIZED {
		t.Fatalf("forged: %v", err)
	}
	if is.JWKSFetches() != fetches+1 {
		t.Errorf("a bad signature under a known kid fetched the JWKS")
	}
}

func TestProviderOutage(t *testing.T) {
	is := oidctest.New(t)
	clk := newClock()
	var logs bytes.Buffer
	v := newTestVerifier(t, is, clk, func(s *Settings) { s.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	ctx := context.Background()
	tok := oidctest.Sign(is.Key("rsa-1"), "", is.Claims("u", nil))

	is.SetDown(true)
	_, err := v.Verify(ctx, tok)
	wantCode(t, err, db.EUNAVAILABLE)
	if msg := db.ErrorMessage(err); !strings.HasPrefix(msg, "OIDC provider "+is.URL+" unreachable: ") {
		t.Errorf("message %q", msg)
	}
	if !strings.Contains(logs.String(), "OIDC provider unreachable") {
		t.Errorf("outage not logged: %s", logs.String())
	}
	// Retried lazily, at most once per DiscoveryRetry.
	n := is.DiscoveryFetches()
	for range 20 {
		_, _ = v.Verify(ctx, tok)
	}
	if is.DiscoveryFetches() != n {
		t.Errorf("discovery retried %d times within the retry floor", is.DiscoveryFetches()-n)
	}
	is.SetDown(false)
	clk.Add(DefaultDiscoveryRetry)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("after the outage: %v", err)
	}

	// JWKS down while keys are cached: known keys keep working; an unknown
	// kid is unauthorized, not unavailable.
	is.SetDown(true)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Errorf("cached keys during an outage: %v", err)
	}
	clk.Add(time.Hour + time.Minute) // keys stale: refresh fails, cached keys still serve
	if _, err := v.Verify(ctx, oidctest.Sign(is.Key("rsa-1"), "", is.Claims("u", map[string]any{"exp": clk.Now().Add(time.Hour).Unix()}))); err != nil {
		t.Errorf("stale keys during an outage: %v", err)
	}

	// Fresh verifier, discovery fine but JWKS down: unavailable.
	is.SetDown(false)
	v2 := newTestVerifier(t, is, clk, nil)
	if err := v2.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	is.SetDown(true)
	_, err = v2.Verify(ctx, oidctest.Sign(is.Key("rsa-1"), "", is.Claims("u", map[string]any{"exp": clk.Now().Add(time.Hour).Unix()})))
	wantCode(t, err, db.EUNAVAILABLE)
}

func TestMap(t *testing.T) {
	s := Settings{
		AdminGroups: []string{"sre-admins"},
		TeamGroups:  map[string]string{"payments-eng": "payments", "payments-viewers": "payments", "search-eng": "search", "a-search": "search"},
		WriteGroups: []string{"payments-eng", "writers"},
	}
	cases := []struct {
		name   string
		claims map[string]any
		team   string
		perms  []string
	}{
		{"admin", map[string]any{"groups": []any{"sre-admins", "search-eng"}}, "", []string{"admin:read", "admin:write", "team:read", "team:write"}},
		{"team reader", map[string]any{"groups": []any{"payments-viewers"}}, "payments", []string{"team:read"}},
		{"team writer", map[string]any{"groups": []any{"payments-viewers", "payments-eng"}}, "payments", []string{"team:read", "team:write"}},
		{"single string group", map[string]any{"groups": "search-eng"}, "search", []string{"team:read"}},
		{"multi-team: first group by name", map[string]any{"groups": []any{"search-eng", "payments-viewers"}}, "payments", []string{"team:read"}},
		{"write group of another team grants nothing", map[string]any{"groups": []any{"a-search", "payments-eng"}}, "search", []string{"team:read"}},
		{"generic writers group", map[string]any{"groups": []any{"search-eng", "writers"}}, "search", []string{"team:read", "team:write"}},
		{"no mapped group", map[string]any{"groups": []any{"everyone"}}, "", []string{}},
		{"no groups claim", map[string]any{}, "", []string{}},
	}
	for _, c := range cases {
		c.claims["email"] = "x@example.com"
		p, err := Map(s, "sub", c.claims)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Team != c.team || !slices.Equal(p.Permissions, c.perms) {
			t.Errorf("%s: team %q perms %v, want %q %v", c.name, p.Team, p.Permissions, c.team, c.perms)
		}
	}
	// Custom and nested claims.
	s.EmailClaim, s.GroupsClaim = "upn", "realm_access.roles"
	p, err := Map(s, "sub", map[string]any{"upn": "bob@corp.example", "realm_access": map[string]any{"roles": []any{"sre-admins"}}})
	if err != nil || p.Email != "bob@corp.example" || !p.Has(db.PermAdminWrite) {
		t.Errorf("nested claims: %+v, %v", p, err)
	}
	s.GroupsClaim = "https://rootcause.example.com/groups"
	p, err = Map(s, "sub", map[string]any{"upn": "bob@corp.example", "https://rootcause.example.com/groups": []any{"search-eng"}})
	if err != nil || p.Team != "search" {
		t.Errorf("namespaced claim: %+v, %v", p, err)
	}
}

func TestDynamic(t *testing.T) {
	is := oidctest.New(t)
	var mu sync.Mutex
	doc := map[string]any{}
	set := func(d map[string]any) { mu.Lock(); doc = d; mu.Unlock() }
	d := NewDynamic(DynamicOptions{
		Load: func(context.Context) (map[string]any, error) { mu.Lock(); defer mu.Unlock(); return doc, nil },
		Resolver: secretref.NewResolver(secretref.ResolverOptions{LookupEnv: func(n string) (string, bool) {
			return "s3cret", n == "OIDC_SECRET"
		}}),
		Base: Settings{Logger: quiet},
	})
	ctx := context.Background()
	tok := oidctest.Sign(is.Key("rsa-1"), "", is.Claims("u", map[string]any{"groups": []any{"ops"}}))

	_, err := d.Verify(ctx, tok)
	wantCode(t, err, db.EUNAUTHORIZED) // not configured

	set(map[string]any{"oidc": map[string]any{"issuer": is.URL, "client_id": is.ClientID, "client_secret": "env:OIDC_SECRET"}})
	p, err := d.Verify(ctx, tok)
	if err != nil || len(p.Permissions) != 0 {
		t.Fatalf("configured, no groups mapped: %+v %v", p, err)
	}
	v1, _ := d.Current(ctx)

	set(map[string]any{"oidc": map[string]any{"issuer": is.URL, "client_id": is.ClientID, "admin_groups": []any{"ops"}}})
	p, err = d.Verify(ctx, tok)
	if err != nil || !p.IsAdmin() {
		t.Fatalf("after admin_groups added: %+v %v", p, err)
	}
	v2, _ := d.Current(ctx)
	if v1 == v2 {
		t.Error("verifier not rebuilt after a config change")
	}
	if v3, _ := d.Current(ctx); v3 != v2 {
		t.Error("verifier rebuilt without a config change")
	}

	set(map[string]any{"oidc": map[string]any{"issuer": is.URL, "client_id": "another-client"}})
	_, err = d.Verify(ctx, tok)
	wantCode(t, err, db.EUNAUTHORIZED) // audience no longer matches

	set(map[string]any{})
	_, err = d.Verify(ctx, tok)
	wantCode(t, err, db.EUNAUTHORIZED)
	if _, err := d.AuthCodeURL(ctx, "http://127.0.0.1/callback", "s", "n", "v"); db.ErrorCode(err) != db.ENOTFOUND {
		t.Errorf("login without OIDC: %v", err)
	}
}

func TestNewHTTPClientHasTimeouts(t *testing.T) {
	c := NewHTTPClient()
	if c.Timeout <= 0 || c.Timeout > 30*time.Second {
		t.Errorf("timeout %v", c.Timeout)
	}
}

// TestExchange runs the code flow against the test issuer, which checks
// the client secret and the PKCE verifier.
func TestExchange(t *testing.T) {
	is := oidctest.New(t)
	is.SetUser(map[string]any{"sub": "carol", "email": "carol@example.com", "groups": []any{"search-eng"}})
	ctx := context.Background()
	const redirect = "http://127.0.0.1:9/callback"
	authorize := func(v *Verifier, pkce, nonce string) string {
		t.Helper()
		u, err := v.AuthCodeURL(ctx, redirect, "state-1", nonce, pkce)
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || loc.Query().Get("code") == "" || loc.Query().Get("state") != "state-1" {
			t.Fatalf("authorize answered %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		return loc.Query().Get("code")
	}
	secret := func(s string) func(*Settings) {
		return func(st *Settings) { st.ClientSecret = func(context.Context) (string, error) { return s, nil } }
	}
	v := newTestVerifier(t, is, nil, secret(is.ClientSecret))
	pkce := oauth2.GenerateVerifier()

	code := authorize(v, pkce, "nonce-1")
	_, err := v.Exchange(ctx, redirect, code, oauth2.GenerateVerifier(), "nonce-1")
	wantCode(t, err, db.EUNAUTHORIZED) // wrong PKCE verifier

	code = authorize(v, pkce, "nonce-1")
	_, err = v.Exchange(ctx, redirect, code, pkce, "nonce-2")
	wantCode(t, err, db.EUNAUTHORIZED) // nonce of another sign-in

	bad := newTestVerifier(t, is, nil, secret("wrong"))
	code = authorize(bad, pkce, "nonce-1")
	_, err = bad.Exchange(ctx, redirect, code, pkce, "nonce-1")
	wantCode(t, err, db.EUNAUTHORIZED) // client secret refused

	code = authorize(v, pkce, "nonce-1")
	res, err := v.Exchange(ctx, redirect, code, pkce, "nonce-1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Principal.ID != "oidc:carol" || res.Principal.Team != "search" || res.IDToken == "" || time.Until(res.Expiry) < 50*time.Minute {
		t.Errorf("login result %+v, principal %+v", res, res.Principal)
	}
	_, err = v.Exchange(ctx, redirect, code, pkce, "nonce-1")
	wantCode(t, err, db.EUNAUTHORIZED) // a code is single-use
}
