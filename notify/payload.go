// Package notify delivers the results of finished investigations: the
// signed investigation_complete webhook (Standard Webhooks) and chat
// notifications through the Slack Web API, from the durable outbox that
// db.FinishInvestigation writes in the transaction that finishes an
// investigation.
//
// The pieces: Outbox builds the entries (plug it into
// agent.RuntimeConfig.Outbox); Sign signs a message; ValidateURL and the
// guarded HTTP client keep deliveries away from internal networks (SSRF);
// Worker claims due entries from bbolt and delivers them with retries, and
// serves the delivery log, redelivery, the test ping and secret rotation to
// the API. docs/webhooks.md is the user-facing description.
package notify

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
	"github.com/rootcause/rootcause/secretref"
)

// Event names.
const (
	EventInvestigationComplete = "investigation_complete"
	EventPing                  = "ping"
)

// StatusPath is the status endpoint a payload's link points at.
const StatusPath = "/api/v1/agents/status/"

// Payload is the JSON body of the investigation_complete webhook: the
// spec's fields (event, investigation_id, summary, root_cause,
// recommendations) plus status, team, agent, the final time, the error of a
// failed run and a link to the status endpoint.
type Payload struct {
	Event           string                   `json:"event"`
	InvestigationID string                   `json:"investigation_id"`
	Status          string                   `json:"status"`
	Team            string                   `json:"team"`
	Agent           string                   `json:"agent"`
	Summary         string                   `json:"summary"`
	RootCause       *finding.RootCause       `json:"root_cause"`
	Recommendations []finding.Recommendation `json:"recommendations"`
	CompletedAt     *time.Time               `json:"completed_at,omitempty"`
	FailedAt        *time.Time               `json:"failed_at,omitempty"`
	Error           *db.RunError             `json:"error,omitempty"`
	Link            string                   `json:"link"`
}

// NewMessageID returns a new delivery id, "msg_" and 32 hex digits. It is
// the webhook-id header, stable across retries of one delivery.
func NewMessageID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "msg_" + hex.EncodeToString(b[:])
}

// BuildPayload returns the webhook payload of a final investigation.
func BuildPayload(inv *db.Investigation, linkBase string) Payload {
	p := Payload{
		Event:           EventInvestigationComplete,
		InvestigationID: inv.ID,
		Status:          inv.Status,
		Team:            inv.Team,
		Agent:           inv.Agent,
		Recommendations: []finding.Recommendation{},
		Link:            strings.TrimRight(linkBase, "/") + StatusPath + inv.ID,
	}
	if inv.Result != nil {
		p.Summary = inv.Result.Summary
		rc := inv.Result.RootCause
		p.RootCause = &rc
		if inv.Result.Recommendations != nil {
			p.Recommendations = inv.Result.Recommendations
		}
	}
	if inv.CompletedAt != nil {
		t := inv.CompletedAt.UTC()
		p.CompletedAt = &t
	}
	if inv.Status == db.StatusFailed {
		if inv.FailedAt != nil {
			t := inv.FailedAt.UTC()
			p.FailedAt = &t
		}
		p.Error = inv.Error
		if p.Summary == "" {
			msg := "the investigation failed"
			if inv.Error != nil && inv.Error.Message != "" {
				msg += ": " + inv.Error.Message
			}
			p.Summary = msg
		}
	}
	return p
}

// Outbox returns the deliveries of a final investigation under the team's
// effective config cfg: a webhook entry when webhooks.investigation_complete
// is set, and a Slack entry when slack_channel is set and
// tokens_vault_path.slack holds a secret reference. Completed and failed
// investigations are delivered (both as event investigation_complete, with
// status telling them apart); cancelled ones are not, since a person
// cancelled them. The payload is frozen in the entry: what was decided at
// completion is what is delivered, however often it is retried.
//
// linkBase is the server setting public_url: when set, the payload's link
// is the absolute URL <public_url>/api/v1/agents/status/<id>; when empty it
// is that path alone. Use it as agent.RuntimeConfig.Outbox:
//
//	Outbox: func(inv *db.Investigation, cfg map[string]any) []db.OutboxEntry {
//		return notify.Outbox(inv, cfg, settings.PublicURL)
//	}
func Outbox(inv *db.Investigation, cfg map[string]any, linkBase string) []db.OutboxEntry {
	if inv == nil || (inv.Status != db.StatusCompleted && inv.Status != db.StatusFailed) {
		return nil
	}
	var out []db.OutboxEntry
	created := finalTime(inv)
	if url := webhookURL(cfg); url != "" {
		body, err := json.Marshal(BuildPayload(inv, linkBase))
		if err == nil {
			out = append(out, db.OutboxEntry{
				ID: NewMessageID(), Kind: db.OutboxWebhook, Team: inv.Team, InvestigationID: inv.ID,
				Target: url, Payload: body, CreatedAt: created, NextAttemptAt: created, State: db.DeliveryPending,
			})
		}
	}
	channel, _ := cfg["slack_channel"].(string)
	ref := slackTokenRef(cfg)
	if channel != "" && ref != "" {
		group, _ := cfg["slack_group_to_ping"].(string)
		env := slackEnvelope{TokenRef: ref, Message: SlackMessageFor(BuildPayload(inv, linkBase), channel, group)}
		body, err := json.Marshal(env)
		if err == nil {
			out = append(out, db.OutboxEntry{
				ID: NewMessageID(), Kind: db.OutboxSlack, Team: inv.Team, InvestigationID: inv.ID,
				Target: channel, Payload: body, CreatedAt: created, NextAttemptAt: created, State: db.DeliveryPending,
			})
		}
	}
	return out
}

func finalTime(inv *db.Investigation) time.Time {
	switch {
	case inv.CompletedAt != nil:
		return inv.CompletedAt.UTC()
	case inv.FailedAt != nil:
		return inv.FailedAt.UTC()
	}
	return time.Now().UTC()
}

// webhookURL is the effective webhooks.investigation_complete, or "".
func webhookURL(cfg map[string]any) string {
	wh, _ := cfg["webhooks"].(map[string]any)
	u, _ := wh["investigation_complete"].(string)
	return strings.TrimSpace(u)
}

// slackTokenRef is tokens_vault_path.slack when it is a secret reference.
func slackTokenRef(cfg map[string]any) string {
	tv, _ := cfg["tokens_vault_path"].(map[string]any)
	ref, _ := tv["slack"].(string)
	if !secretref.IsRef(ref) {
		return ""
	}
	return ref
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

func percent(c float64) string {
	if c == float64(int64(c)) {
		return fmt.Sprintf("%d%%", int64(c))
	}
	return fmt.Sprintf("%.1f%%", c)
}
