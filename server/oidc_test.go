package server_test

// End-to-end OIDC tests: a real OIDC provider on loopback (oidctest), the
// real verifier (oidcauth.Dynamic reading the org root's config from the
// store), and the server over HTTP.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/oidcauth"
	"github.com/rootcause/rootcause/oidcauth/oidctest"
	"github.com/rootcause/rootcause/secretref"
	"github.com/rootcause/rootcause/server"
)

type oidcEnv struct {
	t      *testing.T
	store  *db.DB
	is     *oidctest.Issuer
	url    string
	team   string // a payments team token with write
	teamID string
}

func newOIDCEnv(t *testing.T, mod func(*server.Config)) *oidcEnv {
	t.Helper()
	ctx := context.Background()
	store, err := db.Open(filepath.Join(t.TempDir(), db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if _, err := store.EnsureOrg(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []db.Node{{Name: "payments", Parent: "acme", Kind: db.KindTeam}, {Name: "search", Parent: "acme", Kind: db.KindTeam}} {
		if _, err := store.CreateNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	is := oidctest.New(t)
	t.Setenv("TEST_OIDC_CLIENT_SECRET", is.ClientSecret)
	org := map[string]any{
		"oidc": map[string]any{
			"issuer": is.URL, "client_id": is.ClientID, "client_secret": "env:TEST_OIDC_CLIENT_SECRET",
			"admin_groups": []any{"sre-admins"},
			"team_groups":  map[string]any{"payments-eng": "payments", "payments-viewers": "payments", "search-eng": "search"},
			"write_groups": []any{"payments-eng"},
		},
		"approvers":     []any{"alice@example.com", "dave@example.com"},
		"feature_flags": map[string]any{"require_approval": true},
	}
	if _, err := store.PatchNodeConfig(ctx, "acme", org, db.Actor{Local: true, Name: "test"}, nil); err != nil {
		t.Fatal(err)
	}
	secret, tok, err := store.IssueToken(ctx, db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", Write: true, Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dyn := oidcauth.NewDynamic(oidcauth.DynamicOptions{
		Load: func(ctx context.Context) (map[string]any, error) {
			lin, err := store.ConfigLineage(ctx, "acme", true)
			if err != nil {
				return nil, err
			}
			return lin[0].Own, nil
		},
		Resolver: secretref.NewResolver(secretref.ResolverOptions{}),
		Base:     oidcauth.Settings{Logger: quiet},
	})
	cfg := server.Config{Nodes: store, Tokens: store, JWTVerifier: dyn, OIDCLogin: dyn, Logger: quiet,
		RateLimits: server.RateLimits{Read: -1, Write: -1, Run: -1}}
	if mod != nil {
		mod(&cfg)
	}
	ts := httptest.NewServer(server.New(cfg).Handler())
	t.Cleanup(ts.Close)
	return &oidcEnv{t: t, store: store, is: is, url: ts.URL, team: secret, teamID: tok.ID}
}

// token returns an ID token of the test issuer for sub with extra claims.
func (e *oidcEnv) token(sub string, extra map[string]any) string {
	return oidctest.Sign(e.is.Key("rsa-1"), "", e.is.Claims(sub, extra))
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (e *oidcEnv) do(c *http.Client, method, path, bearer, body string, hdr map[string]string) answer {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	_ = json.Unmarshal(b, &a.body)
	return a
}

func (a answer) code() string {
	e, _ := a.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (a answer) message() string {
	e, _ := a.body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func expect(t *testing.T, what string, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.code() != code {
		t.Fatalf("%s: %d %s, want %d %q", what, a.status, a.raw, status, code)
	}
}

func TestOIDCAuthMe(t *testing.T) {
	e := newOIDCEnv(t, nil)
	cases := []struct {
		name     string
		claims   map[string]any
		canWrite bool
		perms    string
		teams    string
	}{
		{"team writer", map[string]any{"email": "carol@example.com", "name": "Carol", "groups": []any{"payments-eng"}}, true, `["team:read","team:write"]`, `["payments"]`},
		{"team reader", map[string]any{"email": "erin@example.com", "groups": []any{"search-eng"}}, false, `["team:read"]`, `["search"]`},
		{"admin", map[string]any{"email": "alice@example.com", "groups": []any{"sre-admins", "payments-eng"}}, true, `["admin:read","admin:write","team:read","team:write"]`, `null`},
		{"no mapped group", map[string]any{"email": "zed@example.com", "groups": []any{"everyone"}}, false, `[]`, `null`},
	}
	for _, c := range cases {
		a := e.do(nil, "GET", "/api/v1/auth/me", e.token("sub-"+c.name, c.claims), "", nil)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", c.name, a.status, a.raw)
		}
		b := a.body
		perms, _ := json.Marshal(b["permissions"])
		teams, _ := json.Marshal(b["teams"])
		if b["role"] != "user" || b["auth_kind"] != "oidc_jwt" || b["org_id"] != "acme" || b["subject"] != "sub-"+c.name ||
			b["email"] != c.claims["email"] || b["team_node_id"] != nil || b["can_write"] != c.canWrite ||
			string(perms) != c.perms || string(teams) != c.teams {
			t.Errorf("%s: /auth/me = %s", c.name, a.raw)
		}
		if _, ok := b["team_node_id"]; !ok {
			t.Errorf("%s: team_node_id absent, want null", c.name)
		}
	}

	// The team writer acts on its team; the user without groups is 403
	// everywhere but /auth/me.
	writer := e.token("w", map[string]any{"groups": []any{"payments-eng"}})
	if a := e.do(nil, "GET", "/api/v1/config/me/effective", writer, "", nil); a.status != 200 {
		t.Errorf("team writer effective config: %d %s", a.status, a.raw)
	}
	nobody := e.token("n", map[string]any{"groups": []any{"everyone"}})
	expect(t, "no group: effective config", e.do(nil, "GET", "/api/v1/config/me/effective", nobody, "", nil), 403, "forbidden")
	expect(t, "no group: admin route", e.do(nil, "GET", "/api/v1/admin/nodes", nobody, "", nil), 403, "forbidden")
	reader := e.token("r", map[string]any{"groups": []any{"search-eng"}})
	expect(t, "reader writes", e.do(nil, "PUT", "/api/v1/config/me", reader, `{"slack_channel":"#x"}`, nil), 403, "forbidden")
	expect(t, "team user on admin route", e.do(nil, "GET", "/api/v1/admin/nodes", writer, "", nil), 403, "forbidden")
	admin := e.token("a", map[string]any{"groups": []any{"sre-admins"}})
	if a := e.do(nil, "GET", "/api/v1/admin/nodes", admin, "", nil); a.status != 200 {
		t.Errorf("OIDC admin lists nodes: %d %s", a.status, a.raw)
	}
}

func TestOIDCBadTokensOverHTTP(t *testing.T) {
	e := newOIDCEnv(t, nil)
	rsa1 := e.is.Key("rsa-1")
	other := oidctest.New(t).Key("rsa-1")
	now := time.Now()
	cases := []struct{ name, raw, code string }{
		{"expired", oidctest.Sign(rsa1, "", e.is.Claims("u", map[string]any{"exp": now.Add(-5 * time.Minute).Unix()})), "token_expired"},
		{"wrong audience", oidctest.Sign(rsa1, "", e.is.Claims("u", map[string]any{"aud": "other-app"})), "unauthorized"},
		{"wrong issuer", oidctest.Sign(rsa1, "", e.is.Claims("u", map[string]any{"iss": "https://login.example.org"})), "unauthorized"},
		{"unknown kid", oidctest.Sign(other, "rotated-away", e.is.Claims("u", nil)), "unauthorized"},
		{"alg none", oidctest.Unsigned(e.is.Claims("u", nil)), "unauthorized"},
		{"signed by another provider", oidctest.Sign(other, "rsa-1", e.is.Claims("u", nil)), "unauthorized"},
		{"missing email", oidctest.Sign(rsa1, "", e.is.Claims("u", map[string]any{"email": nil})), "unauthorized"},
	}
	for _, c := range cases {
		a := e.do(nil, "GET", "/api/v1/auth/me", c.raw, "", nil)
		expect(t, c.name, a, 401, c.code)
		if c.name == "missing email" && !strings.Contains(a.message(), "email") {
			t.Errorf("missing email: message %q does not say what is missing", a.message())
		}
		if c.code == "unauthorized" && c.name != "missing email" && a.message() != "invalid or expired token" {
			t.Errorf("%s: message %q", c.name, a.message())
		}
	}
}

// TestOIDCRateLimitBySubject: two tokens of one subject share a bucket; a
// different subject has its own.
func TestOIDCRateLimitBySubject(t *testing.T) {
	e := newOIDCEnv(t, func(c *server.Config) { c.RateLimits = server.RateLimits{Read: 3, Write: -1, Run: -1} })
	a1 := e.token("alice", map[string]any{"jti": "1"})
	a2 := e.token("alice", map[string]any{"jti": "2", "iat": time.Now().Add(-time.Minute).Unix()})
	for i, tok := range []string{a1, a2, a1} {
		a := e.do(nil, "GET", "/api/v1/auth/me", tok, "", nil)
		if a.status != 200 || a.header.Get("X-RateLimit-Limit") != "3" {
			t.Fatalf("request %d: %d %s (limit header %q)", i, a.status, a.raw, a.header.Get("X-RateLimit-Limit"))
		}
	}
	expect(t, "fourth read of alice with a fresh token", e.do(nil, "GET", "/api/v1/auth/me", a2, "", nil), 429, "rate_limited")
	if a := e.do(nil, "GET", "/api/v1/auth/me", e.token("bob", nil), "", nil); a.status != 200 {
		t.Errorf("another subject is limited too: %d %s", a.status, a.raw)
	}
}

// TestOIDCApproval: a team's change waits for approval; an OIDC admin
// listed in approvers approves it; the audit shows the email. An admin not
// listed cannot, and nobody approves their own request.
func TestOIDCApproval(t *testing.T) {
	e := newOIDCEnv(t, nil)
	cr := e.do(nil, "PUT", "/api/v1/config/me", e.team, `{"slack_channel":"#payments-oncall"}`, nil)
	if cr.status != 202 {
		t.Fatalf("team PUT under approval: %d %s", cr.status, cr.raw)
	}
	id, _ := cr.body["change_request_id"].(string)
	approve := "/api/v1/admin/change-requests/" + id + "/approve"

	bob := e.token("bob", map[string]any{"email": "bob@example.com", "groups": []any{"sre-admins"}})
	expect(t, "admin not in approvers", e.do(nil, "POST", approve, bob, "", nil), 403, "forbidden")
	alice := e.token("alice", map[string]any{"email": "Alice@Example.com", "name": "Alice", "groups": []any{"sre-admins"}})
	a := e.do(nil, "POST", approve, alice, "", nil)
	if a.status != 200 || a.body["status"] != "applied" {
		t.Fatalf("approval by alice: %d %s", a.status, a.raw)
	}
	hist := e.do(nil, "GET", "/api/v1/admin/nodes/payments/config/audit", alice, "", nil)
	if hist.status != 200 {
		t.Fatalf("audit: %d %s", hist.status, hist.raw)
	}
	entries, _ := hist.body["history"].([]any)
	if len(entries) == 0 {
		t.Fatalf("no audit entries: %s", hist.raw)
	}
	first, _ := entries[0].(map[string]any)
	if first["event"] != "applied" || first["changed_by"] != "Alice@Example.com" || first["change_request_id"] != id {
		t.Errorf("audit entry %v, want applied by Alice@Example.com", first)
	}

	// Dave writes for payments as a team member, then signs in again with
	// admin groups: still the same person, so he cannot approve his change.
	dave := e.token("dave", map[string]any{"email": "dave@example.com", "groups": []any{"payments-eng"}})
	cr2 := e.do(nil, "PUT", "/api/v1/config/me", dave, `{"slack_channel":"#dave"}`, nil)
	if cr2.status != 202 || cr2.body["requested_by"] != "dave@example.com" {
		t.Fatalf("dave's PUT: %d %s", cr2.status, cr2.raw)
	}
	daveAdmin := e.token("dave", map[string]any{"email": "dave@example.com", "groups": []any{"sre-admins"}})
	expect(t, "self-approval", e.do(nil, "POST", "/api/v1/admin/change-requests/"+cr2.body["change_request_id"].(string)+"/approve", daveAdmin, "", nil), 403, "forbidden")
}

// noRedirect returns a client with a cookie jar that does not follow
// redirects.
func noRedirect(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func cookieValue(c *http.Client, rawURL, name string) string {
	u, _ := url.Parse(rawURL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// signIn runs /login -> provider -> /callback with c and returns the
// callback answer.
func (e *oidcEnv) signIn(c *http.Client, returnTo string) answer {
	e.t.Helper()
	login := e.do(c, "GET", "/login?return_to="+url.QueryEscape(returnTo), "", "", nil)
	if login.status != http.StatusFound {
		e.t.Fatalf("/login: %d %s", login.status, login.raw)
	}
	authURL, err := url.Parse(login.header.Get("Location"))
	if err != nil || !strings.HasPrefix(authURL.String(), e.is.URL+"/authorize?") {
		e.t.Fatalf("/login redirects to %q", login.header.Get("Location"))
	}
	q := authURL.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" ||
		q.Get("redirect_uri") != e.url+"/callback" || !strings.Contains(q.Get("scope"), "openid") {
		e.t.Fatalf("authorization request %v", q)
	}
	resp, err := c.Get(authURL.String())
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	cb := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(cb, e.url+"/callback?") {
		e.t.Fatalf("provider answered %d, Location %q", resp.StatusCode, cb)
	}
	return e.do(c, "GET", strings.TrimPrefix(cb, e.url), "", "", nil)
}

func TestOIDCLoginFlow(t *testing.T) {
	e := newOIDCEnv(t, nil)
	e.is.SetUser(map[string]any{"sub": "carol", "email": "carol@example.com", "name": "Carol", "groups": []any{"payments-eng"}})
	c := noRedirect(t)

	cb := e.signIn(c, "/console/teams")
	if cb.status != 200 || !strings.Contains(cb.raw, `url=/console/teams`) {
		t.Fatalf("/callback: %d %s", cb.status, cb.raw)
	}
	var session, csrf *http.Cookie
	for _, ck := range (&http.Response{Header: cb.header}).Cookies() {
		switch ck.Name {
		case "rootcause_session":
			session = ck
		case "rootcause_csrf":
			csrf = ck
		}
	}
	if session == nil || csrf == nil {
		t.Fatalf("callback cookies: %v", cb.header.Values("Set-Cookie"))
	}
	if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.MaxAge <= 0 || session.MaxAge > 3600 {
		t.Errorf("session cookie %+v", session)
	}
	if csrf.HttpOnly || csrf.SameSite != http.SameSiteStrictMode {
		t.Errorf("csrf cookie %+v", csrf)
	}
	if strings.Contains(session.Value, ".") || session.Value == e.is.LastIDToken() {
		t.Errorf("the session cookie carries the ID token instead of a session id")
	}

	// The session authenticates API calls.
	me := e.do(c, "GET", "/api/v1/auth/me", "", "", nil)
	if me.status != 200 || me.body["email"] != "carol@example.com" || me.body["subject"] != "carol" || me.body["can_write"] != true {
		t.Fatalf("/auth/me by session: %d %s", me.status, me.raw)
	}
	// State-changing requests need the CSRF header.
	body := `{"slack_channel":"#carol"}`
	expect(t, "PUT without CSRF header", e.do(c, "PUT", "/api/v1/config/me", "", body, nil), 403, "forbidden")
	expect(t, "PUT with a wrong CSRF header", e.do(c, "PUT", "/api/v1/config/me", "", body, map[string]string{"X-CSRF-Token": "guess"}), 403, "forbidden")
	expect(t, "cross-origin PUT", e.do(c, "PUT", "/api/v1/config/me", "", body,
		map[string]string{"X-CSRF-Token": csrf.Value, "Origin": "https://evil.example.com"}), 403, "forbidden")
	ok := e.do(c, "PUT", "/api/v1/config/me", "", body, map[string]string{"X-CSRF-Token": cookieValue(c, e.url, "rootcause_csrf"), "Origin": e.url})
	if ok.status != 202 || ok.body["requested_by"] != "carol@example.com" {
		t.Fatalf("PUT with CSRF header: %d %s", ok.status, ok.raw)
	}

	// Logout needs the CSRF header too, then the session is gone.
	expect(t, "logout without CSRF", e.do(c, "POST", "/logout", "", "", nil), 403, "forbidden")
	if a := e.do(c, "POST", "/logout", "", "", map[string]string{"X-CSRF-Token": csrf.Value}); a.status != 204 {
		t.Fatalf("logout: %d %s", a.status, a.raw)
	}
	// Even a client that kept the cookie is signed out.
	u, _ := url.Parse(e.url)
	c.Jar.SetCookies(u, []*http.Cookie{session})
	expect(t, "after logout", e.do(c, "GET", "/api/v1/auth/me", "", "", nil), 401, "unauthorized")
}

func TestOIDCCallbackRefusals(t *testing.T) {
	e := newOIDCEnv(t, nil)
	e.is.SetUser(map[string]any{"sub": "carol", "email": "carol@example.com"})

	// No login cookie (a forged or cross-browser callback).
	expect(t, "callback without login cookie", e.do(nil, "GET", "/callback?code=x&state=y", "", "", nil), 401, "unauthorized")

	// Tampered login cookie.
	c := noRedirect(t)
	login := e.do(c, "GET", "/login", "", "", nil)
	authURL, _ := url.Parse(login.header.Get("Location"))
	resp, err := c.Get(authURL.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cb := strings.TrimPrefix(resp.Header.Get("Location"), e.url)
	u, _ := url.Parse(e.url)
	orig := cookieValue(c, e.url, "rootcause_login")
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "rootcause_login", Value: "x" + orig, Path: "/"}})
	expect(t, "tampered login cookie", e.do(c, "GET", cb, "", "", nil), 401, "unauthorized")

	// Wrong state with a valid cookie.
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "rootcause_login", Value: orig, Path: "/"}})
	bad := strings.Replace(cb, "state=", "state=x", 1)
	expect(t, "wrong state", e.do(c, "GET", bad, "", "", nil), 401, "unauthorized")

	// The right cookie and state: the code is redeemed once.
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "rootcause_login", Value: orig, Path: "/"}})
	if a := e.do(c, "GET", cb, "", "", nil); a.status != 200 {
		t.Fatalf("callback: %d %s", a.status, a.raw)
	}
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "rootcause_login", Value: orig, Path: "/"}})
	expect(t, "code replayed", e.do(c, "GET", cb, "", "", nil), 401, "unauthorized")

	// The provider's own refusal.
	expect(t, "provider error", e.do(nil, "GET", "/callback?error=access_denied&state=s", "", "", nil), 401, "unauthorized")

	// An open redirect through return_to is refused.
	e2 := noRedirect(t)
	cbAnswer := e.signIn(e2, "//evil.example.com/")
	if cbAnswer.status != 200 || !strings.Contains(cbAnswer.raw, "url=/\"") {
		t.Errorf("return_to //evil: %s", cbAnswer.raw)
	}
}

// TestOIDCLoginPublicURL: behind https, cookies are Secure with the
// __Host- prefix and the redirect URI is the public one.
func TestOIDCLoginPublicURL(t *testing.T) {
	e := newOIDCEnv(t, func(c *server.Config) { c.PublicURL = "https://rootcause.example.com/" })
	a := e.do(noRedirect(t), "GET", "/login", "", "", nil)
	if a.status != http.StatusFound {
		t.Fatalf("/login: %d %s", a.status, a.raw)
	}
	loc, _ := url.Parse(a.header.Get("Location"))
	if got := loc.Query().Get("redirect_uri"); got != "https://rootcause.example.com/callback" {
		t.Errorf("redirect_uri %q", got)
	}
	cookies := (&http.Response{Header: a.header}).Cookies()
	if len(cookies) != 1 || cookies[0].Name != "__Host-rootcause_login" || !cookies[0].Secure || !cookies[0].HttpOnly ||
		cookies[0].SameSite != http.SameSiteLaxMode || cookies[0].Path != "/" {
		t.Errorf("login cookie %+v", cookies)
	}
}

// TestOIDCProviderDown: the server runs; OIDC requests say which provider
// is unreachable; tokens keep working.
func TestOIDCProviderDown(t *testing.T) {
	e := newOIDCEnv(t, nil)
	e.is.SetDown(true)
	a := e.do(nil, "GET", "/api/v1/auth/me", e.token("u", nil), "", nil)
	expect(t, "provider down", a, 503, "unavailable")
	if !strings.Contains(a.message(), "OIDC provider "+e.is.URL+" unreachable") {
		t.Errorf("message %q", a.message())
	}
	expect(t, "login while down", e.do(noRedirect(t), "GET", "/login", "", "", nil), 503, "unavailable")
	if a := e.do(nil, "GET", "/api/v1/auth/me", e.team, "", nil); a.status != 200 {
		t.Errorf("team token while the provider is down: %d %s", a.status, a.raw)
	}
}
