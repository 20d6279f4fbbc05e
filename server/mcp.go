package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/db"
)

// rootcause as an MCP server (beyond the spec): the tools below let an
// assistant run, follow and list investigations and read the effective
// config. The same tools are served two ways:
//
//   - POST /api/v1/mcp on the API server (streamable HTTP, stateless), acting
//     as the authenticated principal through the server's own runtime and
//     config (mcpLocal);
//   - `rootcause mcp` over stdio, calling a rootcause server's API with the
//     CLI's client (cmd/mcp.go implements MCPBackend over HTTP).

// MCP tool names.
const (
	MCPToolRun         = "run_investigation"
	MCPToolGet         = "get_investigation"
	MCPToolList        = "list_investigations"
	MCPToolEffective   = "get_effective_config"
	DefaultMCPWait     = 60 * time.Second
	MaxMCPWait         = 300 * time.Second
	mcpListDefault     = 20
	mcpInstructions    = "rootcause investigates production incidents. Start an investigation with run_investigation (agent_name planner delegates to the specialist agents); if it is still running when the wait ends, poll it with get_investigation. Results carry a summary, a root cause with confidence and evidence, a timeline and recommendations."
	mcpImplementation  = "rootcause"
	mcpMaxRequestBytes = 1 << 20
)

// MCPRunRequest is a run_investigation call.
type MCPRunRequest struct {
	Team      string
	AgentName string
	Message   string
	Context   map[string]string
}

// MCPBackend is the rootcause API the MCP tools call. Errors should carry
// the API's error code (db.Error in-process, an API error over HTTP); the
// tools report them to the model as tool errors.
type MCPBackend interface {
	// Run submits an investigation and waits up to wait for it to end; it
	// returns the status answer (spec 4.2) at that moment.
	Run(ctx context.Context, req MCPRunRequest, wait time.Duration) (map[string]any, error)
	// Status returns the status answer of one investigation.
	Status(ctx context.Context, team, id string) (map[string]any, error)
	// List returns the investigations answer: investigations and pagination.
	List(ctx context.Context, team, status string, limit int) (map[string]any, error)
	// Effective returns the team's effective config.
	Effective(ctx context.Context, team string) (map[string]any, error)
}

// Inputs of the MCP tools. Team is for admin credentials, which are not
// bound to one team; a team token acts on its own team only.

type mcpRunInput struct {
	AgentName   string            `json:"agent_name" jsonschema:"the agent to run: planner (delegates to specialists), investigation_agent, k8s_agent, aws_agent, metrics_agent, coding_agent, or a custom agent of the team"`
	Message     string            `json:"message" jsonschema:"the question or incident description, at most 16 KiB"`
	Context     map[string]string `json:"context,omitempty" jsonschema:"optional context: service, environment, namespace, severity, related_alert, time_window, hint"`
	WaitSeconds *int              `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the result, 0 to 300 seconds (default 60); a run still going on is returned with its status to poll with get_investigation"`
	Team        string            `json:"team,omitempty" jsonschema:"the team, for admin credentials only"`
}

type mcpGetInput struct {
	InvestigationID string `json:"investigation_id" jsonschema:"the id run_investigation or list_investigations returned"`
	Team            string `json:"team,omitempty" jsonschema:"the team, for admin credentials only (optional)"`
}

type mcpListInput struct {
	Status string `json:"status,omitempty" jsonschema:"only investigations in this status: pending, running, completed, failed or cancelled"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many, newest first, 1 to 100 (default 20)"`
	Team   string `json:"team,omitempty" jsonschema:"the team, for admin credentials only"`
}

type mcpConfigInput struct {
	Team string `json:"team,omitempty" jsonschema:"the team, for admin credentials only"`
}

// NewMCPServer returns an MCP server whose tools call b. version is the
// rootcause version reported to clients.
func NewMCPServer(b MCPBackend, version string) *mcp.Server {
	if version == "" {
		version = "dev"
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: mcpImplementation, Title: "rootcause incident investigations", Version: version},
		&mcp.ServerOptions{Instructions: mcpInstructions})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{Name: MCPToolRun, Title: "Run an investigation",
		Description: "Start a rootcause investigation of a production incident and wait for its result (read-only: agents only read evidence). Returns the investigation's status: completed with result and tools_used, failed with error, or still pending/running with its investigation_id.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in mcpRunInput) (*mcp.CallToolResult, map[string]any, error) {
		wait := DefaultMCPWait
		if in.WaitSeconds != nil {
			if *in.WaitSeconds < 0 || time.Duration(*in.WaitSeconds)*time.Second > MaxMCPWait {
				return nil, nil, fmt.Errorf("wait_seconds: must be between 0 and %d", int(MaxMCPWait/time.Second))
			}
			wait = time.Duration(*in.WaitSeconds) * time.Second
		}
		out, err := b.Run(ctx, MCPRunRequest{Team: in.Team, AgentName: in.AgentName, Message: in.Message, Context: in.Context}, wait)
		return nil, out, mcpError(err)
	})
	mcp.AddTool(srv, &mcp.Tool{Name: MCPToolGet, Title: "Get an investigation",
		Description: "The status of one investigation: progress while it runs, then its result and tools_used, or its error.",
		Annotations: readOnly,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in mcpGetInput) (*mcp.CallToolResult, map[string]any, error) {
		if in.InvestigationID == "" {
			return nil, nil, errors.New("investigation_id is required")
		}
		out, err := b.Status(ctx, in.Team, in.InvestigationID)
		return nil, out, mcpError(err)
	})
	mcp.AddTool(srv, &mcp.Tool{Name: MCPToolList, Title: "List investigations",
		Description: "The team's investigations, newest first, optionally filtered by status.",
		Annotations: readOnly,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in mcpListInput) (*mcp.CallToolResult, map[string]any, error) {
		limit := in.Limit
		if limit == 0 {
			limit = mcpListDefault
		}
		if limit < 1 || limit > maxListLimit {
			return nil, nil, fmt.Errorf("limit: must be between 1 and %d", maxListLimit)
		}
		out, err := b.List(ctx, in.Team, in.Status, limit)
		return nil, out, mcpError(err)
	})
	mcp.AddTool(srv, &mcp.Tool{Name: MCPToolEffective, Title: "Get the effective config",
		Description: "The team's effective configuration (merged down the organization tree): agents, tools, tool servers, feature flags. Secrets appear only as references.",
		Annotations: readOnly,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in mcpConfigInput) (*mcp.CallToolResult, map[string]any, error) {
		out, err := b.Effective(ctx, in.Team)
		return nil, out, mcpError(err)
	})
	return srv
}

func ptr[T any](v T) *T { return &v }

// mcpError makes err a tool error the model can act on: "code: message".
func mcpError(err error) error {
	if err == nil {
		return nil
	}
	if code := db.ErrorCode(err); code != "" && code != db.EINTERNAL {
		return fmt.Errorf("%s: %s", code, db.ErrorMessage(err))
	}
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) && coded.ErrorCode() != "" {
		return fmt.Errorf("%s: %s", coded.ErrorCode(), err.Error())
	}
	return err
}

func (s *Server) registerMCPRoutes() {
	s.handle(http.MethodPost, "/api/v1/mcp", db.PermTeamRead, rateRead, s.postMCP, withMaxBody(mcpMaxRequestBytes))
}

// postMCP serves the MCP streamable-HTTP transport, stateless: each POST is
// one JSON-RPC message on a temporary session, so every request is
// authenticated and rate-limited on its own and no session outlives its
// caller's credentials. The tools act as the authenticated principal.
func (s *Server) postMCP(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	p := PrincipalFrom(r.Context())
	// Transport errors (Content-Type, size) are the API's error body;
	// a body that breaks the JSON rules is a JSON-RPC parse error.
	body, ok, err := readJSONRPCBody(w, r)
	if err != nil || !ok {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	srv := NewMCPServer(&mcpLocal{s: s, p: p}, s.cfg.Version)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: mcpMaxRequestBytes})
	pw := &plainErrors{w: w, r: r}
	h.ServeHTTP(pw, r)
	pw.finish()
	return nil
}

// mcpLocal is the in-process backend of /api/v1/mcp: the server's own
// runtime and config, with the scope rules of the REST routes.
type mcpLocal struct {
	s *Server
	p *Principal
}

// safe keeps API errors and cancellations and hides anything else (an
// internal error's text is for the log, not the caller).
func (m *mcpLocal) safe(err error) error {
	if err == nil {
		return nil
	}
	var de *db.Error
	if errors.As(err, &de) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	m.s.log.Error("mcp tool call", "principal", m.p.ID, "err", err)
	return errors.New("internal error")
}

// scope is investigationScope for a principal and a requested team.
func (m *mcpLocal) scope(requested string, allowAll bool) (string, error) {
	if m.p != nil && m.p.Team == "" && requested == "" && allowAll {
		if !m.p.IsAdmin() {
			return "", db.Errorf(db.EFORBIDDEN, "no team in scope")
		}
		return "", nil
	}
	return teamScope(m.p, requested)
}

func (m *mcpLocal) Run(ctx context.Context, req MCPRunRequest, wait time.Duration) (map[string]any, error) {
	rt, err := m.s.runtime()
	if err != nil {
		return nil, m.safe(err)
	}
	team, err := m.scope(req.Team, false)
	if err != nil {
		return nil, m.safe(err)
	}
	// Starting an investigation costs a run like POST /api/v1/agents/run;
	// the route itself is charged as a read.
	if m.p.Kind != KindLocal {
		if err := m.s.limits.charge(discardHeaders{}, m.p.ID, rateRun); err != nil {
			m.s.cfg.Metrics.RateLimited(rateRun.String())
			return nil, m.safe(err)
		}
	}
	inv, err := rt.Submit(ctx, agent.SubmitRequest{Team: team, RequestedBy: m.p.ID, AgentName: req.AgentName, Message: req.Message, Context: req.Context})
	if err != nil {
		return nil, m.safe(err)
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		got, werr := rt.Wait(wctx, inv.ID)
		cancel()
		if werr == nil {
			inv = got
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if !db.IsFinal(inv.Status) {
		// Wait ends with the record as it was; read it fresh.
		if cur, err := rt.Get(ctx, team, inv.ID); err == nil {
			inv = cur
		}
	}
	return StatusView(inv, m.s.now()), nil
}

func (m *mcpLocal) Status(ctx context.Context, team, id string) (map[string]any, error) {
	rt, err := m.s.runtime()
	if err != nil {
		return nil, m.safe(err)
	}
	team, err = m.scope(team, true)
	if err != nil {
		return nil, m.safe(err)
	}
	inv, err := rt.Get(ctx, team, id)
	if err != nil {
		return nil, m.safe(err)
	}
	return StatusView(inv, m.s.now()), nil
}

func (m *mcpLocal) List(ctx context.Context, team, status string, limit int) (map[string]any, error) {
	rt, err := m.s.runtime()
	if err != nil {
		return nil, m.safe(err)
	}
	team, err = m.scope(team, false)
	if err != nil {
		return nil, m.safe(err)
	}
	switch status {
	case "", db.StatusPending, db.StatusRunning, db.StatusCompleted, db.StatusFailed, db.StatusCancelled:
	default:
		return nil, &db.Error{Code: db.EINVALID, Field: "status",
			Message: fmt.Sprintf("status: must be one of pending, running, completed, failed, cancelled (got %q)", truncateParam(status))}
	}
	list, total, err := rt.List(ctx, db.InvestigationFilter{Team: team, Status: status, Limit: limit})
	if err != nil {
		return nil, m.safe(err)
	}
	items := make([]any, 0, len(list))
	for _, inv := range list {
		items = append(items, investigationItem(inv))
	}
	return map[string]any{"investigations": items,
		"pagination": map[string]any{"total": total, "limit": limit, "offset": 0}}, nil
}

func (m *mcpLocal) Effective(ctx context.Context, team string) (map[string]any, error) {
	team, err := teamScope(m.p, team)
	if err != nil {
		return nil, m.safe(err)
	}
	b, kind, err := m.s.effective(ctx, team)
	if err != nil {
		if db.ErrorCode(err) == db.ENOTFOUND {
			return nil, &db.Error{Code: db.ENOTFOUND, Field: "team", Message: fmt.Sprintf("team %q not found", team)}
		}
		return nil, m.safe(err)
	}
	if kind != db.KindTeam {
		return nil, &db.Error{Code: db.EINVALID, Field: "team", Message: fmt.Sprintf("%q is a %s, not a team", team, kind)}
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding effective config: %w", err)
	}
	return out, nil
}

// discardHeaders is a ResponseWriter for rate-limit charges made inside a
// response already under way: their headers are dropped.
type discardHeaders struct{}

func (discardHeaders) Header() http.Header         { return http.Header{} }
func (discardHeaders) Write(b []byte) (int, error) { return len(b), nil }
func (discardHeaders) WriteHeader(int)             {}
