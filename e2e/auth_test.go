package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOperatorFlow walks the quick start and the auth rules: tokens through
// the socket, the org tree, permissions, revocation, expiry, malformed
// tokens, rate limits, then the same CLI on the file with the server
// stopped. Finally no issued secret may appear in the db file or the log.
func TestOperatorFlow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, dir)
	var secrets []string
	bearer := func(tok string) string { return "Bearer " + tok }

	admin := issue(t, dir, "--admin", "--name", "ops")
	secrets = append(secrets, admin)
	if !strings.HasPrefix(admin, "admin.") {
		t.Fatalf("admin token %q", admin)
	}
	me := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(admin), nil)
	if me.status != http.StatusOK || me.body["can_write"] != true {
		t.Fatalf("auth/me with admin token: %d %s", me.status, me.raw)
	}
	if me.header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}

	// org -> group -> team through the socket.
	mustCLI(t, dir, "node", "add", "platform", "--parent", "default", "--kind", "group")
	mustCLI(t, dir, "node", "add", "payments", "--parent", "platform", "--kind", "team")
	mustCLI(t, dir, "node", "add", "search", "--parent", "default", "--kind", "team")
	if _, errOut, code := cli(t, dir, "node", "add", "nested", "--parent", "payments", "--kind", "team"); code == 0 || !strings.Contains(errOut, "team") {
		t.Fatalf("node under a team: exit %d, %q", code, errOut)
	}
	if _, errOut, code := cli(t, dir, "node", "add", "payments", "--parent", "default", "--kind", "team"); code == 0 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("duplicate node: exit %d, %q", code, errOut)
	}
	list := mustCLI(t, dir, "node", "list")
	for _, want := range []string{"default", "platform", "payments", "search"} {
		if !strings.Contains(list, want) {
			t.Fatalf("node list lacks %s:\n%s", want, list)
		}
	}

	// A read-only team token: 200 on reads, 403 on writes.
	team := issue(t, dir, "--team", "payments")
	secrets = append(secrets, team)
	me = call(t, "GET", srv.url+"/api/v1/auth/me", bearer(team), nil)
	if me.status != 200 || me.body["team_node_id"] != "payments" || me.body["can_write"] != false {
		t.Fatalf("auth/me with team token: %d %s", me.status, me.raw)
	}
	// PUT /config/me is the team write route once config lands; until then
	// an admin write is the write a team token must be refused.
	if r := call(t, "PUT", srv.url+"/api/v1/config/me", bearer(team), map[string]any{}); r.status != http.StatusNotFound {
		if r.status != http.StatusForbidden || r.errorCode() != "forbidden" {
			t.Fatalf("PUT /config/me with read-only team token: %d %s", r.status, r.raw)
		}
	}
	r := call(t, "POST", srv.url+"/api/v1/admin/nodes", bearer(team), map[string]string{"name": "x", "parent": "default", "kind": "team"})
	if r.status != http.StatusForbidden || r.errorCode() != "forbidden" {
		t.Fatalf("admin write with team token: %d %s", r.status, r.raw)
	}
	// Another team's token cannot list teams or tokens.
	other := issue(t, dir, "--team", "search", "--write")
	secrets = append(secrets, other)
	if r := call(t, "GET", srv.url+"/api/v1/admin/tokens", bearer(other), nil); r.status != http.StatusForbidden {
		t.Fatalf("team token listing tokens: %d %s", r.status, r.raw)
	}

	// Revocation is effective on the very next request.
	victim := issue(t, dir, "--team", "payments", "--write")
	secrets = append(secrets, victim)
	if r := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(victim), nil); r.status != 200 {
		t.Fatalf("victim before revoke: %d", r.status)
	}
	victimID, _, _ := strings.Cut(victim, ".")
	mustCLI(t, dir, "token", "revoke", victimID)
	if r := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(victim), nil); r.status != 401 || r.errorCode() != "unauthorized" {
		t.Fatalf("revoked token: %d %s", r.status, r.raw)
	}

	// Malformed tokens are all plain 401 unauthorized.
	for _, auth := range []string{"", "Bearer", "Bearer ", "garbage", "Bearer garbage", "Bearer admin.wrong", "Bearer admin.", "Bearer " + victimID + ".AAAA", "Basic " + admin} {
		r := call(t, "GET", srv.url+"/api/v1/auth/me", auth, nil)
		if r.status != 401 || r.errorCode() != "unauthorized" {
			t.Fatalf("Authorization %q: %d %s", auth, r.status, r.raw)
		}
	}

	// The 101st read in a minute is refused with the headers.
	// A token issued through the socket with a one-second lifetime expires:
	// 401 token_expired, only because its secret checks out.
	short := issue(t, dir, "--team", "search", "--ttl", "1s")
	secrets = append(secrets, short)
	time.Sleep(1100 * time.Millisecond)
	if r := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(short), nil); r.status != 401 || r.errorCode() != "token_expired" {
		t.Fatalf("expired token issued online: %d %s", r.status, r.raw)
	}
	if r := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(short[:len(short)-2]+"xx"), nil); r.status != 401 || r.errorCode() != "unauthorized" {
		t.Fatalf("expired token with a wrong secret: %d %s, want unauthorized", r.status, r.raw)
	}

	reader := issue(t, dir, "--team", "search")
	secrets = append(secrets, reader)
	for i := 1; i <= 100; i++ {
		r := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(reader), nil)
		if r.status != 200 {
			t.Fatalf("read %d: %d %s", i, r.status, r.raw)
		}
		if got := r.header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(100-i) {
			t.Fatalf("read %d: X-RateLimit-Remaining = %q", i, got)
		}
	}
	r = call(t, "GET", srv.url+"/api/v1/auth/me", bearer(reader), nil)
	if r.status != http.StatusTooManyRequests || r.errorCode() != "rate_limited" {
		t.Fatalf("101st read: %d %s", r.status, r.raw)
	}
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
		if r.header.Get(h) == "" {
			t.Fatalf("429 lacks %s: %v", h, r.header)
		}
	}
	if ra, _ := r.body["error"].(map[string]any)["retry_after"].(float64); strconv.Itoa(int(ra)) != r.header.Get("Retry-After") {
		t.Fatalf("retry_after %v != Retry-After %s", ra, r.header.Get("Retry-After"))
	}

	// A second server on the same data dir refuses to start.
	if _, errOut, code := cli(t, dir, "serve", "--addr", "127.0.0.1:0"); code == 0 || !strings.Contains(errOut, "already running") {
		t.Fatalf("second serve: exit %d, %q", code, errOut)
	}
	// Restore refuses while the server runs.
	if _, errOut, code := cli(t, dir, "restore", filepath.Join(dir, "rootcause.db")); code == 0 || !strings.Contains(errOut, "stop it") {
		t.Fatalf("restore while running: exit %d, %q", code, errOut)
	}

	srv.stop()
	logs := srv.log.String()
	if _, err := os.Stat(filepath.Join(dir, "rootcause.sock")); !os.IsNotExist(err) {
		t.Fatalf("socket left after a clean stop: %v", err)
	}

	// The same commands on the file, server stopped.
	list = mustCLI(t, dir, "node", "list", "--json")
	if !strings.Contains(list, `"payments"`) {
		t.Fatalf("offline node list: %s", list)
	}
	mustCLI(t, dir, "node", "add", "offline-team", "--parent", "platform", "--kind", "team")
	expiring := issue(t, dir, "--team", "offline-team", "--ttl", "1s")
	secrets = append(secrets, expiring)
	revokedOffline := issue(t, dir, "--admin")
	secrets = append(secrets, revokedOffline)
	toks := mustCLI(t, dir, "token", "list", "--json")
	if strings.Count(toks, `"token_id"`) != 8 { // every token issued so far, online and offline, expired and revoked included
		t.Fatalf("offline token list:\n%s", toks)
	}
	var revokeID string
	for _, line := range strings.Split(mustCLI(t, dir, "token", "list"), "\n") {
		if strings.Contains(line, " admin ") && strings.HasSuffix(strings.TrimSpace(line), "-") {
			revokeID = strings.Fields(line)[0] // the newest live admin token is last
		}
	}
	mustCLI(t, dir, "token", "revoke", revokeID)
	backupFile := filepath.Join(t.TempDir(), "offline.db")
	mustCLI(t, dir, "backup", backupFile)
	if out := mustCLI(t, dir, "migrate", "--dry-run"); !strings.Contains(out, "up to date") {
		t.Fatalf("migrate --dry-run: %s", out)
	}

	time.Sleep(1100 * time.Millisecond) // let the 1s token expire
	srv = startServer(t, dir)
	if r := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(expiring), nil); r.status != 401 || r.errorCode() != "token_expired" {
		t.Fatalf("expired token: %d %s", r.status, r.raw)
	}
	// An expired token with a wrong secret is unauthorized, not expired.
	expID, _, _ := strings.Cut(expiring, ".")
	if r := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(expID+".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), nil); r.errorCode() != "unauthorized" {
		t.Fatalf("expired id with wrong secret: %d %s", r.status, r.raw)
	}
	if r := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(revokedOffline), nil); r.status != 401 {
		t.Fatalf("token revoked offline: %d %s", r.status, r.raw)
	}
	if r := call(t, "GET", srv.url+"/api/v1/auth/me", bearer(admin), nil); r.status != 200 {
		t.Fatalf("admin token after restart: %d %s", r.status, r.raw)
	}
	srv.stop()

	// Restore the offline backup (taken before nothing else changed).
	if _, errOut, code := cli(t, dir, "restore", backupFile); code != 0 || !strings.Contains(errOut, "kept at") {
		t.Fatalf("restore: exit %d %s", code, errOut)
	}

	// No secret anywhere in the db file(s) or the server's log.
	files, _ := filepath.Glob(filepath.Join(dir, "rootcause.db*"))
	logs += srv.log.String()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			_, secret, _ := strings.Cut(s, ".")
			if bytes.Contains(raw, []byte(secret)) {
				t.Fatalf("%s contains a token secret", f)
			}
			if strings.Contains(logs, secret) {
				t.Fatal("the server log contains a token secret")
			}
		}
	}
}
