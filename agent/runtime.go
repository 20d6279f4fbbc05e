package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
)

// Limits of a run request (contract section 2).
const (
	MaxMessageBytes      = 16 << 10
	MaxContextValueBytes = 1 << 10
)

// ContextKeys are the accepted keys of a run request's context (spec 4.1).
var ContextKeys = []string{"service", "environment", "namespace", "severity", "related_alert", "time_window", "hint"}

// Environment is what a team's investigations can reach right now: its
// effective config, the tool catalog (built-ins plus tool-server tools) and
// the evidence sources. Close releases anything the sources hold.
type Environment struct {
	Config  map[string]any
	Catalog *tools.Catalog
	Env     *tools.Env
	// Engine overrides the runtime's default engine for this team (for
	// example the LLM engine with a per-team model); nil uses the default.
	Engine Engine
	Close  func()
	// Unavailable, when set, is why the team's evidence cannot be read at
	// all (its evidence bundle has gone away): runs are accepted and fail
	// with data_source_unavailable and this message.
	Unavailable error
}

// RuntimeConfig configures a Runtime.
type RuntimeConfig struct {
	Store  db.InvestigationService
	Engine Engine // the default engine (the offline analyst)
	// Environment builds a team's environment; it is called when a run is
	// submitted (to validate) and when it starts (to run).
	Environment func(ctx context.Context, team string) (*Environment, error)
	// Outbox returns deliveries to write with the final record (webhook,
	// chat); nil for none.
	Outbox func(inv *db.Investigation, cfg map[string]any) []db.OutboxEntry
	// OnFinal is told of every investigation that reached a final state,
	// after it is stored (to wake delivery workers, update metrics).
	OnFinal func(inv *db.Investigation)
	// OnTransition, if set, is told of every status an investigation
	// enters after it is stored: pending at submit, running when a worker
	// takes it, and the final one (for metrics).
	OnTransition func(inv *db.Investigation)
	// OnToolCall, if set, is told of every tool call as it ends (for
	// metrics).
	OnToolCall     func(name string, d time.Duration, err error)
	Workers        int           // default 4
	QueueSize      int           // default 256
	DefaultTimeout time.Duration // per run when the agent sets none; default 10m
	Retention      time.Duration // final investigations older than this are deleted; 0 keeps all
	// A2ATasks, when set, has its finished A2A tasks last saved longer than
	// Retention ago deleted with the investigations they ran.
	A2ATasks db.A2ATaskPruner
	Logger   *slog.Logger
	Now      func() time.Time
}

// Runtime runs investigations on a bounded worker pool. Every
// investigation is stored before it is queued; restarts re-queue pending
// ones and mark running ones failed with code interrupted.
type Runtime struct {
	cfg   RuntimeConfig
	queue chan string
	slots atomic.Int64 // queued, not yet taken by a worker

	mu       sync.Mutex
	running  map[string]*activeRun
	watchers map[string]chan struct{} // closed on every change of the record

	closing  atomic.Bool
	stopCh   chan struct{}
	workers  sync.WaitGroup
	baseCtx  context.Context
	baseStop context.CancelFunc
}

type activeRun struct {
	cancel    context.CancelCauseFunc
	cancelled atomic.Bool
	log       *eventLog // the run's buffered progress and tool-call events
}

var (
	errUserCancel = errors.New("cancelled by user")
	errShutdown   = errors.New("server shutting down")
)

// NewRuntime returns a runtime; call Start to recover and start workers.
func NewRuntime(cfg RuntimeConfig) *Runtime {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 256
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Runtime{
		cfg:      cfg,
		queue:    make(chan string, cfg.QueueSize),
		running:  map[string]*activeRun{},
		watchers: map[string]chan struct{}{},
		stopCh:   make(chan struct{}),
		baseCtx:  ctx,
		baseStop: stop,
	}
}

// Start recovers work left by a previous process (contract section 2) and
// starts the workers.
func (rt *Runtime) Start(ctx context.Context) error {
	unfinished, err := rt.cfg.Store.UnfinishedInvestigations(ctx)
	if err != nil {
		return fmt.Errorf("recovering investigations: %w", err)
	}
	var requeue []string
	for _, inv := range unfinished {
		switch inv.Status {
		case db.StatusRunning:
			now := rt.cfg.Now()
			_, err := rt.cfg.Store.WriteInvestigation(ctx, inv.ID, db.InvestigationWrite{
				Update: func(i *db.Investigation) error {
					if i.Status != db.StatusRunning {
						return errSkip
					}
					i.Status = db.StatusFailed
					i.FailedAt = &now
					i.Progress = nil
					i.Error = &db.RunError{Code: db.EINTERRUPTED, Message: "the server stopped while this investigation was running"}
					return nil
				},
				Events: rt.statusEvent,
			})
			if err != nil && !errors.Is(err, errSkip) {
				return fmt.Errorf("marking investigation %s interrupted: %w", inv.ID, err)
			}
			rt.cfg.Logger.Warn("investigation interrupted by restart", "investigation_id", inv.ID)
		case db.StatusPending:
			requeue = append(requeue, inv.ID)
		}
	}
	for i := 0; i < rt.cfg.Workers; i++ {
		rt.workers.Add(1)
		go rt.worker()
	}
	// Re-queue without holding up start when there are more than fit.
	go func() {
		for _, id := range requeue {
			rt.slots.Add(1)
			select {
			case rt.queue <- id:
			case <-rt.stopCh:
				return
			}
		}
	}()
	if rt.cfg.Retention > 0 {
		go rt.retentionLoop()
	}
	return nil
}

var errSkip = errors.New("skip")

// SubmitRequest is a validated-shape run request.
type SubmitRequest struct {
	Team        string
	RequestedBy string
	AgentName   string
	Message     string
	Context     map[string]string
}

// Submit validates req against the team's agents and environment, stores a
// pending investigation and queues it. Errors: EINVALID (naming the field,
// unknown or disabled agent, no data source), ETOOLARGE, EUNAVAILABLE when
// the queue is full or the server is stopping.
func (rt *Runtime) Submit(ctx context.Context, req SubmitRequest) (*db.Investigation, error) {
	if err := ValidateRequest(req.AgentName, req.Message, req.Context); err != nil {
		return nil, err
	}
	if rt.closing.Load() {
		return nil, db.Errorf(db.EUNAVAILABLE, "the server is shutting down; retry shortly")
	}
	env, err := rt.cfg.Environment(ctx, req.Team)
	if err != nil {
		return nil, err
	}
	if env.Close != nil {
		defer env.Close()
	}
	agents := Resolve(env.Config, env.Catalog)
	a, err := Lookup(agents, req.AgentName)
	if err != nil {
		return nil, err
	}
	if env.Unavailable == nil {
		if err := requireDataSource(a, agents, env); err != nil {
			return nil, err
		}
	}
	// Reserve a queue slot before storing, so a full queue stores nothing.
	if rt.slots.Add(1) > int64(rt.cfg.QueueSize) {
		rt.slots.Add(-1)
		return nil, db.Errorf(db.EUNAVAILABLE, "the investigation queue is full (%d waiting); retry later", rt.cfg.QueueSize)
	}
	inv := &db.Investigation{
		ID:          NewID(),
		Team:        req.Team,
		Agent:       a.Name,
		Message:     req.Message,
		Context:     req.Context,
		Status:      db.StatusPending,
		RequestedBy: req.RequestedBy,
		CreatedAt:   rt.cfg.Now(),
	}
	if err := rt.cfg.Store.CreateInvestigation(ctx, inv, rt.statusEvent(inv)...); err != nil {
		rt.slots.Add(-1)
		return nil, err
	}
	rt.notify(inv.ID)
	if rt.cfg.OnTransition != nil {
		rt.cfg.OnTransition(inv)
	}
	rt.queue <- inv.ID // never blocks: a slot was reserved
	return inv, nil
}

// ValidateRequest checks the shape rules of a run request (spec 4.1,
// contract section 2).
func ValidateRequest(agentName, message string, ctxv map[string]string) error {
	if agentName == "" {
		return &db.Error{Code: db.EINVALID, Field: "agent_name", Message: "agent_name is required"}
	}
	if message == "" {
		return &db.Error{Code: db.EINVALID, Field: "message", Message: "message is required"}
	}
	if len(message) > MaxMessageBytes {
		return &db.Error{Code: db.ETOOLARGE, Field: "message", Message: fmt.Sprintf("message is %d bytes; the limit is %d", len(message), MaxMessageBytes)}
	}
	if !utf8.ValidString(message) {
		return &db.Error{Code: db.EINVALID, Field: "message", Message: "message must be valid UTF-8"}
	}
	for k, v := range ctxv {
		known := false
		for _, c := range ContextKeys {
			known = known || c == k
		}
		if !known {
			return &db.Error{Code: db.EINVALID, Field: "context." + k,
				Message: fmt.Sprintf("context: unknown key %q (accepted: %v)", truncate(k, 64), ContextKeys)}
		}
		if len(v) > MaxContextValueBytes {
			return &db.Error{Code: db.ETOOLARGE, Field: "context." + k, Message: fmt.Sprintf("context.%s is %d bytes; the limit is %d", k, len(v), MaxContextValueBytes)}
		}
		if !utf8.ValidString(v) {
			return &db.Error{Code: db.EINVALID, Field: "context." + k, Message: fmt.Sprintf("context.%s must be valid UTF-8", k)}
		}
	}
	return nil
}

// requireDataSource refuses a run whose agent (or, for a planner, every
// specialist it can delegate to) can reach no configured data source.
func requireDataSource(a Agent, agents map[string]Agent, env *Environment) error {
	kits := [][]string{a.Tools}
	if a.Name == tools.AgentPlanner {
		for _, n := range SortedNames(agents) {
			if n != tools.AgentPlanner && agents[n].Enabled {
				kits = append(kits, agents[n].Tools)
			}
		}
	}
	var wanted []string
	seen := map[string]bool{}
	for _, kit := range kits {
		for _, name := range kit {
			t, ok := env.Catalog.Get(name)
			if !ok || !t.ReadOnly {
				continue
			}
			if Configured(env.Env, t.Integration) {
				return nil
			}
			if !seen[t.Integration] {
				seen[t.Integration] = true
				wanted = append(wanted, t.Integration)
			}
		}
	}
	hint := "tools.kubernetes, tools.prometheus or another integration"
	if len(wanted) > 0 {
		hint = ""
		for i, w := range wanted {
			if i > 0 {
				hint += ", "
			}
			hint += "tools." + w
		}
	}
	return &db.Error{Code: db.EINVALID, Field: "agent_name",
		Message: fmt.Sprintf("agent %q has no configured data source: configure one of %s in the team config (or an admin sets evidence_bundle)", a.Name, hint)}
}

// Configured reports whether env has a source for integration. Tools that
// need no source (tool servers, peers) count as configured.
func Configured(env *tools.Env, integration string) bool {
	if env == nil || env.Sources == nil {
		return false
	}
	s := env.Sources
	switch integration {
	case tools.IntegrationKubernetes:
		return s.Kubernetes != nil
	case tools.IntegrationPrometheus:
		return s.Metrics != nil
	case tools.IntegrationLogs:
		return s.Logs != nil
	case tools.IntegrationChanges:
		return s.Changes != nil || s.Kubernetes != nil
	case tools.IntegrationCloudWatch:
		return s.CloudWatch != nil
	case tools.IntegrationGitHub:
		return s.Code != nil
	case tools.IntegrationTraces:
		return s.Traces != nil
	case tools.IntegrationKnowledge:
		return false // runbooks support findings; alone they are no evidence
	case tools.IntegrationHistory:
		return false
	case "":
		return true
	default:
		return true
	}
}

// Get returns the investigation id of team. Another team's investigation is
// ENOTFOUND, exactly like a missing one. An empty team (admin) sees all.
func (rt *Runtime) Get(ctx context.Context, team, id string) (*db.Investigation, error) {
	inv, err := rt.cfg.Store.GetInvestigation(ctx, id)
	if err != nil {
		return nil, err
	}
	if team != "" && inv.Team != team {
		return nil, notFound(id)
	}
	return inv, nil
}

func notFound(id string) error {
	return db.Errorf(db.ENOTFOUND, "investigation %q not found", truncate(id, 80))
}

// List lists a team's investigations, newest first.
func (rt *Runtime) List(ctx context.Context, f db.InvestigationFilter) ([]*db.Investigation, int, error) {
	return rt.cfg.Store.ListInvestigations(ctx, f)
}

// Cancel cancels a pending or running investigation of team at once; a
// final one is EINVALIDSTATE.
func (rt *Runtime) Cancel(ctx context.Context, team, id string) (*db.Investigation, error) {
	if _, err := rt.Get(ctx, team, id); err != nil {
		return nil, err
	}
	now := rt.cfg.Now()
	rt.mu.Lock()
	ar := rt.running[id]
	rt.mu.Unlock()
	// The run's buffered events go in before the final status event, in
	// the same transaction as the final record.
	var log *eventLog
	if ar != nil {
		log = ar.log
	}
	inv, err := log.final(ctx, db.InvestigationWrite{Update: func(i *db.Investigation) error {
		if db.IsFinal(i.Status) {
			return db.Errorf(db.EINVALIDSTATE, "investigation %s is already %s and cannot be cancelled", id, i.Status)
		}
		i.Status = db.StatusCancelled
		i.CancelledAt = &now
		i.Progress = nil
		return nil
	}}, rt, id)
	if err != nil {
		return nil, err
	}
	if ar != nil {
		ar.cancelled.Store(true)
		ar.cancel(errUserCancel)
	}
	rt.final(inv)
	return inv, nil
}

// Wait blocks until investigation id is final or ctx ends, and returns the
// latest record either way.
func (rt *Runtime) Wait(ctx context.Context, id string) (*db.Investigation, error) {
	for {
		ch := rt.watch(id)
		inv, err := rt.cfg.Store.GetInvestigation(context.WithoutCancel(ctx), id)
		if err != nil {
			return nil, err
		}
		if db.IsFinal(inv.Status) {
			return inv, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return inv, nil
		}
	}
}

// Changed returns a channel closed at the next change of investigation id
// (status, progress or a new event), for streaming clients.
func (rt *Runtime) Changed(id string) <-chan struct{} { return rt.watch(id) }

func (rt *Runtime) watch(id string) chan struct{} {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	ch, ok := rt.watchers[id]
	if !ok {
		ch = make(chan struct{})
		rt.watchers[id] = ch
	}
	return ch
}

func (rt *Runtime) notify(id string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if ch, ok := rt.watchers[id]; ok {
		close(ch)
		delete(rt.watchers, id)
	}
}

// Events returns the stored events of id after seq.
func (rt *Runtime) Events(ctx context.Context, id string, after uint64) ([]db.InvestigationEvent, error) {
	return rt.cfg.Store.InvestigationEvents(ctx, id, after)
}

// QueueDepth reports how many investigations wait for a worker.
func (rt *Runtime) QueueDepth() int { return int(rt.slots.Load()) }

// Stop stops accepting work and waits for running investigations until ctx
// ends; those still running then are cancelled and recorded as
// interrupted. Pending ones stay pending and run after the next start.
func (rt *Runtime) Stop(ctx context.Context) {
	if rt.closing.Swap(true) {
		return
	}
	close(rt.stopCh)
	done := make(chan struct{})
	go func() { rt.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		rt.mu.Lock()
		for _, ar := range rt.running {
			ar.cancel(errShutdown)
		}
		rt.mu.Unlock()
		<-done
	}
	rt.baseStop()
}

func (rt *Runtime) worker() {
	defer rt.workers.Done()
	for {
		select {
		case <-rt.stopCh:
			return
		case id := <-rt.queue:
			rt.slots.Add(-1)
			select {
			case <-rt.stopCh:
				return // stays pending in the store; re-queued at next start
			default:
			}
			rt.execute(id)
		}
	}
}

// execute runs one investigation to a final state.
func (rt *Runtime) execute(id string) {
	log := rt.cfg.Logger.With("investigation_id", id)
	ctx, cancel := context.WithCancelCause(rt.baseCtx)
	defer cancel(nil)
	ar := &activeRun{cancel: cancel, log: &eventLog{rt: rt, id: id}}

	// Claim: pending -> running, registered so Cancel reaches it.
	now := rt.cfg.Now()
	rt.mu.Lock()
	rt.running[id] = ar
	rt.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		delete(rt.running, id)
		rt.mu.Unlock()
	}()
	inv, err := rt.cfg.Store.WriteInvestigation(ctx, id, db.InvestigationWrite{
		Update: func(i *db.Investigation) error {
			if i.Status != db.StatusPending {
				return errSkip
			}
			i.Status = db.StatusRunning
			i.StartedAt = &now
			i.Progress = &db.Progress{CurrentStep: "starting", StepsTotal: 1}
			return nil
		},
		Events: rt.statusEvent,
	})
	if errors.Is(err, errSkip) {
		return // cancelled while queued
	}
	if err != nil {
		log.Error("starting investigation", "err", err)
		return
	}
	rt.notify(id)
	if rt.cfg.OnTransition != nil {
		rt.cfg.OnTransition(inv)
	}

	result, used, usage, agentJSON, teamCfg, runErr := rt.investigate(ctx, inv, ar.log)

	if ar.cancelled.Load() {
		return // Cancel already wrote the final record
	}
	end := rt.cfg.Now()
	var outbox func(*db.Investigation) []db.OutboxEntry
	if rt.cfg.Outbox != nil && teamCfg != nil {
		outbox = func(i *db.Investigation) []db.OutboxEntry { return rt.cfg.Outbox(i, teamCfg) }
	}
	fin, err := ar.log.final(context.WithoutCancel(ctx), db.InvestigationWrite{Outbox: outbox, Update: func(i *db.Investigation) error {
		if i.Status != db.StatusRunning {
			return errSkip
		}
		i.ToolsUsed = used
		i.Usage = usage
		i.Progress = nil
		if agentJSON != nil {
			i.AgentSettings = agentJSON
		}
		if runErr != nil {
			i.Status = db.StatusFailed
			i.FailedAt = &end
			i.Error = runError(runErr, context.Cause(ctx))
			return nil
		}
		i.Status = db.StatusCompleted
		i.CompletedAt = &end
		i.Result = result
		return nil
	}}, rt, id)
	if errors.Is(err, errSkip) {
		return
	}
	if err != nil {
		log.Error("finishing investigation", "err", err)
		return
	}
	rt.final(fin)
}

func (rt *Runtime) final(inv *db.Investigation) {
	rt.notify(inv.ID)
	if rt.cfg.OnTransition != nil {
		rt.cfg.OnTransition(inv)
	}
	if rt.cfg.OnFinal != nil {
		rt.cfg.OnFinal(inv)
	}
}

// investigate resolves the agent from the team's config as it is now and
// runs the engine under the agent's timeout.
func (rt *Runtime) investigate(ctx context.Context, inv *db.Investigation, log *eventLog) (res *finding.Result, used []string, usage *db.Usage, agentJSON json.RawMessage, teamCfg map[string]any, err error) {
	env, err := rt.cfg.Environment(ctx, inv.Team)
	if err != nil {
		return nil, nil, nil, nil, nil, err
	}
	teamCfg = env.Config
	if env.Close != nil {
		defer env.Close()
	}
	if env.Unavailable != nil {
		return nil, nil, nil, nil, teamCfg, env.Unavailable
	}
	agents := Resolve(env.Config, env.Catalog)
	a, err := Lookup(agents, inv.Agent)
	if err != nil {
		return nil, nil, nil, nil, teamCfg, err
	}
	agentJSON, _ = json.Marshal(a)
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = rt.cfg.DefaultTimeout
	}
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()

	r := &run{rt: rt, id: inv.ID, env: env, used: &tools.UsedTools{}, log: log}
	r.session = r.sessionFor(a)
	engine := env.Engine
	if engine == nil {
		engine = rt.cfg.Engine
	}
	req := &Request{ID: inv.ID, Team: inv.Team, Agent: a, Message: inv.Message, Context: inv.Context, Agents: agents}
	res, err = safeInvestigate(tctx, engine, req, r)
	used = r.used.Names()
	usage = r.usage()
	if err == nil && tctx.Err() != nil {
		err = context.Cause(tctx)
	}
	if err != nil {
		if errors.Is(context.Cause(tctx), errTimeout) {
			err = fmt.Errorf("%w after %s", errTimeout, timeout)
		}
		return nil, used, usage, agentJSON, teamCfg, err
	}
	if res == nil {
		return nil, used, usage, agentJSON, teamCfg, errors.New("the engine returned no result")
	}
	res.Normalize()
	if verr := res.Validate(); verr != nil {
		return nil, used, usage, agentJSON, teamCfg, fmt.Errorf("the engine returned an invalid result: %w", verr)
	}
	return res, used, usage, agentJSON, teamCfg, nil
}

var errTimeout = errors.New("the investigation exceeded its timeout")

// safeInvestigate turns an engine panic into an error so one bad run cannot
// take the server down.
func safeInvestigate(ctx context.Context, e Engine, req *Request, r Run) (res *finding.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine panic: %v", p)
		}
	}()
	return e.Investigate(ctx, req, r)
}

// CodedError is an error that names its API error code (for example the
// LLM engine's llm_unavailable).
type CodedError interface {
	error
	ErrorCode() string
}

// runError maps an engine error to the investigation's error object.
func runError(err, cause error) *db.RunError {
	var coded CodedError
	switch {
	case errors.Is(err, errTimeout) || errors.Is(cause, errTimeout):
		return &db.RunError{Code: db.ETIMEOUT, Message: err.Error()}
	case errors.Is(cause, errShutdown):
		return &db.RunError{Code: db.EINTERRUPTED, Message: "the server shut down while this investigation was running"}
	case evidence.CodeOf(err) == evidence.CodeUnavailable:
		src := evidence.SourceOf(err)
		return &db.RunError{Code: db.EDATASOURCE, Message: fmt.Sprintf("data source %s is unavailable: %v", src, err)}
	case errors.As(err, &coded):
		return &db.RunError{Code: coded.ErrorCode(), Message: coded.Error()}
	}
	var de *db.Error
	if errors.As(err, &de) {
		return &db.RunError{Code: de.Code, Message: db.ErrorMessage(err)}
	}
	return &db.RunError{Code: "investigation_failed", Message: err.Error()}
}

// statusEvent returns the status event of inv's (new) status, to store
// in the same transaction as the record (InvestigationWrite.Events).
func (rt *Runtime) statusEvent(inv *db.Investigation) []db.InvestigationEvent {
	raw, _ := json.Marshal(map[string]any{"status": inv.Status})
	return []db.InvestigationEvent{{Time: rt.cfg.Now(), Type: "status", Data: raw}}
}

func (rt *Runtime) retentionLoop() {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		cutoff := rt.cfg.Now().Add(-rt.cfg.Retention)
		n, err := rt.cfg.Store.DeleteInvestigationsBefore(context.Background(), cutoff)
		if err != nil {
			rt.cfg.Logger.Warn("deleting old investigations", "err", err)
		} else if n > 0 {
			rt.cfg.Logger.Info("deleted old investigations", "count", n)
		}
		if rt.cfg.A2ATasks != nil {
			n, err := rt.cfg.A2ATasks.DeleteA2ATasksBefore(context.Background(), cutoff)
			if err != nil {
				rt.cfg.Logger.Warn("deleting old A2A tasks", "err", err)
			} else if n > 0 {
				rt.cfg.Logger.Info("deleted old A2A tasks", "count", n)
			}
		}
		select {
		case <-t.C:
		case <-rt.stopCh:
			return
		}
	}
}

// NewID returns a new opaque investigation id.
func NewID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "inv_" + hex.EncodeToString(b[:])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Agents returns the team's agents as its effective config resolves them
// now, with the catalog they draw on.
func (rt *Runtime) Agents(ctx context.Context, team string) (map[string]Agent, *tools.Catalog, error) {
	env, err := rt.cfg.Environment(ctx, team)
	if err != nil {
		return nil, nil, err
	}
	if env.Close != nil {
		defer env.Close()
	}
	return Resolve(env.Config, env.Catalog), env.Catalog, nil
}
