package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rootcause/rootcause/db"
)

// Delivery log limits.
const (
	DefaultDeliveryLimit = 20
	MaxDeliveryLimit     = 100
)

// DeliveryView is a delivery as the delivery log API shows it. Target is
// the URL with its query string redacted, or the Slack channel.
type DeliveryView struct {
	ID              string               `json:"id"` // the webhook-id
	InvestigationID string               `json:"investigation_id"`
	Kind            string               `json:"kind"`
	Target          string               `json:"target"`
	State           string               `json:"state"`
	Attempts        int                  `json:"attempts"`
	LastStatus      *int                 `json:"last_status"`
	LastError       *string              `json:"last_error"`
	NextAttemptAt   *time.Time           `json:"next_attempt_at"`
	CreatedAt       time.Time            `json:"created_at"`
	DeliveredAt     *time.Time           `json:"delivered_at,omitempty"`
	AttemptsLog     []db.DeliveryAttempt `json:"attempts_log"`
}

func view(e *db.OutboxEntry, log []db.DeliveryAttempt) DeliveryView {
	v := DeliveryView{
		ID: e.ID, InvestigationID: e.InvestigationID, Kind: e.Kind, Target: e.Target, State: e.State,
		Attempts: e.Attempts, CreatedAt: e.CreatedAt.UTC(), DeliveredAt: e.DeliveredAt, AttemptsLog: log,
	}
	if e.Kind == db.OutboxWebhook {
		v.Target = RedactURL(e.Target)
	}
	if e.LastStatus != 0 {
		s := e.LastStatus
		v.LastStatus = &s
	}
	if e.LastError != "" {
		s := e.LastError
		v.LastError = &s
	}
	if e.State == db.DeliveryPending {
		t := e.NextAttemptAt.UTC()
		if e.LeaseUntil != nil {
			t = e.UpdatedAt.UTC() // being attempted now
		}
		v.NextAttemptAt = &t
	}
	if v.AttemptsLog == nil {
		v.AttemptsLog = []db.DeliveryAttempt{}
	}
	return v
}

// Deliveries returns a team's delivery log, newest first.
func (w *Worker) Deliveries(ctx context.Context, team string, limit int) ([]DeliveryView, error) {
	if limit <= 0 {
		limit = DefaultDeliveryLimit
	}
	limit = min(limit, MaxDeliveryLimit)
	list, err := w.cfg.Store.ListDeliveries(ctx, team, limit)
	if err != nil {
		return nil, err
	}
	out := make([]DeliveryView, 0, len(list))
	for _, e := range list {
		log, err := w.cfg.Store.DeliveryAttempts(ctx, e.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, view(e, log))
	}
	return out, nil
}

// Redeliver re-queues a team's delivery now with the same id.
func (w *Worker) Redeliver(ctx context.Context, team, id string) (*DeliveryView, error) {
	e, err := w.cfg.Store.RedeliverDelivery(ctx, team, id)
	if err != nil {
		return nil, err
	}
	w.Wake()
	log, err := w.cfg.Store.DeliveryAttempts(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	v := view(e, log)
	return &v, nil
}

// PingResult is the answer of the test ping.
type PingResult struct {
	WebhookID  string `json:"webhook_id"`
	URL        string `json:"url"` // query string redacted
	Delivered  bool   `json:"delivered"`
	StatusCode int    `json:"status_code,omitempty"`
	LatencyMS  int64  `json:"latency_ms"`
	Error      string `json:"error,omitempty"`
}

// Ping sends a signed {"event": "ping"} to the team's configured webhook
// URL now and reports the receiver's answer. It is not retried or logged.
func (w *Worker) Ping(ctx context.Context, team string) (*PingResult, error) {
	if w.cfg.TeamConfig == nil {
		return nil, db.Errorf(db.EUNAVAILABLE, "team configuration is not available on this server")
	}
	cfg, err := w.cfg.TeamConfig(ctx, team)
	if err != nil {
		return nil, err
	}
	target := webhookURL(cfg)
	if target == "" {
		return nil, &db.Error{Code: db.EINVALID, Field: "webhooks.investigation_complete",
			Message: "the team has no webhooks.investigation_complete URL; set one in its config first"}
	}
	if err := ValidateURL(target, w.cfg.Allow); err != nil {
		return nil, &db.Error{Code: db.EINVALID, Field: "webhooks.investigation_complete", Message: "webhooks.investigation_complete: " + err.Error()}
	}
	secrets, err := w.cfg.Store.WebhookSigningSecrets(ctx, team)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return nil, db.Errorf(db.EINVALIDSTATE, "team %s has no webhook signing secret; an admin creates one with POST /api/v1/admin/teams/%s/webhook-secret", team, team)
	}
	if err != nil {
		return nil, err
	}
	id := NewMessageID()
	body, _ := json.Marshal(map[string]any{
		"event":   EventPing,
		"team":    team,
		"sent_at": w.now().UTC(),
		"message": "rootcause webhook test: deliveries to this URL are signed and verifiable",
	})
	r := w.post(ctx, target, id, body, secrets)
	res := &PingResult{WebhookID: id, URL: RedactURL(target), Delivered: r.ok, StatusCode: r.status, LatencyMS: r.latency.Milliseconds()}
	if r.err != nil {
		res.Error = r.err.Error()
	}
	return res, nil
}

// CreateSecret creates or rotates a team's signing secret (createOnly:
// ECONFLICT when one exists). overlap is how long the previous key keeps
// signing too (0 drops it at once), at most MaxOverlap.
func (w *Worker) CreateSecret(ctx context.Context, team string, overlap time.Duration, createOnly bool) (*db.WebhookSecret, error) {
	if overlap < 0 || overlap > MaxOverlap {
		return nil, &db.Error{Code: db.EINVALID, Field: "overlap", Message: fmt.Sprintf("overlap must be between 0s and %s", MaxOverlap)}
	}
	s, err := w.cfg.Store.CreateWebhookSecret(ctx, team, overlap, createOnly)
	if err != nil {
		return nil, err
	}
	w.Wake() // held deliveries were re-queued
	return s, nil
}
