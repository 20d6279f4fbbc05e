package evidence

import (
	"context"
	"time"
)

// Alert is one alert as Alertmanager sends it (webhook payload) or lists
// it (GET /api/v2/alerts).
type Alert struct {
	Name   string `json:"name"`   // labels.alertname
	Status string `json:"status"` // firing or resolved
	// State is Alertmanager's state of a listed alert: active, suppressed
	// (silenced or inhibited) or unprocessed; empty in webhook payloads.
	State        string            `json:"state,omitempty"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"starts_at,omitzero"`
	EndsAt       time.Time         `json:"ends_at,omitzero"` // zero while firing with no end known
	GeneratorURL string            `json:"generator_url,omitempty"`
	Fingerprint  string            `json:"fingerprint,omitempty"`
}

// Alerts lists the alerts an investigation was handed (a bundle's
// alerts.json). No live backend yet: live, alerts arrive with the request.
type Alerts interface {
	// List returns the alerts active at some time within [since, until]
	// (zero bounds are open), by start time, then name.
	List(ctx context.Context, since, until time.Time) ([]Alert, error)
}
