package a2a

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// EndpointPath is where rootcause serves A2A JSON-RPC.
const EndpointPath = "/api/v1/a2a"

// CardPath is where rootcause serves its agent card.
const CardPath = a2asrv.WellKnownAgentCardPath

// Outcome is a finished investigation as a peer sees it.
type Outcome struct {
	InvestigationID string
	Status          string // completed, failed, cancelled
	Summary         string
	RootCause       string
	Data            map[string]any // the result object (JSON), for the data part
	Error           string
}

// Service runs investigations for A2A tasks. ctx carries the values of
// the HTTP request (the authenticated caller) into the task.
type Service interface {
	// Investigate runs an investigation for the task's message and returns
	// when it is final.
	Investigate(ctx context.Context, taskID, message string, context map[string]string) (*Outcome, error)
	// Cancel cancels the investigation of a task (tasks/cancel).
	Cancel(ctx context.Context, taskID string) error
}

// Reconciler is an optional method of a Service: the outcome of an
// investigation now, and whether it is final. A stored task that no
// execution of this process is running (the server restarted under it)
// reads as its investigation does: completed, failed or cancelled with it,
// or still working while the investigation, re-queued, runs again.
type Reconciler interface {
	Outcome(ctx context.Context, investigationID string) (out *Outcome, final bool, err error)
}

type startedKey struct{}

// Started tells the task of ctx which investigation it runs (call it from
// Service.Investigate once the investigation exists): the id is recorded in
// the task, so that a task outliving its execution can be reconciled.
func Started(ctx context.Context, investigationID string) {
	if f, ok := ctx.Value(startedKey{}).(func(string)); ok {
		f(investigationID)
	}
}

// MetaInvestigationID is the status-message metadata key holding the
// investigation a task runs.
const MetaInvestigationID = "rootcause_investigation_id"

// Card returns rootcause's agent card; baseURL is the public base URL of
// the API (the JSON-RPC endpoint is baseURL + EndpointPath).
func Card(baseURL, version string) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               "rootcause",
		Description:        "Investigates production incidents: give it a symptom (alert, error, latency) and optional context (service, environment, namespace, time_window); it answers with a summary and the probable root cause.",
		URL:                strings.TrimRight(baseURL, "/") + EndpointPath,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion:    "0.3.0",
		Version:            version,
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Capabilities:       a2a.AgentCapabilities{},
		SecuritySchemes: a2a.NamedSecuritySchemes{
			"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "A rootcause team token (or admin token with ?team=)."},
		},
		Security: []a2a.SecurityRequirements{{"bearer": a2a.SecuritySchemeScopes{}}},
		Skills: []a2a.AgentSkill{{
			ID:          "investigate",
			Name:        "Investigate an incident",
			Description: "Runs the planner over the team's data sources and returns the summary and root cause.",
			Tags:        []string{"incident", "root-cause", "sre"},
			Examples:    []string{"checkout latency p99 doubled since 14:00 in prod"},
		}},
	}
}

// NewHandler returns the A2A JSON-RPC handler (message/send, tasks/get,
// tasks/cancel) whose tasks are investigations run by svc. Authentication
// is the caller's: mount it behind rootcause's token check.
func NewHandler(svc Service, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := a2asrv.NewHandler(&executor{svc: svc}, a2asrv.WithLogger(logger))
	return a2asrv.NewJSONRPCHandler(h)
}

type executor struct {
	svc  Service
	live *taskStore // nil: no record of running tasks
}

func (e *executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) (err error) {
	if e.live != nil {
		// Running until its final state is saved (taskStore.Save), or
		// until Execute fails without one.
		e.live.begin(rc.TaskID)
		defer func() {
			if err != nil {
				e.live.end(rc.TaskID)
			}
		}()
	}
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateSubmitted, nil)); err != nil {
			return err
		}
	}
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}
	var text string
	var msgCtx map[string]string
	if rc.Message != nil {
		t, data := partsOf(rc.Message.Parts)
		text = strings.TrimSpace(t)
		for _, d := range data {
			if c, ok := d["context"].(map[string]any); ok {
				msgCtx = map[string]string{}
				for k, v := range c {
					if s, ok := v.(string); ok {
						msgCtx[k] = s
					}
				}
			}
		}
	}
	final := func(state a2a.TaskState, msg string) error {
		ev := a2a.NewStatusUpdateEvent(rc, state, a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: msg}))
		ev.Final = true
		return q.Write(ctx, ev)
	}
	if text == "" {
		return final(a2a.TaskStateRejected, "the message has no text: send the incident question as a text part")
	}
	ictx := context.WithValue(ctx, startedKey{}, func(id string) {
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: "investigation " + id + " started"})
		msg.Metadata = map[string]any{MetaInvestigationID: id}
		_ = q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, msg))
	})
	out, err := e.svc.Investigate(ictx, string(rc.TaskID), text, msgCtx)
	if err != nil {
		return final(a2a.TaskStateFailed, "the investigation could not start: "+err.Error())
	}
	parts := a2a.ContentParts{a2a.TextPart{Text: answerText(out)}}
	if out.Data != nil {
		parts = append(parts, a2a.DataPart{Data: out.Data})
	}
	art := a2a.NewArtifactEvent(rc, parts...)
	art.Artifact.Name = "investigation " + out.InvestigationID
	if err := q.Write(ctx, art); err != nil {
		return err
	}
	switch out.Status {
	case "completed":
		return final(a2a.TaskStateCompleted, answerText(out))
	case "cancelled":
		return final(a2a.TaskStateCanceled, "the investigation was cancelled")
	default:
		return final(a2a.TaskStateFailed, fmt.Sprintf("investigation %s failed: %s", out.InvestigationID, out.Error))
	}
}

func answerText(o *Outcome) string {
	var sb strings.Builder
	if o.Summary != "" {
		sb.WriteString(o.Summary)
	}
	if o.RootCause != "" {
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString("Root cause: " + o.RootCause)
	}
	if sb.Len() == 0 && o.Error != "" {
		sb.WriteString(o.Error)
	}
	if o.InvestigationID != "" {
		sb.WriteString("\n(rootcause investigation " + o.InvestigationID + ")")
	}
	return sb.String()
}

func (e *executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if err := e.svc.Cancel(ctx, string(rc.TaskID)); err != nil {
		return err
	}
	ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// ErrNoTeam is returned by an Investigator when the caller has no team.
var ErrNoTeam = errors.New("no team in scope: use a team token, or an admin token with ?team=")
