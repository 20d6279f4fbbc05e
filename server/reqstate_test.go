package server

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rootcause/rootcause/db"
)

// TestRequestStateText: the request id and the remaining rate-limit count
// are texts kept in the request's own state rather than allocated. Many
// concurrent requests over TCP must each get a well-formed id of their
// own, the same one in the log line written after the answer, and every
// remaining count exactly once.
func TestRequestStateText(t *testing.T) {
	const limit = 1 << 20
	h := newHarness(t, func(c *Config) { c.RateLimits.Read = limit })
	const workers, each = 8, 25
	type seen struct{ id, remaining string }
	var (
		mu  sync.Mutex
		got []seen
		wg  sync.WaitGroup
	)
	client := &http.Client{}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r, _ := http.NewRequest(http.MethodGet, h.url+"/api/v1/auth/me", nil)
				r.Header.Set("Authorization", "Bearer "+h.tokens["payments-read"])
				resp, err := client.Do(r)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d", resp.StatusCode)
					return
				}
				mu.Lock()
				got = append(got, seen{resp.Header.Get(HeaderRequestID), resp.Header.Get("X-Ratelimit-Remaining")})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != workers*each {
		t.Fatalf("%d answers, want %d", len(got), workers*each)
	}
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	ids := map[string]bool{}
	counts := map[int]bool{}
	for _, s := range got {
		if !hexID.MatchString(s.id) || ids[s.id] {
			t.Errorf("request id %q: malformed or repeated", s.id)
		}
		ids[s.id] = true
		n, err := strconv.Atoi(s.remaining)
		if err != nil || counts[n] || n < limit-workers*each || n >= limit {
			t.Errorf("X-Ratelimit-Remaining %q: malformed, repeated or out of range", s.remaining)
		}
		counts[n] = true
	}
	// Each answer's id is the one its log line carries.
	logged := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var rec struct {
			Msg, Route string
			ID         string `json:"request_id"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "request" && rec.Route == "/api/v1/auth/me" {
			logged[rec.ID] = true
		}
	}
	for id := range ids {
		if !logged[id] {
			t.Errorf("request id %s answered but not in the log", id)
		}
	}
	if len(logged) != len(ids) {
		t.Errorf("%d request ids logged, %d answered", len(logged), len(ids))
	}
}

// TestIntValue: the first number's text is kept in the writer's buffer,
// later ones are allocated, and no text changes once handed out.
func TestIntValue(t *testing.T) {
	for _, n := range []int{0, 7, 1073741823, -42, math.MaxInt, math.MinInt} {
		rw := &responseWriter{}
		first := rw.intValue(n)
		second := rw.intValue(n + 1)
		third := rw.intValue(99)
		if first[0] != strconv.Itoa(n) || second[0] != strconv.Itoa(n+1) || third[0] != "99" {
			t.Errorf("intValue(%d), (%d), (99) = %q %q %q", n, n+1, first, second, third)
		}
		if len(first) != 1 || cap(first) != 1 {
			t.Errorf("intValue(%d): len %d cap %d, want 1 and 1", n, len(first), cap(first))
		}
	}
}

// tokenServiceOnly hides every method of a token service but
// db.TokenService's, so that the server takes Authenticate's copy.
type tokenServiceOnly struct{ db.TokenService }

// TestAuthenticateWithoutIdentity: a token service without
// AuthenticateIdentity authenticates the same principals: a team token
// has its team's permissions and no other, an admin token is an admin,
// a revoked token is refused at once.
func TestAuthenticateWithoutIdentity(t *testing.T) {
	for name, wrap := range map[string]harnessOption{
		"identity":      nil,
		"token service": func(c *Config) { c.Tokens = tokenServiceOnly{c.Tokens} },
	} {
		t.Run(name, func(t *testing.T) {
			var opts []harnessOption
			if wrap != nil {
				opts = append(opts, wrap)
			}
			h := newHarness(t, opts...)
			if _, ok := h.srv.cfg.Tokens.(db.IdentityAuthenticator); ok != (wrap == nil) {
				t.Fatalf("token service implements IdentityAuthenticator: %v", ok)
			}
			me := h.do(req{path: "/api/v1/auth/me", token: "payments-write"}).json(t)
			if me["team_node_id"] != "payments" || me["auth_kind"] != KindTeamToken || fmt.Sprint(me["permissions"]) != "[team:read team:write]" {
				t.Fatalf("team token: %v", me)
			}
			expectError(t, h.do(req{path: "/api/v1/admin/nodes", token: "payments-write"}), 403, "forbidden")
			if r := h.do(req{path: "/api/v1/admin/nodes", token: "admin"}); r.status != 200 {
				t.Fatalf("admin token: %d %s", r.status, r.body)
			}
			if r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens/revoke", token: "admin", body: `{"token_id": "` + h.ids["payments-write"] + `"}`}); r.status != 200 {
				t.Fatalf("revoke: %d %s", r.status, r.body)
			}
			expectError(t, h.do(req{path: "/api/v1/auth/me", token: "payments-write"}), 401, "unauthorized")
		})
	}
}
