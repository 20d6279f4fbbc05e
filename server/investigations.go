package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
)

// InvestigationRuntime is what the agent API needs of the investigation
// runtime; *agent.Runtime implements it.
type InvestigationRuntime interface {
	Submit(ctx context.Context, req agent.SubmitRequest) (*db.Investigation, error)
	Get(ctx context.Context, team, id string) (*db.Investigation, error)
	List(ctx context.Context, f db.InvestigationFilter) ([]*db.Investigation, int, error)
	Cancel(ctx context.Context, team, id string) (*db.Investigation, error)
	Wait(ctx context.Context, id string) (*db.Investigation, error)
	Events(ctx context.Context, id string, after uint64) ([]db.InvestigationEvent, error)
	Changed(id string) <-chan struct{}
	Agents(ctx context.Context, team string) (map[string]agent.Agent, *tools.Catalog, error)
}

// DefaultSyncWait is how long a synchronous run waits before answering 202
// as an asynchronous one would (contract section 2).
const DefaultSyncWait = 120 * time.Second

// List limits (contract section 2).
const (
	defaultListLimit = 20
	maxListLimit     = 100
)

func (s *Server) registerInvestigationRoutes() {
	s.handle(http.MethodPost, "/api/v1/agents/run", db.PermTeamRead, rateRun, s.postRun)
	s.handle(http.MethodGet, "/api/v1/agents", db.PermTeamRead, rateRead, s.getAgents)
	s.handle(http.MethodGet, "/api/v1/agents/investigations", db.PermTeamRead, rateRead, s.getInvestigations)
	s.handle(http.MethodGet, "/api/v1/agents/status/:id", db.PermTeamRead, rateRead, s.getStatus)
	s.handle(http.MethodPost, "/api/v1/agents/status/:id/cancel", db.PermTeamRead, rateWrite, s.postCancel)
	s.handle(http.MethodGet, "/api/v1/agents/status/:id/events", db.PermTeamRead, rateRead, s.getEvents)
}

func (s *Server) runtime() (InvestigationRuntime, error) {
	if s.cfg.Investigations == nil {
		return nil, db.Errorf(db.EUNAVAILABLE, "investigations are not enabled on this server")
	}
	return s.cfg.Investigations, nil
}

// scopedRuntime returns the runtime and the team the request acts on (see
// investigationScope).
func (s *Server) scopedRuntime(r *http.Request, allowAll bool) (InvestigationRuntime, string, error) {
	rt, err := s.runtime()
	if err != nil {
		return nil, "", err
	}
	team, err := investigationScope(r, allowAll)
	if err != nil {
		return nil, "", err
	}
	// An admin names the team: it must be one, like on the config routes.
	if p := PrincipalFrom(r.Context()); team != "" && p != nil && p.Team == "" {
		n, err := s.cfg.Nodes.FindNode(r.Context(), team)
		if err != nil {
			return nil, "", err
		}
		if n.Kind != db.KindTeam {
			return nil, "", &db.Error{Code: db.EINVALID, Field: "team", Message: fmt.Sprintf("team: %q is a %s, not a team", team, n.Kind)}
		}
	}
	return rt, team, nil
}

// investigationScope returns the team whose investigations the caller acts
// on: its own for a team principal; for admins the ?team= parameter, or ""
// (every team) where allowAll.
func investigationScope(r *http.Request, allowAll bool) (string, error) {
	p := PrincipalFrom(r.Context())
	requested := r.URL.Query().Get("team")
	if p != nil && p.Team == "" && requested == "" && allowAll {
		if !p.IsAdmin() {
			return "", db.Errorf(db.EFORBIDDEN, "no team in scope")
		}
		return "", nil
	}
	return teamScope(p, requested)
}

type runRequest struct {
	AgentName *string           `json:"agent_name"`
	Message   *string           `json:"message"`
	Context   map[string]string `json:"context"`
	Async     bool              `json:"async"`
}

func (s *Server) postRun(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	rt, team, err := s.scopedRuntime(r, false)
	if err != nil {
		return err
	}
	var req runRequest
	if err := decodeJSON(w, r, &req, strictFields); err != nil {
		return err
	}
	if req.AgentName == nil {
		return missingField("agent_name")
	}
	if req.Message == nil {
		return missingField("message")
	}
	p := PrincipalFrom(r.Context())
	inv, err := rt.Submit(r.Context(), agent.SubmitRequest{
		Team: team, RequestedBy: p.ID, AgentName: *req.AgentName, Message: *req.Message, Context: req.Context,
	})
	if err != nil {
		return err
	}
	if req.Async {
		return writeJSON(w, http.StatusAccepted, acceptedView(inv))
	}
	wait := s.cfg.SyncWait
	if wait <= 0 {
		wait = DefaultSyncWait
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	inv, err = rt.Wait(ctx, inv.ID)
	if err != nil {
		return err
	}
	if r.Context().Err() != nil {
		return r.Context().Err() // the client went away; the run continues
	}
	switch inv.Status {
	case db.StatusCompleted:
		return writeJSON(w, http.StatusOK, map[string]any{
			"investigation_id": inv.ID,
			"status":           inv.Status,
			"duration_seconds": duration(inv.StartedAt, inv.CompletedAt),
			"result":           inv.Result,
			"tools_used":       nonNil(inv.ToolsUsed),
			"created_at":       inv.CreatedAt.UTC(),
		})
	case db.StatusFailed:
		code, msg := db.EINTERNAL, "the investigation failed"
		if inv.Error != nil {
			code, msg = inv.Error.Code, inv.Error.Message
		}
		return writeFailedRun(w, r, http.StatusBadGateway, code, msg, inv.ID)
	case db.StatusCancelled:
		return writeFailedRun(w, r, http.StatusConflict, db.ECANCELLED, "the investigation was cancelled", inv.ID)
	default: // still pending or running after sync_wait
		return writeJSON(w, http.StatusAccepted, acceptedView(inv))
	}
}

// failedRunBody is the error body of a synchronous run that did not
// complete: the standard error plus the investigation's id.
type failedRunBody struct {
	Error failedRunDetail `json:"error"`
}

type failedRunDetail struct {
	ErrorDetail
	InvestigationID string `json:"investigation_id"`
}

func writeFailedRun(w http.ResponseWriter, r *http.Request, status int, code, msg, id string) error {
	return writeJSON(w, status, failedRunBody{Error: failedRunDetail{
		ErrorDetail:     ErrorDetail{Code: code, Message: msg, RequestID: RequestID(r.Context())},
		InvestigationID: id,
	}})
}

func acceptedView(inv *db.Investigation) map[string]any {
	return map[string]any{
		"investigation_id": inv.ID,
		"status":           inv.Status,
		"poll_url":         "/api/v1/agents/status/" + inv.ID,
		"created_at":       inv.CreatedAt.UTC(),
	}
}

func (s *Server) getStatus(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	rt, team, err := s.scopedRuntime(r, true)
	if err != nil {
		return err
	}
	inv, err := rt.Get(r.Context(), team, ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, StatusView(inv, s.now()))
}

// StatusView is the status answer of inv in the shape of its state (spec
// 4.2), plus created_at, cancelled_at and usage where they apply.
func StatusView(inv *db.Investigation, now time.Time) map[string]any {
	v := map[string]any{
		"investigation_id": inv.ID,
		"status":           inv.Status,
		"agent":            inv.Agent,
		"message":          inv.Message,
		"created_at":       inv.CreatedAt.UTC(),
	}
	if inv.StartedAt != nil {
		v["started_at"] = inv.StartedAt.UTC()
	}
	switch inv.Status {
	case db.StatusPending:
		v["progress"] = db.Progress{CurrentStep: "queued"}
	case db.StatusRunning:
		p := db.Progress{CurrentStep: "starting"}
		if inv.Progress != nil {
			p = *inv.Progress
		}
		v["progress"] = p
		if inv.StartedAt != nil {
			v["elapsed_seconds"] = roundSeconds(now.Sub(*inv.StartedAt))
		}
	case db.StatusCompleted:
		v["result"] = inv.Result
		v["tools_used"] = nonNil(inv.ToolsUsed)
		v["completed_at"] = inv.CompletedAt.UTC()
		v["duration_seconds"] = duration(inv.StartedAt, inv.CompletedAt)
	case db.StatusFailed:
		e := db.RunError{Code: db.EINTERNAL, Message: "the investigation failed"}
		if inv.Error != nil {
			e = *inv.Error
		}
		v["error"] = e
		if inv.FailedAt != nil {
			v["failed_at"] = inv.FailedAt.UTC()
		}
		if len(inv.ToolsUsed) > 0 {
			v["tools_used"] = inv.ToolsUsed
		}
	case db.StatusCancelled:
		if inv.CancelledAt != nil {
			v["cancelled_at"] = inv.CancelledAt.UTC()
		}
	}
	if inv.Usage != nil {
		v["usage"] = inv.Usage
	}
	return v
}

func (s *Server) postCancel(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	rt, team, err := s.scopedRuntime(r, true)
	if err != nil {
		return err
	}
	inv, err := rt.Cancel(r.Context(), team, ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, StatusView(inv, s.now()))
}

func (s *Server) getInvestigations(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	rt, team, err := s.scopedRuntime(r, false)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), "limit", defaultListLimit, 1, maxListLimit)
	if err != nil {
		return err
	}
	offset, err := intParam(q.Get("offset"), "offset", 0, 0, 1<<30)
	if err != nil {
		return err
	}
	status := q.Get("status")
	switch status {
	case "", db.StatusPending, db.StatusRunning, db.StatusCompleted, db.StatusFailed, db.StatusCancelled:
	default:
		return &db.Error{Code: db.EINVALID, Field: "status",
			Message: fmt.Sprintf("status: must be one of pending, running, completed, failed, cancelled (got %q)", truncateParam(status))}
	}
	list, total, err := rt.List(r.Context(), db.InvestigationFilter{Team: team, Status: status, Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	items := make([]map[string]any, 0, len(list))
	for _, inv := range list {
		items = append(items, investigationItem(inv))
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"investigations": items,
		"pagination":     map[string]int{"total": total, "limit": limit, "offset": offset},
	})
}

func (s *Server) getAgents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	rt, team, err := s.scopedRuntime(r, false)
	if err != nil {
		return err
	}
	agents, cat, err := rt.Agents(r.Context(), team)
	if err != nil {
		return err
	}
	type toolView struct {
		Name        string `json:"name"`
		Integration string `json:"integration"`
		ReadOnly    bool   `json:"read_only"`
	}
	type agentView struct {
		Name           string     `json:"name"`
		Builtin        bool       `json:"builtin"`
		Enabled        bool       `json:"enabled"`
		Prompt         string     `json:"prompt,omitempty"`
		TimeoutSeconds int        `json:"timeout_seconds,omitempty"`
		Model          string     `json:"model,omitempty"`
		Tools          []toolView `json:"tools"`
	}
	out := []agentView{}
	for _, name := range agent.SortedNames(agents) {
		a := agents[name]
		v := agentView{Name: a.Name, Builtin: a.Builtin, Enabled: a.Enabled, Prompt: a.Prompt,
			TimeoutSeconds: int(a.Timeout / time.Second), Model: a.Model, Tools: []toolView{}}
		for _, t := range a.Tools {
			tv := toolView{Name: t}
			if spec, ok := cat.Get(t); ok {
				tv.Integration, tv.ReadOnly = spec.Integration, spec.ReadOnly
			}
			v.Tools = append(v.Tools, tv)
		}
		out = append(out, v)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

// getEvents streams an investigation's events as Server-Sent Events: every
// stored event after Last-Event-ID (or ?after=), then new ones as they
// happen, ending after the final status. A comment line every 15 s keeps
// idle connections open through proxies.
//
// The stream never ends before the final status event: the runtime stores
// a final record and its status event in one transaction, and a stream
// that finds the record final reads the events once more after that read;
// should the log still lack the final status (a record finished by an
// older version), the stream sends it from the record, without an id.
func (s *Server) getEvents(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	rt, team, err := s.scopedRuntime(r, true)
	if err != nil {
		return err
	}
	id := ps.ByName("id")
	if _, err := rt.Get(r.Context(), team, id); err != nil {
		return err
	}
	after := uint64(0)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		after, _ = strconv.ParseUint(v, 10, 64)
	} else if v := r.URL.Query().Get("after"); v != "" {
		n, perr := strconv.ParseUint(v, 10, 64)
		if perr != nil {
			return &db.Error{Code: db.EINVALID, Field: "after", Message: "after: must be a non-negative integer"}
		}
		after = n
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	heartbeat := time.NewTicker(15 * time.Second)
	defer heartbeat.Stop()
	// send writes the events after the cursor and reports whether one of
	// them is a final status.
	send := func() (final bool, ok bool) {
		evs, err := rt.Events(r.Context(), id, after)
		if err != nil {
			return false, false // headers are sent; end the stream
		}
		for _, ev := range evs {
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, ev.Data)
			after = ev.Seq
			if ev.Type == "status" {
				var st struct {
					Status string `json:"status"`
				}
				if json.Unmarshal(ev.Data, &st) == nil && db.IsFinal(st.Status) {
					final = true
				}
			}
		}
		return final, rc.Flush() == nil
	}
	for {
		changed := rt.Changed(id)
		final, ok := send()
		if final || !ok {
			return nil
		}
		inv, err := rt.Get(r.Context(), team, id)
		if err != nil {
			return nil
		}
		if db.IsFinal(inv.Status) {
			// Final since the read above: its status event is stored too.
			if final, ok := send(); final || !ok {
				return nil
			}
			data, _ := json.Marshal(map[string]string{"status": inv.Status})
			fmt.Fprintf(w, "event: status\ndata: %s\n\n", data)
			_ = rc.Flush()
			return nil
		}
		select {
		case <-changed:
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			_ = rc.Flush()
		case <-r.Context().Done():
			return nil
		}
	}
}

func intParam(v, name string, def, lo, hi int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, &db.Error{Code: db.EINVALID, Field: name,
			Message: fmt.Sprintf("%s: must be an integer from %d to %d (got %q)", name, lo, hi, truncateParam(v))}
	}
	return n, nil
}

func truncateParam(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func duration(start, end *time.Time) float64 {
	if start == nil || end == nil {
		return 0
	}
	return roundSeconds(end.Sub(*start))
}

func roundSeconds(d time.Duration) float64 {
	return float64(d.Milliseconds()) / 1000
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

var _ InvestigationRuntime = (*agent.Runtime)(nil)

// investigationItem is an investigation as lists show it (the REST list
// and MCP's list_investigations).
func investigationItem(inv *db.Investigation) map[string]any {
	return map[string]any{
		"investigation_id": inv.ID,
		"status":           inv.Status,
		"agent":            inv.Agent,
		"message":          inv.Message,
		"created_at":       inv.CreatedAt.UTC(),
	}
}
