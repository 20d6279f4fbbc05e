package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/secretref"
)

type mapResolver map[string]string

func (m mapResolver) Resolve(_ context.Context, ref string) (string, error) {
	if v, ok := m[ref]; ok {
		return v, nil
	}
	return "", errors.New("not found")
}

// slackServer is a loopback Slack Web API that checks the exact request.
type slackServer struct {
	mu      sync.Mutex
	reqs    []SlackMessage
	answers []string // JSON bodies, in order; the last repeats
}

func newSlackServer(t *testing.T, answers ...string) (*slackServer, *httptest.Server) {
	s := &slackServer{answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/chat.postMessage" {
			t.Errorf("slack: %s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer xoxb-test-token" {
			t.Errorf("slack: Authorization %q", got)
		}
		if got := r.Header.Get("Content-Type"); got != "application/json; charset=utf-8" {
			t.Errorf("slack: Content-Type %q", got)
		}
		raw, _ := io.ReadAll(r.Body)
		var m SlackMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Errorf("slack: body %s: %v", raw, err)
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, m)
		ans := s.answers[min(len(s.reqs), len(s.answers))-1]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(ans, "ratelimited") {
			w.Header().Set("Retry-After", "0")
		}
		io.WriteString(w, ans)
	}))
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *slackServer) requests() []SlackMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SlackMessage(nil), s.reqs...)
}

func slackCfg() map[string]any {
	return map[string]any{
		"slack_channel":       "C0INCIDENTS",
		"slack_group_to_ping": "S0ONCALL1",
		"tokens_vault_path":   map[string]any{"slack": "env:SLACK_BOT_TOKEN"},
	}
}

func TestSlackPostMessage(t *testing.T) {
	f := newFixture(t)
	ss, srv := newSlackServer(t, `{"ok":false,"error":"ratelimited"}`, `{"ok":true,"ts":"1.2"}`)
	f.start(func(c *Config) {
		c.SlackAPIURL = srv.URL + "/api"
		c.Resolver = mapResolver{"env:SLACK_BOT_TOKEN": "xoxb-test-token"}
		c.Scope = noGrants
	})
	inv := f.finish("payments", slackCfg(), false)
	f.w.Wake()
	id := f.entries("payments")[0].ID
	e := f.waitState("payments", id, db.DeliveryDelivered)
	if e.Kind != db.OutboxSlack || e.Attempts != 2 || e.Target != "C0INCIDENTS" {
		t.Fatalf("entry %+v", e)
	}
	reqs := ss.requests()
	m := reqs[len(reqs)-1]
	if m.Channel != "C0INCIDENTS" || !strings.HasPrefix(m.Text, "<!subteam^S0ONCALL1> Investigation "+inv.ID+" completed") {
		t.Fatalf("message: channel %q text %q", m.Channel, m.Text)
	}
	blocks, _ := json.Marshal(m.Blocks)
	for _, want := range []string{"92% confidence", "memory limit lowered", "1. [high] roll back", "3. [low] alert on OOMKilled", StatusPath + inv.ID} {
		if !strings.Contains(string(blocks), want) {
			t.Errorf("blocks lack %q: %s", want, blocks)
		}
	}
	if strings.Contains(string(blocks), "a fourth one") {
		t.Error("more than three recommendations")
	}
}

func TestSlackPermanentErrorIsNotRetried(t *testing.T) {
	f := newFixture(t)
	ss, srv := newSlackServer(t, `{"ok":false,"error":"channel_not_found"}`)
	f.start(func(c *Config) {
		c.SlackAPIURL = srv.URL + "/api/"
		c.Resolver = mapResolver{"env:SLACK_BOT_TOKEN": "xoxb-test-token"}
		c.Scope = noGrants
	})
	f.finish("payments", slackCfg(), true)
	f.w.Wake()
	e := f.waitState("payments", f.entries("payments")[0].ID, db.DeliveryFailed)
	if e.Attempts != 1 || !strings.Contains(e.LastError, "channel_not_found") || len(ss.requests()) != 1 {
		t.Fatalf("entry %+v, %d requests", e, len(ss.requests()))
	}
	if !strings.Contains(ss.requests()[0].Text, "failed") {
		t.Errorf("failed-run text %q", ss.requests()[0].Text)
	}
}

// noGrants is the scope of a team granted no Vault path, whose Slack
// token reference is inherited from an admin level.
func noGrants(_ context.Context, team string) (*secretref.Scope, error) {
	return &secretref.Scope{Node: team, Own: map[string]bool{}}, nil
}

// TestSlackTokenScopeAtDelivery: the bot token reference frozen in a
// Slack entry is checked against the team's secret scope again when sent
// (the grant may have shrunk since the reference was saved), and nothing
// is sent when the scope says no or cannot be read.
func TestSlackTokenScopeAtDelivery(t *testing.T) {
	const own = "vault:secret/teams/payments/slack#token"
	ownCfg := map[string]any{"slack_channel": "C0INCIDENTS", "tokens_vault_path": map[string]any{"slack": own}}
	scope := func(prefixes ...string) func(context.Context, string) (*secretref.Scope, error) {
		return func(_ context.Context, team string) (*secretref.Scope, error) {
			return &secretref.Scope{Node: team, Prefixes: prefixes, Own: map[string]bool{own: true}}, nil
		}
	}
	flaky := 0
	for _, c := range []struct {
		name     string
		cfg      map[string]any
		scope    func(context.Context, string) (*secretref.Scope, error)
		state    string
		attempts int
		errHas   string
	}{
		{"own reference within the grant", ownCfg, scope("secret/teams/payments/"), db.DeliveryDelivered, 1, ""},
		{"own reference after the grant was narrowed", ownCfg, scope("secret/teams/payments/pagerduty/"), db.DeliveryFailed, 1, "outside the secret scopes granted to team payments"},
		{"own reference after the grant was withdrawn", ownCfg, scope(), db.DeliveryFailed, 1, "outside the secret scopes"},
		{"inherited reference", slackCfg(), scope(), db.DeliveryDelivered, 1, ""},
		{"no scope configured", ownCfg, nil, db.DeliveryFailed, 1, "no secret scope"},
		{"team gone", ownCfg, func(context.Context, string) (*secretref.Scope, error) {
			return nil, db.Errorf(db.ENOTFOUND, "no team payments")
		}, db.DeliveryFailed, 1, "no team payments"},
		{"unreadable grant", ownCfg, func(context.Context, string) (*secretref.Scope, error) {
			return nil, &db.Error{Code: db.EINVALID, Field: "secret_scopes", Message: "not a vault: prefix"}
		}, db.DeliveryFailed, 1, "not a vault: prefix"},
		{"no scope returned", ownCfg, func(context.Context, string) (*secretref.Scope, error) { return nil, nil }, db.DeliveryFailed, 1, "none returned"},
		{"store unavailable once: retried", ownCfg, func(ctx context.Context, team string) (*secretref.Scope, error) {
			if flaky++; flaky == 1 {
				return nil, errors.New("store busy")
			}
			return scope("secret/teams/payments/")(ctx, team)
		}, db.DeliveryDelivered, 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ss, srv := newSlackServer(t, `{"ok":true,"ts":"1.2"}`)
			f.start(func(cfg *Config) {
				cfg.SlackAPIURL = srv.URL + "/api"
				cfg.Resolver = mapResolver{"env:SLACK_BOT_TOKEN": "xoxb-test-token", own: "xoxb-test-token"}
				cfg.Scope = c.scope
			})
			f.finish("payments", c.cfg, false)
			f.w.Wake()
			e := f.waitState("payments", f.entries("payments")[0].ID, c.state)
			if e.Attempts != c.attempts || !strings.Contains(e.LastError, c.errHas) {
				t.Errorf("attempts %d, last error %q; want %d and %q", e.Attempts, e.LastError, c.attempts, c.errHas)
			}
			if sent := len(ss.requests()) > 0; sent != (c.state == db.DeliveryDelivered) {
				t.Errorf("%d messages reached Slack", len(ss.requests()))
			}
			if strings.Contains(e.LastError, "xoxb") {
				t.Errorf("the error shows the token: %q", e.LastError)
			}
		})
	}
}

func TestMention(t *testing.T) {
	for in, want := range map[string]string{
		"S0ONCALL1": "<!subteam^S0ONCALL1>", "@sre-oncall": "@sre-oncall", "sre": "@sre",
		"here": "<!here>", "": "", "<!subteam^S1|sre>": "<!subteam^S1|sre>",
	} {
		if got := Mention(in); got != want {
			t.Errorf("Mention(%q) = %q, want %q", in, got, want)
		}
	}
}
