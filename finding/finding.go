// Package finding defines the result of an investigation (spec section 2.2)
// and the rules it must satisfy, independent of how it was produced or stored.
package finding

import (
	"fmt"
	"strings"
	"time"
)

// Priorities of a recommendation.
const (
	PriorityHigh   = "high"
	PriorityMedium = "medium"
	PriorityLow    = "low"
)

// Result is the structured finding of an investigation. The first five fields
// are the spec's; the rest are rootcause extensions (documented in
// docs/investigations.md) and are omitted when empty.
type Result struct {
	Summary         string           `json:"summary"`
	RootCause       RootCause        `json:"root_cause"`
	Timeline        []TimelineEvent  `json:"timeline"`
	AffectedSystems []string         `json:"affected_systems"`
	Recommendations []Recommendation `json:"recommendations"`

	// RuledOut lists hypotheses that were considered and rejected, with why.
	RuledOut []RuledOut `json:"ruled_out,omitempty"`
	// DataGaps names evidence that could not be consulted (integration not
	// configured, tool disabled, source unreachable).
	DataGaps []string `json:"data_gaps,omitempty"`
	// Verdict is "identified", "inconclusive" or "healthy".
	Verdict string `json:"verdict,omitempty"`
	// Notes carries remarks about how the result was produced, for example a
	// fallback from the LLM loop to the offline analyst.
	Notes []string `json:"notes,omitempty"`
	// Runbooks cites runbook sections that apply.
	Runbooks []RunbookRef `json:"runbooks,omitempty"`
	// Candidates ranks the hypotheses the engine weighed, best first (at most
	// ten). The first is the root cause; the rest are the runners-up, so a
	// reader sees what else was considered and a top-3 score can be measured.
	Candidates []Candidate `json:"candidates,omitempty"`
}

// Candidate is one ranked hypothesis: what is blamed (Subject: a service,
// workload, pod, node, database, dependency host...), by which mechanism
// (Kind, for example "oom_killed", "cpu_saturation", "latency_shift"), how
// strongly (Score, 0 to 100, comparable only within one result) and since
// when (FirstSeen, RFC 3339, empty when unknown).
type Candidate struct {
	Subject   string  `json:"subject"`
	Kind      string  `json:"kind"`
	Score     float64 `json:"score"`
	FirstSeen string  `json:"first_seen,omitempty"`
	// Evidence is a one-line reason for this candidate's place, optional.
	Evidence string `json:"evidence,omitempty"`
}

// Verdicts.
const (
	VerdictIdentified   = "identified"
	VerdictInconclusive = "inconclusive"
	VerdictHealthy      = "healthy"
)

// RootCause is the winning hypothesis. Confidence is a percentage, 0 to 100.
type RootCause struct {
	Description string   `json:"description"`
	Confidence  float64  `json:"confidence"`
	Evidence    []string `json:"evidence"`
}

// TimelineEvent is one dated event. Timestamp is RFC 3339 in UTC.
type TimelineEvent struct {
	Timestamp string `json:"timestamp"`
	Event     string `json:"event"`
}

// Recommendation is one action with a priority (high, medium, low).
type Recommendation struct {
	Priority string `json:"priority"`
	Action   string `json:"action"`
}

// RuledOut is a hypothesis that was considered and rejected.
type RuledOut struct {
	Hypothesis string `json:"hypothesis"`
	Reason     string `json:"reason"`
}

// RunbookRef cites a runbook section.
type RunbookRef struct {
	Title    string `json:"title"`
	Location string `json:"location"`
}

// Validate reports the first way r breaks the spec's shape, as an error
// naming the field (for example "root_cause.confidence: must be between 0
// and 100").
func (r *Result) Validate() error {
	if strings.TrimSpace(r.Summary) == "" {
		return fmt.Errorf("summary: must not be empty")
	}
	if strings.TrimSpace(r.RootCause.Description) == "" {
		return fmt.Errorf("root_cause.description: must not be empty")
	}
	if c := r.RootCause.Confidence; c < 0 || c > 100 || c != c {
		return fmt.Errorf("root_cause.confidence: must be between 0 and 100")
	}
	for i, e := range r.Timeline {
		if _, err := time.Parse(time.RFC3339, e.Timestamp); err != nil {
			return fmt.Errorf("timeline[%d].timestamp: must be an RFC 3339 timestamp", i)
		}
		if strings.TrimSpace(e.Event) == "" {
			return fmt.Errorf("timeline[%d].event: must not be empty", i)
		}
	}
	for i, c := range r.Candidates {
		if strings.TrimSpace(c.Subject) == "" {
			return fmt.Errorf("candidates[%d].subject: must not be empty", i)
		}
		if c.Score < 0 || c.Score > 100 || c.Score != c.Score {
			return fmt.Errorf("candidates[%d].score: must be between 0 and 100", i)
		}
		if c.FirstSeen != "" {
			if _, err := time.Parse(time.RFC3339, c.FirstSeen); err != nil {
				return fmt.Errorf("candidates[%d].first_seen: must be an RFC 3339 timestamp", i)
			}
		}
	}
	for i, rec := range r.Recommendations {
		switch rec.Priority {
		case PriorityHigh, PriorityMedium, PriorityLow:
		default:
			return fmt.Errorf("recommendations[%d].priority: must be high, medium or low", i)
		}
		if strings.TrimSpace(rec.Action) == "" {
			return fmt.Errorf("recommendations[%d].action: must not be empty", i)
		}
	}
	return nil
}

// Normalize replaces nil slices with empty ones so the JSON form always has
// arrays, as clients of the spec expect.
func (r *Result) Normalize() {
	if r.RootCause.Evidence == nil {
		r.RootCause.Evidence = []string{}
	}
	if r.Timeline == nil {
		r.Timeline = []TimelineEvent{}
	}
	if r.AffectedSystems == nil {
		r.AffectedSystems = []string{}
	}
	if r.Recommendations == nil {
		r.Recommendations = []Recommendation{}
	}
}
