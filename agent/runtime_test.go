package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
	bolt "go.etcd.io/bbolt"
)

// fakeKube stands in for a configured Kubernetes source; the test tool
// below never calls it.
type fakeKube struct{ evidence.Kubernetes }

// testCatalog has one read tool in k8s_agent's and investigation_agent's
// toolkits. Its behaviour is set per test through the context.
func testCatalog(calls *atomic.Int64, block chan struct{}) *tools.Catalog {
	return tools.NewCatalog([]tools.Tool{{
		Spec: tools.Spec{Name: "list_pods", Description: "lists pods", Parameters: json.RawMessage(`{"type":"object"}`),
			Integration: tools.IntegrationKubernetes, ReadOnly: true, Agents: []string{tools.AgentK8s, tools.AgentInvestigation}},
		Run: func(ctx context.Context, env *tools.Env, args json.RawMessage) (any, error) {
			calls.Add(1)
			if block != nil {
				select {
				case <-block:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return []string{"checkout-1"}, nil
		},
	}})
}

// engineFunc adapts a function to agent.Engine.
type engineFunc func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error)

func (f engineFunc) Investigate(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
	return f(ctx, req, run)
}

// callingEngine calls list_pods, reports a step, and answers.
var callingEngine = engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
	run.Step("listing pods", 0, 2)
	if _, err := run.Call(ctx, "list_pods", map[string]any{}); err != nil {
		return nil, err
	}
	run.Step("concluding", 1, 2)
	return &finding.Result{
		Summary:   "checkout is OOMKilled",
		RootCause: finding.RootCause{Description: "memory limit too low", Confidence: 80, Evidence: []string{"pod checkout-1 OOMKilled"}},
		Timeline:  []finding.TimelineEvent{{Timestamp: "2026-03-14T10:00:00Z", Event: "deploy"}},
	}, nil
})

type harness struct {
	store *db.DB
	rt    *agent.Runtime
	cfg   map[string]any
	calls atomic.Int64
}

func newHarness(t *testing.T, engine agent.Engine, block chan struct{}, mutate func(*agent.RuntimeConfig)) *harness {
	t.Helper()
	h := &harness{store: db.MustOpen(t)}
	h.cfg = map[string]any{}
	cat := testCatalog(&h.calls, block)
	rc := agent.RuntimeConfig{
		Store:  h.store,
		Engine: engine,
		Environment: func(ctx context.Context, team string) (*agent.Environment, error) {
			return &agent.Environment{Config: h.cfg, Catalog: cat,
				Env: &tools.Env{Sources: &evidence.Sources{Kubernetes: fakeKube{}}}}, nil
		},
		Workers:   2,
		QueueSize: 8,
	}
	if mutate != nil {
		mutate(&rc)
	}
	h.rt = agent.NewRuntime(rc)
	if err := h.rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.rt.Stop(ctx)
	})
	return h
}

func (h *harness) submit(t *testing.T, agentName string) *db.Investigation {
	t.Helper()
	inv, err := h.rt.Submit(context.Background(), agent.SubmitRequest{Team: "payments", AgentName: agentName, Message: "why is checkout failing?"})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return inv
}

func waitFinal(t *testing.T, rt *agent.Runtime, id string) *db.Investigation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inv, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !db.IsFinal(inv.Status) {
		t.Fatalf("investigation %s still %s after 10s", id, inv.Status)
	}
	return inv
}

func TestRuntimeCompletes(t *testing.T) {
	h := newHarness(t, callingEngine, nil, func(rc *agent.RuntimeConfig) {
		rc.Outbox = func(inv *db.Investigation, cfg map[string]any) []db.OutboxEntry {
			return []db.OutboxEntry{{ID: "msg_" + inv.ID, Kind: "webhook", Team: inv.Team, InvestigationID: inv.ID}}
		}
	})
	inv := h.submit(t, "k8s_agent")
	if inv.Status != db.StatusPending {
		t.Fatalf("new investigation status = %s, want pending", inv.Status)
	}
	got := waitFinal(t, h.rt, inv.ID)
	if got.Status != db.StatusCompleted {
		t.Fatalf("status = %s (%+v), want completed", got.Status, got.Error)
	}
	if got.Result == nil || got.Result.RootCause.Confidence != 80 {
		t.Fatalf("result = %+v", got.Result)
	}
	if strings.Join(got.ToolsUsed, ",") != "list_pods" {
		t.Errorf("tools_used = %v, want [list_pods]", got.ToolsUsed)
	}
	if got.StartedAt == nil || got.CompletedAt == nil || got.Progress != nil {
		t.Errorf("timestamps/progress wrong: started %v completed %v progress %+v", got.StartedAt, got.CompletedAt, got.Progress)
	}
	var a agent.Agent
	if err := json.Unmarshal(got.AgentSettings, &a); err != nil || a.Name != "k8s_agent" || len(a.Tools) != 1 {
		t.Errorf("agent settings not recorded: %s (%v)", got.AgentSettings, err)
	}
	evs, err := h.rt.Events(context.Background(), inv.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if want := "status,status,step,tool_call,step,status"; strings.Join(types, ",") != want {
		t.Errorf("events = %v, want %s", types, want)
	}
	// The outbox entry was written with the final record.
	var outbox []string
	_ = h.store.Bolt().View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("outbox")).ForEach(func(k, v []byte) error {
			outbox = append(outbox, string(v))
			return nil
		})
	})
	if len(outbox) != 1 || !strings.Contains(outbox[0], "msg_"+inv.ID) {
		t.Errorf("outbox = %v, want one entry for %s", outbox, inv.ID)
	}
}

func TestRuntimeValidation(t *testing.T) {
	h := newHarness(t, callingEngine, nil, nil)
	h.cfg["agents"] = map[string]any{"aws_agent": map[string]any{"enabled": false}}
	long := strings.Repeat("x", agent.MaxMessageBytes+1)
	tests := []struct {
		name      string
		req       agent.SubmitRequest
		code      string
		field     string
		inMessage string
	}{
		{"MissingAgent", agent.SubmitRequest{Message: "m"}, db.EINVALID, "agent_name", "required"},
		{"MissingMessage", agent.SubmitRequest{AgentName: "k8s_agent"}, db.EINVALID, "message", "required"},
		{"UnknownAgent", agent.SubmitRequest{AgentName: "nope", Message: "m"}, db.EINVALID, "agent_name", `"nope"`},
		{"DisabledAgent", agent.SubmitRequest{AgentName: "aws_agent", Message: "m"}, db.EINVALID, "agent_name", "disabled"},
		{"UnknownContextKey", agent.SubmitRequest{AgentName: "k8s_agent", Message: "m", Context: map[string]string{"colour": "red"}}, db.EINVALID, "context.colour", "colour"},
		{"OversizedMessage", agent.SubmitRequest{AgentName: "k8s_agent", Message: long}, db.ETOOLARGE, "message", "limit"},
		{"OversizedContext", agent.SubmitRequest{AgentName: "k8s_agent", Message: "m", Context: map[string]string{"hint": long[:agent.MaxContextValueBytes+1]}}, db.ETOOLARGE, "context.hint", "limit"},
		{"NoDataSource", agent.SubmitRequest{AgentName: "coding_agent", Message: "m"}, db.EINVALID, "agent_name", "no configured data source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Team = "payments"
			_, err := h.rt.Submit(context.Background(), tt.req)
			var de *db.Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *db.Error", err)
			}
			if de.Code != tt.code || de.Field != tt.field || !strings.Contains(de.Message, tt.inMessage) {
				t.Errorf("got code=%s field=%s message=%q; want %s %s containing %q", de.Code, de.Field, de.Message, tt.code, tt.field, tt.inMessage)
			}
		})
	}
	list, total, err := h.rt.List(context.Background(), db.InvestigationFilter{Team: "payments"})
	if err != nil || total != 0 || len(list) != 0 {
		t.Errorf("rejected runs were stored: %d (%v)", total, err)
	}
}

func TestRuntimeCancelReachesTools(t *testing.T) {
	block := make(chan struct{}) // never closed: the tool blocks until cancelled
	toolStopped := make(chan struct{})
	engine := engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		_, err := run.Call(ctx, "list_pods", nil)
		close(toolStopped)
		return nil, err
	})
	h := newHarness(t, engine, block, nil)
	inv := h.submit(t, "k8s_agent")
	deadline := time.Now().Add(5 * time.Second)
	for h.calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got, err := h.rt.Cancel(context.Background(), "payments", inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != db.StatusCancelled || got.CancelledAt == nil {
		t.Fatalf("after cancel: %s", got.Status)
	}
	select {
	case <-toolStopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight tool call was not cancelled")
	}
	_, err = h.rt.Cancel(context.Background(), "payments", inv.ID)
	if db.ErrorCode(err) != db.EINVALIDSTATE {
		t.Errorf("second cancel: %v, want invalid_state", err)
	}
	// The worker must not overwrite the cancelled record.
	time.Sleep(50 * time.Millisecond)
	again, _ := h.rt.Get(context.Background(), "payments", inv.ID)
	if again.Status != db.StatusCancelled {
		t.Errorf("status changed after cancel to %s", again.Status)
	}
}

func TestRuntimeOtherTeamIsNotFound(t *testing.T) {
	h := newHarness(t, callingEngine, nil, nil)
	inv := h.submit(t, "k8s_agent")
	waitFinal(t, h.rt, inv.ID)
	_, errOther := h.rt.Get(context.Background(), "search", inv.ID)
	_, errMissing := h.rt.Get(context.Background(), "search", "inv_doesnotexist")
	if db.ErrorCode(errOther) != db.ENOTFOUND || db.ErrorCode(errMissing) != db.ENOTFOUND {
		t.Fatalf("other team: %v; missing: %v", errOther, errMissing)
	}
	if _, err := h.rt.Cancel(context.Background(), "search", inv.ID); db.ErrorCode(err) != db.ENOTFOUND {
		t.Errorf("cancel by other team: %v", err)
	}
}

func TestRuntimeTimeout(t *testing.T) {
	engine := engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h := newHarness(t, engine, nil, nil)
	h.cfg["agents"] = map[string]any{"k8s_agent": map[string]any{"timeout": json.Number("1")}}
	inv := h.submit(t, "k8s_agent")
	got := waitFinal(t, h.rt, inv.ID)
	if got.Status != db.StatusFailed || got.Error == nil || got.Error.Code != db.ETIMEOUT {
		t.Fatalf("got %s %+v, want failed timeout", got.Status, got.Error)
	}
}

func TestRuntimeDataSourceUnavailable(t *testing.T) {
	engine := engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		return nil, evidence.Errorf("prometheus", evidence.CodeUnavailable, "dial tcp 127.0.0.1:9: connection refused")
	})
	h := newHarness(t, engine, nil, nil)
	got := waitFinal(t, h.rt, h.submit(t, "k8s_agent").ID)
	if got.Error == nil || got.Error.Code != db.EDATASOURCE || !strings.Contains(got.Error.Message, "prometheus") || got.FailedAt == nil {
		t.Fatalf("got %+v", got.Error)
	}
}

func TestRuntimeEnginePanicFailsRun(t *testing.T) {
	engine := engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		panic("boom")
	})
	h := newHarness(t, engine, nil, nil)
	got := waitFinal(t, h.rt, h.submit(t, "k8s_agent").ID)
	if got.Status != db.StatusFailed || !strings.Contains(got.Error.Message, "boom") {
		t.Fatalf("got %s %+v", got.Status, got.Error)
	}
}

func TestRuntimeQueueFull(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	engine := engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		<-block
		return nil, errors.New("stopped")
	})
	h := newHarness(t, engine, nil, func(rc *agent.RuntimeConfig) { rc.Workers = 1; rc.QueueSize = 2 })
	var full error
	for i := 0; i < 10 && full == nil; i++ {
		_, full = h.rt.Submit(context.Background(), agent.SubmitRequest{Team: "payments", AgentName: "k8s_agent", Message: "m"})
	}
	if db.ErrorCode(full) != db.EUNAVAILABLE || !strings.Contains(db.ErrorMessage(full), "queue is full") {
		t.Fatalf("err = %v, want unavailable: queue is full", full)
	}
	_, total, _ := h.rt.List(context.Background(), db.InvestigationFilter{Team: "payments"})
	if total > 3 { // one running plus two queued
		t.Errorf("%d investigations stored, want at most 3", total)
	}
}

func TestRuntimeRecovery(t *testing.T) {
	store := db.MustOpen(t)
	now := time.Now().UTC()
	for _, inv := range []*db.Investigation{
		{ID: "inv_pending", Team: "payments", Agent: "k8s_agent", Message: "m", Status: db.StatusPending, CreatedAt: now.Add(-2 * time.Second)},
		{ID: "inv_running", Team: "payments", Agent: "k8s_agent", Message: "m", Status: db.StatusRunning, CreatedAt: now.Add(-time.Second), StartedAt: &now},
	} {
		if err := store.CreateInvestigation(context.Background(), inv); err != nil {
			t.Fatal(err)
		}
	}
	var calls atomic.Int64
	cat := testCatalog(&calls, nil)
	rt := agent.NewRuntime(agent.RuntimeConfig{
		Store: store, Engine: callingEngine, Workers: 1,
		Environment: func(ctx context.Context, team string) (*agent.Environment, error) {
			return &agent.Environment{Config: map[string]any{}, Catalog: cat, Env: &tools.Env{Sources: &evidence.Sources{Kubernetes: fakeKube{}}}}, nil
		},
	})
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	if got := waitFinal(t, rt, "inv_pending"); got.Status != db.StatusCompleted {
		t.Errorf("pending one after restart: %s", got.Status)
	}
	got, _ := rt.Get(context.Background(), "", "inv_running")
	if got.Status != db.StatusFailed || got.Error == nil || got.Error.Code != db.EINTERRUPTED {
		t.Errorf("running one after restart: %s %+v", got.Status, got.Error)
	}
}

func TestListPagination(t *testing.T) {
	store := db.MustOpen(t)
	base := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 25; i++ {
		team := "payments"
		if i%5 == 0 {
			team = "search"
		}
		status := db.StatusCompleted
		if i%3 == 0 {
			status = db.StatusFailed
		}
		inv := &db.Investigation{ID: agent.NewID(), Team: team, Agent: "k8s_agent", Message: "m", Status: status, CreatedAt: base.Add(time.Duration(i) * time.Minute)}
		if err := store.CreateInvestigation(context.Background(), inv); err != nil {
			t.Fatal(err)
		}
	}
	list, total, err := store.ListInvestigations(context.Background(), db.InvestigationFilter{Team: "payments", Limit: 7, Offset: 3})
	if err != nil {
		t.Fatal(err)
	}
	if total != 20 || len(list) != 7 {
		t.Fatalf("total=%d len=%d, want 20 and 7", total, len(list))
	}
	for i := 1; i < len(list); i++ {
		if !list[i].CreatedAt.Before(list[i-1].CreatedAt) {
			t.Fatalf("not newest first at %d", i)
		}
		if list[i].Team != "payments" {
			t.Fatalf("other team's investigation listed")
		}
	}
	_, failed, _ := store.ListInvestigations(context.Background(), db.InvestigationFilter{Team: "payments", Status: db.StatusFailed})
	if failed != 7 { // i in 3,6,9,12,18,21,24 (0 and 15 are search's)
		t.Errorf("failed total = %d, want 7", failed)
	}
	n, err := store.DeleteInvestigationsBefore(context.Background(), base.Add(10*time.Minute))
	if err != nil || n != 10 {
		t.Errorf("deleted %d (%v), want 10", n, err)
	}
}

// Retention deletes finished A2A tasks with the investigations they ran;
// running ones stay.
func TestRuntimeRetentionDeletesA2ATasks(t *testing.T) {
	store := db.MustOpen(t)
	ctx := context.Background()
	for id, state := range map[string]string{"done": "completed", "running": "working"} {
		if err := store.SaveA2ATask(ctx, "payments", id, []byte(`{"kind":"task","id":"`+id+`","status":{"state":"`+state+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	later := time.Now().Add(48 * time.Hour)
	rt := agent.NewRuntime(agent.RuntimeConfig{
		Store: store, Engine: callingEngine, Workers: 1,
		Environment: func(ctx context.Context, team string) (*agent.Environment, error) { return nil, errors.New("unused") },
		Retention:   24 * time.Hour, A2ATasks: store, Now: func() time.Time { return later },
	})
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := store.A2ATask(ctx, "payments", "done")
		if db.ErrorCode(err) == db.ENOTFOUND {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("finished task still stored: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := store.A2ATask(ctx, "payments", "running"); err != nil {
		t.Errorf("running task: %v", err)
	}
}
