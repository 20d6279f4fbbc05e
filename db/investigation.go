package db

import (
	"context"
	"encoding/json"
	"time"

	"github.com/rootcause/rootcause/finding"
)

// Investigation statuses (spec 3.1).
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// IsFinal reports whether status is completed, failed or cancelled.
func IsFinal(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// Investigation is the durable record of one investigation.
type Investigation struct {
	ID          string            `json:"investigation_id"`
	Team        string            `json:"team"`
	Agent       string            `json:"agent"`
	Message     string            `json:"message"`
	Context     map[string]string `json:"context,omitempty"`
	Status      string            `json:"status"`
	RequestedBy string            `json:"requested_by,omitempty"` // principal id
	CreatedAt   time.Time         `json:"created_at"`
	StartedAt   *time.Time        `json:"started_at,omitempty"`
	CompletedAt *time.Time        `json:"completed_at,omitempty"`
	FailedAt    *time.Time        `json:"failed_at,omitempty"`
	CancelledAt *time.Time        `json:"cancelled_at,omitempty"`
	Progress    *Progress         `json:"progress,omitempty"`
	Result      *finding.Result   `json:"result,omitempty"`
	ToolsUsed   []string          `json:"tools_used,omitempty"`
	Error       *RunError         `json:"error,omitempty"`
	// AgentSettings records the agent as resolved from the team's effective
	// config when the run started (enabled, prompt, toolkit, timeout).
	AgentSettings json.RawMessage `json:"agent_settings,omitempty"`
	// Usage is the LLM accounting, when a model was used.
	Usage *Usage `json:"usage,omitempty"`
}

// Progress of a running investigation (spec 2.3).
type Progress struct {
	CurrentStep    string `json:"current_step"`
	StepsCompleted int    `json:"steps_completed"`
	StepsTotal     int    `json:"steps_total"`
}

// RunError is why an investigation failed.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Usage is the LLM accounting of an investigation.
type Usage struct {
	Model           string  `json:"model"`
	InputTokens     int64   `json:"input_tokens"`
	OutputTokens    int64   `json:"output_tokens"`
	Steps           int     `json:"steps"`
	ToolCalls       int     `json:"tool_calls"`
	DurationSeconds float64 `json:"duration_seconds"`
}

// InvestigationEvent is one entry of an investigation's event log (progress
// steps, tool calls, the final status), served as Server-Sent Events.
type InvestigationEvent struct {
	Seq  uint64          `json:"seq"`
	Time time.Time       `json:"time"`
	Type string          `json:"type"` // status, step, tool_call
	Data json.RawMessage `json:"data"`
}

// InvestigationFilter selects a team's investigations, newest first.
type InvestigationFilter struct {
	Team   string // required
	Status string // optional
	Limit  int
	Offset int
}

// OutboxEntry is a delivery to make once its investigation is final
// (webhook or chat notification), written in the same transaction that
// finishes the investigation.
type OutboxEntry struct {
	ID              string          `json:"id"`   // also the webhook-id: stable across retries
	Kind            string          `json:"kind"` // webhook, slack
	Team            string          `json:"team"`
	InvestigationID string          `json:"investigation_id"`
	Target          string          `json:"target"` // URL or channel
	Payload         json.RawMessage `json:"payload"`
	CreatedAt       time.Time       `json:"created_at"`
	Attempts        int             `json:"attempts"`
	NextAttemptAt   time.Time       `json:"next_attempt_at"`
	State           string          `json:"state"` // pending, delivered, failed, disabled
	LastStatus      int             `json:"last_status,omitempty"`
	LastError       string          `json:"last_error,omitempty"`
	// Delivery bookkeeping, kept by the OutboxService (db/outbox.go).
	UpdatedAt   time.Time  `json:"updated_at,omitzero"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
	// WindowStart is when the current retry window began (creation or the
	// last manual redelivery); WindowAttempts counts attempts within it.
	WindowStart    time.Time  `json:"window_start,omitzero"`
	WindowAttempts int        `json:"window_attempts,omitempty"`
	LeaseUntil     *time.Time `json:"lease_until,omitempty"` // claimed by a worker until then
}

// InvestigationWrite is one write of an investigation, stored in one
// transaction: Update changes the record (nil: unchanged; an error aborts
// the whole write and is returned unchanged), then the entries Outbox
// returns for the updated record are queued and the events Events returns
// are appended in order. The functions may run more than once (writes that
// meet share a commit and a failed one is retried alone), so they must not
// have effects beyond their results.
type InvestigationWrite struct {
	Update func(*Investigation) error
	Outbox func(*Investigation) []OutboxEntry
	Events func(*Investigation) []InvestigationEvent
}

// InvestigationService stores investigations.
//
// GetInvestigation returns ENOTFOUND for an unknown id.
// FinishInvestigation applies fn to the record and, in the same
// transaction, writes the outbox entries that outbox (if not nil) returns
// for the updated record, so a finished investigation is never without its
// deliveries. UpdateInvestigation returns the updated record; fn may return
// an error to abort without writing.
type InvestigationService interface {
	// CreateInvestigation stores inv and, in the same transaction, events
	// (their sequence numbers assigned in order).
	CreateInvestigation(ctx context.Context, inv *Investigation, events ...InvestigationEvent) error
	GetInvestigation(ctx context.Context, id string) (*Investigation, error)
	UpdateInvestigation(ctx context.Context, id string, fn func(*Investigation) error) (*Investigation, error)
	FinishInvestigation(ctx context.Context, id string, fn func(*Investigation) error, outbox func(*Investigation) []OutboxEntry) (*Investigation, error)
	// WriteInvestigation is the general write: the update, its outbox
	// entries and its events in one transaction (see InvestigationWrite).
	WriteInvestigation(ctx context.Context, id string, w InvestigationWrite) (*Investigation, error)
	ListInvestigations(ctx context.Context, f InvestigationFilter) (list []*Investigation, total int, err error)
	AppendInvestigationEvent(ctx context.Context, id string, ev InvestigationEvent) (uint64, error)
	InvestigationEvents(ctx context.Context, id string, afterSeq uint64) ([]InvestigationEvent, error)
	// UnfinishedInvestigations returns pending and running records, oldest
	// first, for restart recovery.
	UnfinishedInvestigations(ctx context.Context) ([]*Investigation, error)
	// DeleteInvestigationsBefore removes final investigations created before t
	// (retention) and returns how many were removed.
	DeleteInvestigationsBefore(ctx context.Context, t time.Time) (int, error)
}
