package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/db"
)

func TestAdminNodes(t *testing.T) {
	h := newHarness(t)
	t.Run("CreateGroupDefaultParent", func(t *testing.T) {
		r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/nodes", token: "admin", body: `{"name": "data", "kind": "group"}`})
		if r.status != 201 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		golden(t, r.body)
	})
	t.Run("CreateTeam", func(t *testing.T) {
		r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/nodes", token: "admin", body: `{"name": "warehouse", "parent": "data", "kind": "team"}`})
		if r.status != 201 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if n, err := h.db.FindNode(t.Context(), "warehouse"); err != nil || n.Parent != "data" || n.Kind != db.KindTeam {
			t.Errorf("stored node = %+v, %v", n, err)
		}
	})
	errs := []struct {
		name, body string
		status     int
		code       string
	}{
		{"Duplicate", `{"name": "payments", "parent": "acme", "kind": "team"}`, 409, "conflict"},
		{"UnknownParent", `{"name": "x1", "parent": "nowhere", "kind": "team"}`, 404, "not_found"},
		{"UnderTeam", `{"name": "x2", "parent": "payments", "kind": "team"}`, 400, "invalid_request"},
		{"BadName", `{"name": "no spaces allowed/", "kind": "team"}`, 400, "invalid_request"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/nodes", token: "admin", body: tt.body})
			expectError(t, r, tt.status, tt.code)
		})
	}
	t.Run("List", func(t *testing.T) {
		r := h.do(req{path: "/api/v1/admin/nodes", token: "admin"})
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		golden(t, r.body)
	})
	t.Run("Teams", func(t *testing.T) {
		r := h.do(req{path: "/api/v1/admin/teams", token: "admin"})
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		golden(t, r.body)
	})
	t.Run("TeamTokenForbidden", func(t *testing.T) {
		for _, tok := range []string{"payments-read", "payments-write"} {
			r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/nodes", token: tok, body: `{"name": "sneaky", "kind": "team"}`})
			expectError(t, r, 403, "forbidden")
			expectError(t, h.do(req{path: "/api/v1/admin/teams", token: tok}), 403, "forbidden")
		}
		if _, err := h.db.FindNode(t.Context(), "sneaky"); db.ErrorCode(err) != db.ENOTFOUND {
			t.Errorf("forbidden create happened: %v", err)
		}
	})
}

func TestAdminTokens(t *testing.T) {
	h := newHarness(t)
	var issued map[string]any
	t.Run("IssueTeam", func(t *testing.T) {
		r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens", token: "admin",
			body: `{"kind": "team", "team": "payments", "write": true, "name": "deploy bot", "ttl": "720h"}`})
		if r.status != 201 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Error("issued token answer is cacheable")
		}
		issued = r.json(t)
		golden(t, r.body)
	})
	secret, _ := issued["token"].(string)
	id, _ := issued["token_id"].(string)
	if secret == "" || id == "" || !strings.HasPrefix(secret, id+".") {
		t.Fatalf("issued token %q with id %q", secret, id)
	}
	h.tokens["issued"] = secret

	t.Run("IssuedTokenWorks", func(t *testing.T) {
		r := h.do(req{path: "/api/v1/auth/me", token: "issued"})
		m := r.json(t)
		if r.status != 200 || m["team_node_id"] != "payments" || m["can_write"] != true {
			t.Errorf("auth/me with the issued token: %d %s", r.status, r.body)
		}
	})
	t.Run("IssueAdmin", func(t *testing.T) {
		r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens", token: "admin", body: `{"kind": "admin", "name": "second admin"}`})
		if r.status != 201 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		tok, _ := r.json(t)["token"].(string)
		if !strings.HasPrefix(tok, "admin.") {
			t.Fatalf("admin token %q", tok)
		}
		h.tokens["admin2"] = tok
		if r := h.do(req{path: "/api/v1/admin/tokens", token: "admin2"}); r.status != 200 {
			t.Errorf("second admin token: %d", r.status)
		}
	})
	bad := []struct {
		name, body string
		status     int
		code       string
		field      string
	}{
		{"MissingKind", `{"team": "payments"}`, 400, "invalid_request", "kind"},
		{"BadKind", `{"kind": "root"}`, 400, "invalid_request", "kind"},
		{"TeamMissing", `{"kind": "team"}`, 400, "invalid_request", "team"},
		{"TeamUnknown", `{"kind": "team", "team": "nowhere"}`, 404, "not_found", "team"},
		{"TeamIsGroup", `{"kind": "team", "team": "platform"}`, 400, "invalid_request", "team"},
		{"AdminWithTeam", `{"kind": "admin", "team": "payments"}`, 400, "invalid_request", "team"},
		{"AdminReadOnly", `{"kind": "admin", "write": false}`, 400, "invalid_request", "write"},
		{"BadTTL", `{"kind": "admin", "ttl": "forever"}`, 400, "invalid_request", "ttl"},
		{"NegativeTTL", `{"kind": "admin", "ttl": "-1h"}`, 400, "invalid_request", "ttl"},
		{"TinyTTL", `{"kind": "admin", "ttl": "500ms"}`, 400, "invalid_request", "ttl"},
		{"TTLNumber", `{"kind": "admin", "ttl": 3600}`, 400, "invalid_request", "ttl"},
		{"LongName", `{"kind": "admin", "name": "` + strings.Repeat("n", 300) + `"}`, 400, "invalid_request", "name"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens", token: "admin", body: tt.body})
			e := expectError(t, r, tt.status, tt.code)
			if e["field"] != tt.field {
				t.Errorf("field = %v, want %s", e["field"], tt.field)
			}
		})
	}
	t.Run("List", func(t *testing.T) {
		r := h.do(req{path: "/api/v1/admin/tokens", token: "admin"})
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		toks, _ := r.json(t)["tokens"].([]any)
		if len(toks) != 6 {
			t.Errorf("%d tokens listed, want 6: %s", len(toks), r.body)
		}
		for _, tk := range toks {
			m, _ := tk.(map[string]any)
			if _, ok := m["token"]; ok {
				t.Errorf("token list carries a secret field: %v", m)
			}
		}
	})
	t.Run("Revoke", func(t *testing.T) {
		r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens/revoke", token: "admin", body: `{"token_id": "` + id + `"}`})
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		m := r.json(t)
		if m["token_id"] != id || m["revoked_at"] == nil {
			t.Errorf("revoke answer %s", r.body)
		}
		golden(t, r.body)
		// Effective on the very next request.
		expectError(t, h.do(req{path: "/api/v1/auth/me", token: "issued"}), 401, "unauthorized")
	})
	revokeErrs := []struct {
		name, body string
		status     int
		code       string
	}{
		{"Unknown", `{"token_id": "rct_aaaaaaaaaaaaaaaaaaaaaaaaaa"}`, 404, "not_found"},
		{"Missing", `{}`, 400, "invalid_request"},
		{"WholeToken", `{"token_id": "` + h.tokens["payments-read"] + `"}`, 400, "invalid_request"},
		{"WrongType", `{"token_id": 7}`, 400, "invalid_request"},
	}
	for _, tt := range revokeErrs {
		t.Run("Revoke"+tt.name, func(t *testing.T) {
			r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens/revoke", token: "admin", body: tt.body})
			expectError(t, r, tt.status, tt.code)
			if strings.Contains(string(r.body), secretPart(h.tokens["payments-read"])) {
				t.Errorf("answer echoes a secret: %s", r.body)
			}
		})
	}
	t.Run("TeamCannotIssueOrRevoke", func(t *testing.T) {
		r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens", token: "payments-write", body: `{"kind": "admin"}`})
		expectError(t, r, 403, "forbidden")
		r = h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens/revoke", token: "search-write", body: `{"token_id": "` + h.ids["payments-read"] + `"}`})
		expectError(t, r, 403, "forbidden")
		if r := h.do(req{path: "/api/v1/auth/me", token: "payments-read"}); r.status != 200 {
			t.Errorf("a team revoked another team's token: %d", r.status)
		}
	})
}

// TestSecretNeverShownAgain issues a token through the API, uses it on
// every route, and checks that its secret appears in no later answer and in
// no log line.
func TestSecretNeverShownAgain(t *testing.T) {
	h := newHarness(t)
	r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens", token: "admin", body: `{"kind": "admin", "name": "leak check"}`})
	if r.status != 201 {
		t.Fatalf("issue: %d %s", r.status, r.body)
	}
	tok, _ := r.json(t)["token"].(string)
	secret := secretPart(tok)
	if len(secret) < 22 {
		t.Fatalf("secret %q shorter than 128 bits of base64", secret)
	}
	h.tokens["leak"] = tok
	var answers []response
	for _, rt := range h.srv.Routes() {
		answers = append(answers, h.do(req{method: rt.Method, path: fillParams(rt.Path), token: "leak", body: "{}"}))
	}
	answers = append(answers,
		h.do(req{path: "/api/v1/admin/tokens", token: "leak"}),
		h.do(req{path: "/api/v1/auth/me", token: "raw:Bearer admin." + secret + "x"}),
		h.do(req{path: "/nope", token: "leak"}),
	)
	for _, a := range answers {
		if strings.Contains(string(a.body), secret) {
			t.Errorf("answer contains the secret: %s", a.body)
		}
		for k, v := range a.header {
			if strings.Contains(strings.Join(v, " "), secret) {
				t.Errorf("header %s contains the secret", k)
			}
		}
	}
	if strings.Contains(h.logs.String(), secret) {
		t.Error("logs contain the secret")
	}
}

func TestBackup(t *testing.T) {
	h := newHarness(t)
	check := func(t *testing.T, r response) {
		t.Helper()
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if cl := r.header.Get("Content-Length"); cl != strconv.Itoa(len(r.body)) {
			t.Errorf("Content-Length %q for %d bytes", cl, len(r.body))
		}
		if ct := r.header.Get("Content-Type"); ct != "application/octet-stream" {
			t.Errorf("Content-Type %q", ct)
		}
		path := filepath.Join(t.TempDir(), "backup.db")
		if err := os.WriteFile(path, r.body, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := db.Verify(path); err != nil {
			t.Errorf("backup does not verify: %v", err)
		}
	}
	t.Run("Socket", func(t *testing.T) { check(t, h.doLocal(req{path: "/api/v1/admin/backup"})) })
	t.Run("AdminToken", func(t *testing.T) { check(t, h.do(req{path: "/api/v1/admin/backup", token: "admin"})) })
	t.Run("TeamForbidden", func(t *testing.T) {
		expectError(t, h.do(req{path: "/api/v1/admin/backup", token: "payments-write"}), 403, "forbidden")
	})
	t.Run("NotConfigured", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Backup = nil })
		expectError(t, h.doLocal(req{path: "/api/v1/admin/backup"}), 503, "unavailable")
	})
	t.Run("FailsBeforeFirstByte", func(t *testing.T) {
		h := newHarness(t, func(c *Config) {
			c.Backup = func(w io.Writer) (int64, error) {
				w.(SizeSetter).SetSize(100)
				return 0, errors.New("disk on fire")
			}
		})
		r := h.doLocal(req{path: "/api/v1/admin/backup"})
		expectError(t, r, 500, "internal")
		if strings.Contains(string(r.body), "fire") {
			t.Errorf("cause leaked: %s", r.body)
		}
	})
	t.Run("FailsMidStream", func(t *testing.T) {
		h := newHarness(t, func(c *Config) {
			c.Backup = func(w io.Writer) (int64, error) {
				w.(SizeSetter).SetSize(1 << 20)
				n, _ := w.Write(make([]byte, 4096))
				return int64(n), errors.New("read error")
			}
		})
		hr, _ := http.NewRequest(http.MethodGet, "http://"+LocalHost+"/api/v1/admin/backup", nil)
		resp, err := h.local.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Error("a truncated backup read without error")
		}
	})
	t.Run("Unsized", func(t *testing.T) {
		h := newHarness(t, func(c *Config) {
			c.Backup = func(w io.Writer) (int64, error) {
				n, err := io.WriteString(w, "bytes")
				return int64(n), err
			}
		})
		r := h.doLocal(req{path: "/api/v1/admin/backup"})
		if cl := r.header.Get("Content-Length"); r.status != 200 || string(r.body) != "bytes" || cl != "" && cl != "5" {
			t.Errorf("unsized backup: %d %q CL %q", r.status, r.body, r.header.Get("Content-Length"))
		}
	})
}

func TestParseTTL(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"720h", "720h0m0s", true},
		{"30d", "720h0m0s", true},
		{"90m", "1h30m0s", true},
		{"1m", "1m0s", true},
		{"59s", "59s", true},
		{"1s", "1s", true},
		{"999ms", "", false},
		{"0d", "", false},
		{"-1h", "", false},
		{"d", "", false},
		{"1.5d", "", false},
		{"99999999d", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		d, err := parseTTL(tt.in)
		if (err == nil) != tt.ok || (tt.ok && d.String() != tt.want) {
			t.Errorf("parseTTL(%q) = %v, %v; want %s ok=%v", tt.in, d, err, tt.want, tt.ok)
		}
	}
}
