package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/a2a"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/agent/toolserver"
	"github.com/rootcause/rootcause/db"
)

// ToolServerAdmin is what the admin tool-server routes need;
// *toolserver.Registry implements it.
type ToolServerAdmin interface {
	Status(ctx context.Context) ([]toolserver.Status, error)
	Refresh(ctx context.Context, server string) ([]toolserver.ToolInfo, error)
}

// a2aWait bounds one investigation run for an A2A task.
const a2aWait = time.Hour

func (s *Server) registerToolServerRoutes() {
	s.handle(http.MethodGet, "/api/v1/admin/tool-servers", db.PermAdminRead, rateRead, s.getToolServers)
	s.handle(http.MethodPost, "/api/v1/admin/tool-servers/:name/refresh", db.PermAdminWrite, rateWrite, s.postToolServerRefresh)
	s.handlePublic(http.MethodGet, a2a.CardPath, s.getAgentCard)
	s.handle(http.MethodPost, a2a.EndpointPath, db.PermTeamRead, rateRun, s.postA2A)
}

func (s *Server) toolServers() (ToolServerAdmin, error) {
	if s.cfg.ToolServers == nil {
		return nil, db.Errorf(db.EUNAVAILABLE, "tool servers are not enabled on this server")
	}
	return s.cfg.ToolServers, nil
}

type toolServerView struct {
	Name      string         `json:"name"`
	DefinedAt string         `json:"defined_at,omitempty"`
	Transport string         `json:"transport"`
	Enabled   bool           `json:"enabled"`
	Health    healthView     `json:"health"`
	Tools     []toolInfoView `json:"tools"`
}

type healthView struct {
	OK        bool       `json:"ok"`
	CheckedAt *time.Time `json:"checked_at"`
	Error     string     `json:"error,omitempty"`
	ToolCount int        `json:"tool_count"`
}

type toolInfoView struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	ReadOnly    bool            `json:"read_only"`
}

func viewOf(st toolserver.Status) toolServerView {
	v := toolServerView{Name: st.Name, DefinedAt: st.DefinedAt, Transport: st.Transport, Enabled: st.Enabled, Tools: []toolInfoView{}}
	if st.Health != nil {
		at := st.Health.CheckedAt.UTC()
		v.Health = healthView{OK: st.Health.OK, CheckedAt: &at, Error: st.Health.Error, ToolCount: st.Health.Tools}
	}
	for _, t := range st.Tools {
		v.Tools = append(v.Tools, toolInfoView{Name: t.Name, Description: t.Description, Parameters: t.Parameters, ReadOnly: t.ReadOnly})
	}
	return v
}

func (s *Server) getToolServers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	ts, err := s.toolServers()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	list, err := ts.Status(ctx)
	if err != nil {
		return err
	}
	out := make([]toolServerView, 0, len(list))
	for _, st := range list {
		out = append(out, viewOf(st))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"tool_servers": out})
}

func (s *Server) postToolServerRefresh(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	ts, err := s.toolServers()
	if err != nil {
		return err
	}
	name := ps.ByName("name")
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	_, rerr := ts.Refresh(ctx, name)
	list, err := ts.Status(ctx)
	if err != nil {
		return err
	}
	for _, st := range list {
		if st.Name == name {
			// A failed discovery is reported in health, not as an HTTP error:
			// the refresh itself was carried out.
			return writeJSON(w, http.StatusOK, viewOf(st))
		}
	}
	_ = rerr // reported in the status, or the server is unknown
	return db.Errorf(db.ENOTFOUND, "tool server %q is not configured under tool_servers", name)
}

// getAgentCard serves rootcause's A2A agent card. It is public (agent
// cards are discovery documents and hold no secrets); the endpoint it
// names requires a rootcause token.
func (s *Server) getAgentCard(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	base := s.cfg.PublicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return writeJSON(w, http.StatusOK, a2a.Card(base, s.version))
}

type a2aTeamKey struct{}

// postA2A serves A2A JSON-RPC: each message/send becomes a planner
// investigation of the caller's team (a team token, or an admin token with
// ?team=), answered with its summary and root cause.
func (s *Server) postA2A(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if _, err := s.runtime(); err != nil {
		return err
	}
	team, err := investigationScope(r, false)
	if err != nil {
		return err
	}
	// Tasks are kept per team in the database: another team's task id is
	// "task not found", and nothing is done to it.
	s.a2aOnce.Do(func() { s.a2aHandler = a2a.NewStoredHandler(&a2aService{s: s}, teamTasks{s.a2aTasks()}, s.log) })
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	body, ok, err := readJSONRPCBody(w, r)
	if err != nil || !ok {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	s.a2aHandler.ServeHTTP(jsonContentType{w}, r.WithContext(context.WithValue(r.Context(), a2aTeamKey{}, team)))
	return nil
}

// a2aService runs A2A tasks as investigations.
type a2aService struct {
	s     *Server
	tasks sync.Map // task id → a2aTask
}

type a2aTask struct{ team, id string }

func (a *a2aService) Investigate(ctx context.Context, taskID, message string, mctx map[string]string) (*a2a.Outcome, error) {
	rt, err := a.s.runtime()
	if err != nil {
		return nil, err
	}
	team, _ := ctx.Value(a2aTeamKey{}).(string)
	p := PrincipalFrom(ctx)
	if team == "" || p == nil {
		return nil, a2a.ErrNoTeam
	}
	if mctx != nil {
		for k := range mctx {
			if !isContextKey(k) {
				delete(mctx, k)
			}
		}
	}
	inv, err := rt.Submit(ctx, agent.SubmitRequest{Team: team, RequestedBy: p.ID, AgentName: tools.AgentPlanner, Message: message, Context: mctx})
	if err != nil {
		return nil, err
	}
	a2a.Started(ctx, inv.ID)
	a.tasks.Store(taskID, a2aTask{team: team, id: inv.ID})
	defer a.tasks.Delete(taskID)
	wctx, cancel := context.WithTimeout(ctx, a2aWait)
	defer cancel()
	inv, err = rt.Wait(wctx, inv.ID)
	if err != nil {
		return nil, err
	}
	return outcomeOf(inv), nil
}

// Outcome is the outcome of the caller's team's investigation id now
// (a2a.Reconciler): an A2A task the server restarted under reads as it.
func (a *a2aService) Outcome(ctx context.Context, id string) (*a2a.Outcome, bool, error) {
	rt, err := a.s.runtime()
	if err != nil {
		return nil, false, err
	}
	team, _ := ctx.Value(a2aTeamKey{}).(string)
	inv, err := rt.Get(ctx, team, id)
	if err != nil {
		return nil, false, err
	}
	switch inv.Status {
	case db.StatusCompleted, db.StatusFailed, db.StatusCancelled:
		return outcomeOf(inv), true, nil
	}
	return nil, false, nil
}

// outcomeOf is a final investigation as an A2A task reports it.
func outcomeOf(inv *db.Investigation) *a2a.Outcome {
	out := &a2a.Outcome{InvestigationID: inv.ID, Status: string(inv.Status)}
	switch inv.Status {
	case db.StatusCompleted:
		if inv.Result != nil {
			out.Summary = inv.Result.Summary
			out.RootCause = inv.Result.RootCause.Description
			if b, err := json.Marshal(inv.Result); err == nil {
				var m map[string]any
				if json.Unmarshal(b, &m) == nil {
					out.Data = map[string]any{"investigation_id": inv.ID, "result": m, "tools_used": nonNil(inv.ToolsUsed)}
				}
			}
		}
	case db.StatusFailed, db.StatusCancelled:
		if inv.Error != nil {
			out.Error = inv.Error.Code + ": " + inv.Error.Message
		}
	default:
		out.Status = "failed"
		out.Error = "the investigation did not finish within " + a2aWait.String()
	}
	return out
}

func (a *a2aService) Cancel(ctx context.Context, taskID string) error {
	v, ok := a.tasks.Load(taskID)
	if !ok {
		return nil
	}
	rt, err := a.s.runtime()
	if err != nil {
		return err
	}
	t := v.(a2aTask)
	if team, _ := ctx.Value(a2aTeamKey{}).(string); team != t.team {
		return a2a.ErrTaskNotFound // another team's task: as if missing
	}
	_, err = rt.Cancel(ctx, t.team, t.id)
	return err
}

func isContextKey(k string) bool {
	for _, c := range agent.ContextKeys {
		if strings.EqualFold(c, k) && c == k {
			return true
		}
	}
	return false
}
