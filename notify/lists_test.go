package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
)

// TestDeliveryViewAttemptsLogNeverNull: a delivery without attempts shows
// "attempts_log": [], never null (openapi.json declares a plain array).
func TestDeliveryViewAttemptsLogNeverNull(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	e := &db.OutboxEntry{ID: "msg_1", Kind: db.OutboxWebhook, Team: "payments", Target: "https://h.example/x?sig=1",
		State: db.DeliveryPending, CreatedAt: now, NextAttemptAt: now}
	for _, tc := range []struct {
		name string
		log  []db.DeliveryAttempt
		want string
	}{
		{"nil", nil, `"attempts_log":[]`},
		{"empty", []db.DeliveryAttempt{}, `"attempts_log":[]`},
		{"one", []db.DeliveryAttempt{{Attempt: 1, Time: now, StatusCode: 500, LatencyMS: 3}}, `"attempts_log":[{"attempt":1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(view(e, tc.log))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.want) {
				t.Errorf("%s does not contain %s", b, tc.want)
			}
		})
	}
}

// TestPayloadLink: the link is the status path, or an absolute URL under
// the public_url setting, in the webhook and in the chat message.
func TestPayloadLink(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	inv := &db.Investigation{ID: "inv_7", Team: "payments", Agent: "k8s_agent", Status: db.StatusCompleted, CompletedAt: &now}
	cfg := map[string]any{
		"webhooks":          map[string]any{"investigation_complete": "https://hooks.example.com/x"},
		"slack_channel":     "#incidents",
		"tokens_vault_path": map[string]any{"slack": "vault:secret/slack#token"},
	}
	for _, tc := range []struct{ base, want string }{
		{"", "/api/v1/agents/status/inv_7"},
		{"https://rc.example.com", "https://rc.example.com/api/v1/agents/status/inv_7"},
		{"https://rc.example.com/", "https://rc.example.com/api/v1/agents/status/inv_7"},
		{"https://example.com/rootcause", "https://example.com/rootcause/api/v1/agents/status/inv_7"},
	} {
		t.Run(tc.base, func(t *testing.T) {
			entries := Outbox(inv, cfg, tc.base)
			if len(entries) != 2 {
				t.Fatalf("%d entries, want webhook and slack", len(entries))
			}
			var p Payload
			if err := json.Unmarshal(entries[0].Payload, &p); err != nil {
				t.Fatal(err)
			}
			if p.Link != tc.want {
				t.Errorf("webhook link = %q, want %q", p.Link, tc.want)
			}
			if !strings.Contains(string(entries[1].Payload), tc.want) {
				t.Errorf("slack message lacks the link %q: %s", tc.want, entries[1].Payload)
			}
		})
	}
}
