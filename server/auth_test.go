package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
)

func TestAuthMatrix(t *testing.T) {
	h := newHarness(t)
	revoked := h.issue("revoked", db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments"})
	if err := h.db.RevokeToken(context.Background(), h.ids["revoked"]); err != nil {
		t.Fatal(err)
	}
	expiring := h.issue("expiring", db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments", TTL: time.Hour})
	h.clock.Advance(2 * time.Hour)
	id, _, _ := strings.Cut(h.tokens["payments-read"], ".")
	expID, _, _ := strings.Cut(expiring, ".")

	tests := []struct {
		name   string
		header string // Authorization; "-" for none
		code   string
	}{
		{"NoHeader", "-", "unauthorized"},
		{"Empty", "", "unauthorized"},
		{"BearerAlone", "Bearer", "unauthorized"},
		{"BearerSpace", "Bearer ", "unauthorized"},
		{"BasicScheme", "Basic " + h.tokens["admin"], "unauthorized"},
		{"Garbage", "Bearer garbage", "unauthorized"},
		{"TokenWithoutScheme", h.tokens["admin"], "unauthorized"},
		{"AdminWrongSecret", "Bearer admin.wrong", "unauthorized"},
		{"AdminEmptySecret", "Bearer admin.", "unauthorized"},
		{"TeamWrongSecret", "Bearer " + id + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "unauthorized"},
		{"TeamSecretAsAdmin", "Bearer admin." + secretPart(h.tokens["payments-read"]), "unauthorized"},
		{"AdminSecretAsTeam", "Bearer " + id + "." + secretPart(h.tokens["admin"]), "unauthorized"},
		{"Revoked", "Bearer " + revoked, "unauthorized"},
		{"Expired", "Bearer " + expiring, "token_expired"},
		{"ExpiredWrongSecret", "Bearer " + expID + ".wrongwrongwrong", "unauthorized"},
		{"ControlChars", "Bearer admin.abc\tdef", "unauthorized"},
		{"JWTWithoutVerifier", "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			tok := "raw:" + tt.header
			if tt.header == "-" {
				tok = ""
			}
			r := h.do(req{path: "/api/v1/auth/me", token: tok, header: hdr})
			e := expectError(t, r, 401, tt.code)
			want := "invalid or expired token"
			if tt.code == "token_expired" {
				want = "token expired"
			}
			if e["message"] != want {
				t.Errorf("message = %v, want %q", e["message"], want)
			}
			if r.header.Get("X-RateLimit-Limit") != "" {
				t.Error("unauthenticated answer carries rate-limit headers")
			}
		})
	}
	t.Run("SchemeCaseInsensitive", func(t *testing.T) {
		r := h.do(req{path: "/api/v1/auth/me", token: "raw:bearer " + h.tokens["admin"]})
		if r.status != 200 {
			t.Errorf("lower-case scheme: %d %s", r.status, r.body)
		}
	})
}

// TestAuthRequiredEverywhere walks every registered route: none but the
// health probes answers without a token (fail closed).
func TestAuthRequiredEverywhere(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RateLimits.AuthFailuresPerIP = -1 })
	for _, rt := range h.srv.Routes() {
		path := fillParams(rt.Path)
		r := h.do(req{method: rt.Method, path: path, body: "{}"})
		if rt.Public {
			if r.status != 200 {
				t.Errorf("%s %s: public route answered %d", rt.Method, path, r.status)
			}
			continue
		}
		expectError(t, r, 401, "unauthorized")
	}
}

// fillParams replaces httprouter wildcards with a sample value.
func fillParams(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
			parts[i] = "payments"
		}
	}
	return strings.Join(parts, "/")
}

// TestPermissionMatrix checks every route against every kind of token: team
// tokens never reach admin routes, read-only tokens never write.
func TestPermissionMatrix(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RateLimits = RateLimits{Read: -1, Write: -1, Run: -1} })
	for _, rt := range h.srv.Routes() {
		if rt.Public {
			continue
		}
		for _, tok := range []string{"payments-read", "payments-write", "search-write", "admin"} {
			p := &Principal{Team: "x"}
			switch tok {
			case "admin":
				p = &Principal{Permissions: []string{db.PermAdminRead, db.PermAdminWrite, db.PermTeamRead, db.PermTeamWrite}}
			case "payments-read":
				p.Permissions = []string{db.PermTeamRead}
			default:
				p.Permissions = []string{db.PermTeamRead, db.PermTeamWrite}
			}
			allowed := rt.Permission == "" || p.Has(rt.Permission)
			r := h.do(req{method: rt.Method, path: fillParams(rt.Path), token: tok, body: "{}"})
			if !allowed {
				expectError(t, r, 403, "forbidden")
				continue
			}
			if r.status == 401 || r.status == 403 {
				t.Errorf("%s %s with %s: %d %s, want access", rt.Method, rt.Path, tok, r.status, r.body)
			}
		}
	}
	// The rule the matrix relies on: no team token holds an admin
	// permission, and write needs team:write.
	for _, rt := range h.srv.Routes() {
		if strings.HasPrefix(rt.Path, "/api/v1/admin/") && rt.Permission != db.PermAdminRead && rt.Permission != db.PermAdminWrite {
			t.Errorf("%s %s: admin route with permission %q", rt.Method, rt.Path, rt.Permission)
		}
	}
}

func TestPrincipalHas(t *testing.T) {
	tests := []struct {
		have []string
		perm string
		want bool
	}{
		{[]string{db.PermTeamRead}, db.PermTeamRead, true},
		{[]string{db.PermTeamRead}, db.PermTeamWrite, false},
		{[]string{db.PermTeamWrite}, db.PermTeamRead, true},
		{[]string{db.PermTeamRead, db.PermTeamWrite}, db.PermAdminRead, false},
		{[]string{db.PermAdminRead}, db.PermAdminWrite, false},
		{[]string{db.PermAdminWrite}, db.PermAdminRead, true},
		{[]string{db.PermAdminRead}, db.PermTeamRead, true},
		{[]string{db.PermAdminRead}, db.PermTeamWrite, false},
		{nil, db.PermTeamRead, false},
		{[]string{"custom"}, "custom", true},
	}
	for _, tt := range tests {
		p := &Principal{Permissions: tt.have}
		if got := p.Has(tt.perm); got != tt.want {
			t.Errorf("%v.Has(%s) = %v, want %v", tt.have, tt.perm, got, tt.want)
		}
	}
	if (*Principal)(nil).Has(db.PermTeamRead) {
		t.Error("nil principal has a permission")
	}
}

func TestTeamScope(t *testing.T) {
	team := &Principal{ID: "t", Kind: KindTeamToken, Team: "payments", Permissions: []string{db.PermTeamRead}}
	admin := &Principal{ID: "a", Kind: KindAdminToken, Permissions: []string{db.PermAdminRead}}
	user := &Principal{ID: "u", Kind: KindOIDC, Permissions: []string{db.PermTeamRead}}
	tests := []struct {
		name      string
		p         *Principal
		requested string
		want      string
		code      string
	}{
		{"TeamOwn", team, "", "payments", ""},
		{"TeamOwnNamed", team, "payments", "payments", ""},
		{"TeamOther", team, "search", "", db.EFORBIDDEN},
		{"AdminNamed", admin, "search", "search", ""},
		{"AdminUnnamed", admin, "", "", db.EINVALID},
		{"UserWithoutTeam", user, "search", "", db.EFORBIDDEN},
		{"Nil", nil, "search", "", db.EUNAUTHORIZED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := teamScope(tt.p, tt.requested)
			if got != tt.want || db.ErrorCode(err) != tt.code {
				t.Errorf("teamScope = %q, %v; want %q, %q", got, err, tt.want, tt.code)
			}
		})
	}
	if got, err := requireTeam(team); got != "payments" || err != nil {
		t.Errorf("requireTeam(team) = %q, %v", got, err)
	}
	for _, p := range []*Principal{admin, user, nil} {
		if _, err := requireTeam(p); err == nil {
			t.Errorf("requireTeam(%v) succeeded", p)
		}
	}
}

func TestAuthMe(t *testing.T) {
	h := newHarness(t)
	for _, tok := range []string{"payments-read", "payments-write", "admin"} {
		t.Run(tok, func(t *testing.T) {
			r := h.do(req{path: "/api/v1/auth/me", token: tok})
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			golden(t, r.body)
		})
	}
	t.Run("local", func(t *testing.T) {
		r := h.doLocal(req{path: "/api/v1/auth/me"})
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		golden(t, r.body)
	})
}

// fakeVerifier stands in for the OIDC verifier.
type fakeVerifier struct{}

func (fakeVerifier) Verify(_ context.Context, raw string) (*Principal, error) {
	switch raw {
	case "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln":
		return &Principal{ID: "alice-sub", Email: "alice@example.com", Name: "Alice", Permissions: []string{db.PermTeamRead}}, nil
	case "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJleHAifQ.c2ln":
		return nil, db.Errorf(db.ETOKENEXPIRED, "jwt expired at 10:00")
	case "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJsb2NhbCJ9.c2ln":
		return &Principal{ID: "x", Kind: KindLocal}, nil
	}
	return nil, db.Errorf(db.EUNAUTHORIZED, "signature mismatch for key kid-7")
}

func TestJWTVerifier(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JWTVerifier = fakeVerifier{} })
	r := h.do(req{path: "/api/v1/auth/me", token: "raw:Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"})
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	golden(t, r.body)
	if lim := r.header.Get("X-RateLimit-Limit"); lim != "100" {
		t.Errorf("OIDC principal not rate limited: X-RateLimit-Limit %q", lim)
	}
	e := expectError(t, h.do(req{path: "/api/v1/auth/me", token: "raw:Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJleHAifQ.c2ln"}), 401, "token_expired")
	if e["message"] != "token expired" {
		t.Errorf("message = %v", e["message"])
	}
	e = expectError(t, h.do(req{path: "/api/v1/auth/me", token: "raw:Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"}), 401, "unauthorized")
	if e["message"] != "invalid or expired token" {
		t.Errorf("verifier detail leaked: %v", e["message"])
	}
	// A verifier can never hand out local trust.
	expectError(t, h.do(req{path: "/api/v1/auth/me", token: "raw:Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJsb2NhbCJ9.c2ln"}), 500, "internal")
	// An OIDC user without admin permissions cannot reach admin routes.
	expectError(t, h.do(req{path: "/api/v1/admin/nodes", token: "raw:Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"}), 403, "forbidden")
}

func TestLocalHandler(t *testing.T) {
	h := newHarness(t)
	t.Run("Trusted", func(t *testing.T) {
		r := h.doLocal(req{method: http.MethodPost, path: "/api/v1/admin/nodes", body: `{"name": "billing", "kind": "team", "parent": "platform"}`})
		if r.status != 201 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if r.header.Get("X-RateLimit-Limit") != "" {
			t.Error("local principal is rate limited")
		}
	})
	tests := []struct {
		name   string
		header map[string]string
	}{
		{"Origin", map[string]string{"Origin": "http://evil.example"}},
		{"NullOrigin", map[string]string{"Origin": "null"}},
		{"Referer", map[string]string{"Referer": "http://evil.example/page"}},
		{"WrongHost", map[string]string{"Host": "evil.example"}},
		{"HostWithPort", map[string]string{"Host": "rootcause.local:80"}},
		{"LocalhostHost", map[string]string{"Host": "localhost"}},
	}
	// The socket guard answers before routing, for any path; it is not a
	// per-route answer of the OpenAPI document.
	contract := h.contract
	h.contract = nil
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.doLocal(req{path: "/api/v1/auth/me", header: tt.header})
			expectError(t, r, 403, "forbidden")
		})
	}
	h.contract = contract
	t.Run("NoLocalTrustOverTCP", func(t *testing.T) {
		for _, hdr := range []map[string]string{
			{"Host": LocalHost},
			{"X-Forwarded-For": "127.0.0.1"},
			{"X-Real-Ip": "127.0.0.1"},
			{"X-Rootcause-Local": "1"},
			{"Forwarded": "for=unix"},
		} {
			r := h.do(req{path: "/api/v1/auth/me", header: hdr})
			expectError(t, r, 401, "unauthorized")
			r = h.do(req{path: "/api/v1/admin/backup", header: hdr})
			expectError(t, r, 401, "unauthorized")
		}
	})
}

func TestRateLimit(t *testing.T) {
	h := newHarness(t)
	start := h.clock.Now()
	for i := 1; i <= 100; i++ {
		r := h.do(req{path: "/api/v1/auth/me", token: "payments-read"})
		if r.status != 200 {
			t.Fatalf("read %d: %d %s", i, r.status, r.body)
		}
		if got := r.header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(100-i) {
			t.Fatalf("read %d: X-RateLimit-Remaining %s, want %d", i, got, 100-i)
		}
		if r.header.Get("X-RateLimit-Limit") != "100" {
			t.Fatalf("X-RateLimit-Limit = %q", r.header.Get("X-RateLimit-Limit"))
		}
	}
	r := h.do(req{path: "/api/v1/auth/me", token: "payments-read"})
	e := expectError(t, r, 429, "rate_limited")
	if e["retry_after"] != float64(1) || r.header.Get("Retry-After") != "1" {
		t.Errorf("retry_after = %v, Retry-After = %q; want 1 (one token per 0.6 s)", e["retry_after"], r.header.Get("Retry-After"))
	}
	if r.header.Get("X-RateLimit-Limit") != "100" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("429 headers: %v", r.header)
	}
	reset, _ := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
	if want := start.Add(time.Minute).Unix(); reset != want {
		t.Errorf("X-RateLimit-Reset = %d, want %d (bucket full again in one minute)", reset, want)
	}
	golden(t, r.body)

	// Classes and principals are separate buckets.
	if r := h.do(req{path: "/api/v1/auth/me", token: "payments-write"}); r.status != 200 {
		t.Errorf("another principal is limited: %d", r.status)
	}
	if r := h.doLocal(req{path: "/api/v1/auth/me"}); r.status != 200 {
		t.Errorf("local principal is limited: %d", r.status)
	}
	// Tokens come back with time.
	h.clock.Advance(600 * time.Millisecond)
	if r := h.do(req{path: "/api/v1/auth/me", token: "payments-read"}); r.status != 200 {
		t.Errorf("after refill: %d", r.status)
	}
	if r := h.do(req{path: "/api/v1/auth/me", token: "payments-read"}); r.status != 429 {
		t.Errorf("second after one refill: %d, want 429", r.status)
	}
	h.clock.Advance(time.Minute)
	if r := h.do(req{path: "/api/v1/auth/me", token: "payments-read"}); r.status != 200 || r.header.Get("X-RateLimit-Remaining") != "99" {
		t.Errorf("after a minute: %d remaining %s", r.status, r.header.Get("X-RateLimit-Remaining"))
	}
}

func TestRateLimitWriteClass(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RateLimits = RateLimits{Write: 3} })
	for i := range 3 {
		r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/nodes", token: "admin", body: `{"name": "g` + strconv.Itoa(i) + `", "kind": "group"}`})
		if r.status != 201 || r.header.Get("X-RateLimit-Limit") != "3" {
			t.Fatalf("write %d: %d limit %s: %s", i, r.status, r.header.Get("X-RateLimit-Limit"), r.body)
		}
	}
	r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/nodes", token: "admin", body: `{"name": "g9", "kind": "group"}`})
	expectError(t, r, 429, "rate_limited")
	if e := r.header.Get("Retry-After"); e != "20" {
		t.Errorf("Retry-After = %s, want 20 (3 per minute)", e)
	}
	// The rejected write did not happen.
	if _, err := h.db.FindNode(context.Background(), "g9"); db.ErrorCode(err) != db.ENOTFOUND {
		t.Errorf("rate-limited write was applied: %v", err)
	}
	// Reads have their own budget.
	if r := h.do(req{path: "/api/v1/admin/nodes", token: "admin"}); r.status != 200 || r.header.Get("X-RateLimit-Limit") != "100" {
		t.Errorf("read after writes: %d limit %s", r.status, r.header.Get("X-RateLimit-Limit"))
	}
}

func TestAuthFailureLimit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RateLimits = RateLimits{AuthFailuresPerIP: 5} })
	handler := h.srv.Handler()
	call := func(remote, auth string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/auth/me", nil)
		r.RemoteAddr = remote
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w
	}
	good := "Bearer " + h.tokens["admin"]
	// Successful authentications are never charged.
	for range 10 {
		if w := call("192.0.2.1:1000", good, nil); w.Code != 200 {
			t.Fatalf("good token: %d", w.Code)
		}
	}
	for i := range 5 {
		if w := call("192.0.2.1:1000", "Bearer admin.bad", nil); w.Code != 401 {
			t.Fatalf("failure %d: %d", i, w.Code)
		}
	}
	w := call("192.0.2.1:2000", "Bearer admin.bad", nil)
	if w.Code != 429 || w.Header().Get("Retry-After") != "12" || !strings.Contains(w.Body.String(), `"retry_after":12`) {
		t.Errorf("6th failure: %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	// A valid token is never refused by the failure limit, whatever its
	// address did (behind a proxy, every client shares one).
	if w := call("192.0.2.1:3000", good, nil); w.Code != 200 {
		t.Errorf("blocked address with a good token: %d, want 200", w.Code)
	}
	// X-Forwarded-For from an untrusted peer does not move the caller to
	// another bucket.
	if w := call("192.0.2.1:3000", "Bearer admin.bad", map[string]string{"X-Forwarded-For": "198.51.100.7"}); w.Code != 429 {
		t.Errorf("X-Forwarded-For escaped the limit: %d", w.Code)
	}
	// Other addresses are unaffected; IPv6 counts per /64.
	if w := call("192.0.2.2:1000", good, nil); w.Code != 200 {
		t.Errorf("other address: %d", w.Code)
	}
	for i := range 5 {
		call("[2001:db8:1:2::"+strconv.Itoa(i+1)+"]:1000", "Bearer admin.bad", nil)
	}
	if w := call("[2001:db8:1:2:ffff::9]:1000", "Bearer admin.bad", nil); w.Code != 429 {
		t.Errorf("same /64: %d, want 429", w.Code)
	}
	if w := call("[2001:db8:1:2:ffff::9]:1000", good, nil); w.Code != 200 {
		t.Errorf("same /64, good token: %d, want 200", w.Code)
	}
	if w := call("[2001:db8:1:3::1]:1000", "Bearer admin.bad", nil); w.Code != 401 {
		t.Errorf("other /64: %d", w.Code)
	}
	h.clock.Advance(12 * time.Second)
	if w := call("192.0.2.1:1000", good, nil); w.Code != 200 {
		t.Errorf("after 12 s: %d", w.Code)
	}
}

func TestRateLimiterBounded(t *testing.T) {
	clock := newClock()
	l := newRateLimiter(clock.Now, 100, map[rateClass]int{rateRead: 10})
	for i := range 1000 {
		if _, ok := l.use("p"+strconv.Itoa(i), rateRead, true); !ok {
			t.Fatal("class not limited")
		}
		if n := l.len(); n > 100 {
			t.Fatalf("%d buckets after %d keys, cap 100", n, i+1)
		}
	}
	// Idle buckets (refilled to capacity) are dropped by the next sweep.
	clock.Advance(2 * time.Minute)
	l.use("fresh", rateRead, true)
	if n := l.len(); n != 1 {
		t.Errorf("%d buckets after idle sweep, want 1", n)
	}
	// A busy key keeps its state across sweeps.
	l.use("busy", rateRead, true)
	clock.Advance(sweepEvery)
	for range 10 {
		l.use("busy", rateRead, true)
	}
	l.use("other", rateRead, true) // a new key: the sweep is due
	if st, _ := l.use("busy", rateRead, false); st.remaining != 0 || st.allowed {
		t.Errorf("busy bucket reset by the sweep: remaining %d", st.remaining)
	}
	if n := l.len(); n != 2 {
		t.Errorf("%d buckets, want busy and other", n)
	}
	if _, ok := l.use("x", rateWrite, true); ok {
		t.Error("unconfigured class is limited")
	}
	off := newRateLimiter(clock.Now, 10, map[rateClass]int{rateRead: -1})
	if _, ok := off.use("x", rateRead, true); ok {
		t.Error("negative limit is not unlimited")
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		in, tok string
		ok      bool
	}{
		{"Bearer abc.def", "abc.def", true},
		{"bearer abc", "abc", true},
		{"BEARER  abc", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer a b", "", false},
		{"Basic abc", "", false},
		{"abc", "", false},
		{"", "", false},
		{"Bearer abc\x00", "", false},
		{"Bearer " + strings.Repeat("a", 8193), "", false},
	}
	for _, tt := range tests {
		tok, ok := bearerToken(tt.in)
		if tok != tt.tok || ok != tt.ok {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", tt.in, tok, ok, tt.tok, tt.ok)
		}
	}
}

func TestLooksLikeJWT(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", true},
		{"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.", false},
		{"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0", false},
		{"rct_abc.secret", false},
		{"admin.secret", false},
		{"eyJ.a+b.c", false},
		{"abc.def.ghi", false},
	}
	for _, tt := range tests {
		if got := looksLikeJWT(tt.in); got != tt.want {
			t.Errorf("looksLikeJWT(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestClientKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"192.0.2.1:1234", "192.0.2.1"},
		{"[::ffff:192.0.2.1]:1234", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:80", "2001:db8:1:2::/64"},
		{"@", "addr:@"},
		{"", "addr:"},
	}
	for _, tt := range tests {
		if got := clientKey(tt.in); got != tt.want {
			t.Errorf("clientKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// changingVerifier authenticates one JWT as whatever principal it holds at
// the time: the same id with other fields, as when a person's groups,
// name or e-mail change between two sign-ins.
type changingVerifier struct{ p atomic.Pointer[Principal] }

func (v *changingVerifier) Verify(context.Context, string) (*Principal, error) {
	p := *v.p.Load()
	p.Permissions = slices.Clone(p.Permissions)
	return &p, nil
}

// TestAuthMeAnswerFollowsPrincipal checks that the /auth/me answer, kept
// encoded per principal id, is always the encoding of the request's own
// principal: any field that changes under the same id changes the answer.
func TestAuthMeAnswerFollowsPrincipal(t *testing.T) {
	v := &changingVerifier{}
	h := newHarness(t, func(c *Config) { c.JWTVerifier = v })
	const jwt = "raw:Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJib2IifQ.c2ln"
	base := Principal{ID: "oidc:bob", Kind: KindOIDC, Subject: "bob", Name: "Bob", Email: "bob@example.com",
		Permissions: []string{db.PermTeamRead}}
	steps := []func(p *Principal){
		func(p *Principal) {},
		func(p *Principal) {}, // unchanged: the kept answer
		func(p *Principal) { p.Name = "Robert" },
		func(p *Principal) { p.Email = "" },
		func(p *Principal) { p.Permissions = []string{db.PermTeamRead, db.PermTeamWrite} },
		func(p *Principal) { p.Permissions = nil },
		func(p *Principal) { p.Team = "payments" },
		func(p *Principal) { p.Subject = "" },
		func(p *Principal) { p.Kind = "" }, // the verifier's default kind (OIDC) again
		func(p *Principal) { p.Permissions = []string{db.PermAdminRead} },
	}
	p := base
	for i, change := range steps {
		change(&p)
		v.p.Store(&p)
		r := h.do(req{path: "/api/v1/auth/me", token: jwt})
		if r.status != 200 {
			t.Fatalf("step %d: status %d: %s", i, r.status, r.body)
		}
		want := p
		if want.Kind == "" {
			want.Kind = KindOIDC
		}
		b, err := json.Marshal(authMeOf(&want, "acme"))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(r.body); got != string(b)+"\n" {
			t.Errorf("step %d: answer\n%s\nwant\n%s", i, got, b)
		}
		if n := r.header.Get("Content-Length"); n != strconv.Itoa(len(b)+1) {
			t.Errorf("step %d: Content-Length %s for %d bytes", i, n, len(b)+1)
		}
		p = *v.p.Load()
	}
}

// TestHeaderValuesStayApart checks that header values taken from the
// response writer's backing array never share storage: adding a value to
// one header leaves the next one as it was.
func TestHeaderValuesStayApart(t *testing.T) {
	rec := httptest.NewRecorder()
	rw := &responseWriter{ResponseWriter: rec}
	for i := range len(rw.values) + 2 { // past the array: ordinary slices
		setHeader(rw, "X-A"+strconv.Itoa(i), "a"+strconv.Itoa(i))
	}
	for i := range len(rw.values) + 2 {
		rw.Header().Add("X-A"+strconv.Itoa(i), "added")
	}
	for i := range len(rw.values) + 2 {
		got := rw.Header().Values("X-A" + strconv.Itoa(i))
		if want := []string{"a" + strconv.Itoa(i), "added"}; !slices.Equal(got, want) {
			t.Errorf("X-A%d = %q, want %q", i, got, want)
		}
	}
}

// A fixed header value is shared by every answer: adding to the header on
// one answer, or writing that answer, leaves the shared value and the
// next answer's header as they were.
func TestFixedHeaderValuesStayShared(t *testing.T) {
	shared := fixedValue("application/json")
	first := httptest.NewRecorder()
	setFixedHeader(first, "Content-Type", shared)
	first.Header().Add("Content-Type", "text/plain")
	first.WriteHeader(http.StatusOK)
	second := httptest.NewRecorder()
	setFixedHeader(second, "Content-Type", shared)
	if got := first.Header().Values("Content-Type"); !slices.Equal(got, []string{"application/json", "text/plain"}) {
		t.Errorf("first answer: %q", got)
	}
	if got := second.Header().Values("Content-Type"); !slices.Equal(got, []string{"application/json"}) {
		t.Errorf("second answer: %q, the shared value was changed", got)
	}
	if !slices.Equal(shared, []string{"application/json"}) || cap(shared) != 1 {
		t.Errorf("shared value %q (cap %d)", shared, cap(shared))
	}
}

// TestRevokedTokenRefusedAtOnce: a team token whose answers all came from
// the caches (its verified record, the effective config, its encoded body
// on a corked connection) is refused on the very next request after its
// revocation through the API, on the same keep-alive connections, for the
// effective config and /auth/me alike; other tokens keep working.
func TestRevokedTokenRefusedAtOnce(t *testing.T) {
	h := newHarness(t)
	big := `{"agents":{"a":{"prompt":"` + strings.Repeat("investigate the checkout service ", 200) + `"}}}`
	if r := h.do(req{method: "PUT", path: "/api/v1/config/me", token: "payments-write", body: big}); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	h.issue("hot", db.IssueTokenRequest{Kind: db.TokenTeam, Team: "payments"})
	identity := map[string]string{"Accept-Encoding": "identity"}
	for range 5 {
		if r := h.do(req{path: "/api/v1/config/me/effective", token: "hot", header: identity}); r.status != 200 || len(r.body) < corkMin {
			t.Fatalf("effective before the revocation: %d, %d bytes", r.status, len(r.body))
		}
		if r := h.do(req{path: "/api/v1/auth/me", token: "hot"}); r.status != 200 {
			t.Fatalf("auth/me before the revocation: %d", r.status)
		}
	}
	if r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens/revoke", token: "admin", body: `{"token_id": "` + h.ids["hot"] + `"}`}); r.status != 200 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	expectError(t, h.do(req{path: "/api/v1/config/me/effective", token: "hot", header: identity}), 401, "unauthorized")
	expectError(t, h.do(req{path: "/api/v1/auth/me", token: "hot"}), 401, "unauthorized")
	if r := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read", header: identity}); r.status != 200 {
		t.Fatalf("another token after the revocation: %d", r.status)
	}
}
