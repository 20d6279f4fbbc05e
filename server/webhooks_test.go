package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/notify"
)

type hookReceiver struct {
	mu      sync.Mutex
	secrets []string // a delivery must verify with one of them
	ids     []string
	bad     int
}

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ok := false
	for _, s := range rc.secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		ok = ok || (err == nil && wh.Verify(body, r.Header) == nil)
	}
	if !ok {
		rc.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rc.ids = append(rc.ids, r.Header.Get("webhook-id"))
}

func (rc *hookReceiver) seen() ([]string, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.ids...), rc.bad
}

func TestWebhookRoutes(t *testing.T) {
	rc := &hookReceiver{}
	recv := httptest.NewServer(rc)
	defer recv.Close()
	var worker *notify.Worker
	h := newHarness(t, func(c *Config) {
		worker = notify.NewWorker(notify.Config{
			Store: c.Nodes.(*db.DB),
			Allow: notify.MustAllowlist("127.0.0.1"),
			Poll:  20 * time.Millisecond,
			TeamConfig: func(_ context.Context, team string) (map[string]any, error) {
				if team == "payments" {
					return map[string]any{"webhooks": map[string]any{"investigation_complete": recv.URL + "/hook?sig=x"}}, nil
				}
				return map[string]any{}, nil
			},
		})
		c.Webhooks = worker
	})
	if err := worker.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Stop(context.Background()) })

	// Signing secrets: admins only, shown once.
	path := "/api/v1/admin/teams/payments/webhook-secret"
	expectError(t, h.do(req{method: "POST", path: path, token: "payments-write"}), 403, db.EFORBIDDEN)
	expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/teams/nope/webhook-secret", token: "admin"}), 404, db.ENOTFOUND)
	expectError(t, h.do(req{method: "POST", path: "/api/v1/admin/teams/platform/webhook-secret", token: "admin"}), 400, db.EINVALID)
	expectError(t, h.do(req{method: "POST", path: path, token: "admin", body: `{"overlap":"forever"}`}), 400, db.EINVALID)
	r := h.do(req{method: "POST", path: path, token: "admin", body: `{"create_only":true}`})
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	created := r.json(t)
	first, _ := created["secret"].(string)
	if !strings.HasPrefix(first, "whsec_") || created["previous_expires_at"] != nil || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create answer %s", r.body)
	}
	expectError(t, h.do(req{method: "POST", path: path, token: "admin", body: `{"create_only":true}`}), 409, db.ECONFLICT)
	r = h.do(req{method: "POST", path: path, token: "admin", body: `{"overlap":"1h"}`})
	rotated := r.json(t)
	second, _ := rotated["secret"].(string)
	if r.status != 201 || second == first || rotated["previous_expires_at"] == nil {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	searchSecret, err := h.db.CreateWebhookSecret(context.Background(), "search", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secrets = []string{second, searchSecret.Secret}
	rc.mu.Unlock()

	// Deliveries of two teams.
	now := time.Now().UTC() // the receiver checks webhook-timestamp against the wall clock
	mk := func(team, inv string) db.OutboxEntry {
		return db.OutboxEntry{ID: notify.NewMessageID(), Kind: db.OutboxWebhook, Team: team, InvestigationID: inv,
			Target: recv.URL + "/hook?sig=x", Payload: json.RawMessage(`{"event":"investigation_complete","investigation_id":"` + inv + `"}`), CreatedAt: now, NextAttemptAt: now}
	}
	pay, sea := mk("payments", "inv_p"), mk("search", "inv_s")
	if err := h.db.EnqueueDeliveries(context.Background(), pay, sea); err != nil {
		t.Fatal(err)
	}
	worker.Wake()
	deadline := time.Now().Add(10 * time.Second)
	for ids, _ := rc.seen(); len(ids) < 2 && time.Now().Before(deadline); ids, _ = rc.seen() {
		time.Sleep(10 * time.Millisecond)
	}
	if ids, bad := rc.seen(); len(ids) != 2 || bad != 0 {
		t.Fatalf("receiver saw %v, %d unverified", ids, bad)
	}
	for _, id := range []string{pay.ID, sea.ID} { // recorded after the receiver answered
		for e, _ := h.db.GetDelivery(context.Background(), "", id); e == nil || e.State != db.DeliveryDelivered; e, _ = h.db.GetDelivery(context.Background(), "", id) {
			if time.Now().After(deadline) {
				t.Fatalf("delivery %s not recorded as delivered: %+v", id, e)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	list := func(token, query string) []any {
		t.Helper()
		r := h.do(req{path: "/api/v1/webhooks/deliveries" + query, token: token})
		if r.status != 200 {
			t.Fatalf("list as %s%s: %d %s", token, query, r.status, r.body)
		}
		if strings.Contains(string(r.body), "whsec_") || strings.Contains(string(r.body), "sig=x") {
			t.Fatalf("list leaks a secret or the query string: %s", r.body)
		}
		l, _ := r.json(t)["deliveries"].([]any)
		return l
	}
	for _, c := range []struct{ token, query, id string }{
		{"payments-read", "", pay.ID}, {"search-write", "?limit=5", sea.ID}, {"admin", "?team=search", sea.ID},
	} {
		l := list(c.token, c.query)
		if len(l) != 1 {
			t.Fatalf("%s sees %d deliveries", c.token, len(l))
		}
		d := l[0].(map[string]any)
		if d["id"] != c.id || d["state"] != db.DeliveryDelivered || d["last_status"].(float64) != 200 || len(d["attempts_log"].([]any)) != 1 {
			t.Fatalf("%s sees %v", c.token, d)
		}
	}
	expectError(t, h.do(req{path: "/api/v1/webhooks/deliveries?team=search", token: "payments-read"}), 403, db.EFORBIDDEN)
	expectError(t, h.do(req{path: "/api/v1/webhooks/deliveries", token: "admin"}), 400, db.EINVALID)
	expectError(t, h.do(req{path: "/api/v1/webhooks/deliveries?limit=0", token: "payments-read"}), 400, db.EINVALID)

	// Redelivery: team:write, own team only, same id.
	redeliver := "/api/v1/webhooks/deliveries/" + pay.ID + "/redeliver"
	expectError(t, h.do(req{method: "POST", path: redeliver, token: "payments-read"}), 403, db.EFORBIDDEN)
	expectError(t, h.do(req{method: "POST", path: redeliver, token: "search-write"}), 404, db.ENOTFOUND)
	r = h.do(req{method: "POST", path: redeliver, token: "payments-write"})
	if r.status != 202 || r.json(t)["id"] != pay.ID || r.json(t)["state"] != db.DeliveryPending {
		t.Fatalf("redeliver: %d %s", r.status, r.body)
	}
	deadline = time.Now().Add(10 * time.Second)
	for ids, _ := rc.seen(); len(ids) < 3 && time.Now().Before(deadline); ids, _ = rc.seen() {
		time.Sleep(10 * time.Millisecond)
	}
	if ids, _ := rc.seen(); len(ids) != 3 || ids[2] != pay.ID {
		t.Fatalf("after redelivery the receiver saw %v", ids)
	}

	// Test ping.
	expectError(t, h.do(req{method: "POST", path: "/api/v1/webhooks/test", token: "payments-read"}), 403, db.EFORBIDDEN)
	expectError(t, h.do(req{method: "POST", path: "/api/v1/webhooks/test", token: "search-write"}), 400, db.EINVALID)
	r = h.do(req{method: "POST", path: "/api/v1/webhooks/test", token: "payments-write"})
	if r.status != 200 || r.json(t)["delivered"] != true || r.json(t)["status_code"].(float64) != 200 {
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
}

func TestWebhookRoutesUnavailableWithoutService(t *testing.T) {
	h := newHarness(t)
	expectError(t, h.do(req{path: "/api/v1/webhooks/deliveries", token: "payments-read"}), 503, db.EUNAVAILABLE)
}
