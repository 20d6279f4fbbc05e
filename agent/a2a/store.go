package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
)

// TaskStore keeps A2A tasks per owner. The owner is whatever the request's
// context says (the caller's team): a store answers ErrTaskNotFound for a
// task another owner made, exactly as for a missing one, and never lets
// another owner overwrite it. Tasks are the A2A Task objects as JSON.
type TaskStore interface {
	SaveTask(ctx context.Context, id string, task []byte) error
	GetTask(ctx context.Context, id string) ([]byte, error)
}

// ErrTaskNotFound is what a TaskStore returns for a missing task or
// another owner's (the protocol's -32001 "task not found").
var ErrTaskNotFound = a2a.ErrTaskNotFound

// NewStoredHandler is NewHandler with tasks kept in store (which survives
// restarts and is scoped by owner) instead of the library's process-wide
// in-memory map. Every method that names a task checks first that the
// caller's store has it: another owner's task is indistinguishable from a
// missing one and nothing is done to it.
func NewStoredHandler(svc Service, store TaskStore, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ts := &taskStore{store: store, live: map[a2a.TaskID]int{}}
	ts.rec, _ = svc.(Reconciler)
	ex := &executor{svc: svc, live: ts}
	h := a2asrv.NewHandler(ex, a2asrv.WithLogger(logger), a2asrv.WithTaskStore(ts))
	return a2asrv.NewJSONRPCHandler(&owned{RequestHandler: h, store: ts})
}

// taskStore adapts a TaskStore to the library's, and knows which tasks
// run in this process: a stored task that is not final and not running
// here was cut off by a restart and is reported failed.
type taskStore struct {
	store TaskStore
	rec   Reconciler // nil: a cut-off task reads as failed
	mu    sync.Mutex
	live  map[a2a.TaskID]int
}

func (s *taskStore) begin(id a2a.TaskID) {
	s.mu.Lock()
	s.live[id]++
	s.mu.Unlock()
}

func (s *taskStore) end(id a2a.TaskID) {
	s.mu.Lock()
	delete(s.live, id)
	s.mu.Unlock()
}

func (s *taskStore) running(id a2a.TaskID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id] > 0
}

func (s *taskStore) Save(ctx context.Context, task *a2a.Task) error {
	b, err := json.Marshal(task)
	if err != nil {
		return fmt.Errorf("encoding task: %w", err)
	}
	if err := s.store.SaveTask(ctx, string(task.ID), b); err != nil {
		return err
	}
	if task.Status.State.Terminal() {
		s.end(task.ID)
	}
	return nil
}

func (s *taskStore) Get(ctx context.Context, id a2a.TaskID) (*a2a.Task, error) {
	b, err := s.store.GetTask(ctx, string(id))
	if err != nil {
		if errors.Is(err, ErrTaskNotFound) {
			return nil, ErrTaskNotFound
		}
		return nil, err
	}
	var t a2a.Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("decoding task %s: %w", id, err)
	}
	if !t.Status.State.Terminal() && t.Status.State != a2a.TaskStateInputRequired && !s.running(id) {
		// The server stopped while it ran: the task reads as its
		// investigation does now (which the restart marked interrupted
		// if it was running, or re-queued if it was pending).
		return s.reconcile(ctx, &t)
	}
	return &t, nil
}

// reconcile brings a task no execution runs in line with its
// investigation, saving it once the investigation is final.
func (s *taskStore) reconcile(ctx context.Context, t *a2a.Task) (*a2a.Task, error) {
	inv := investigationOf(t)
	if s.rec != nil && inv != "" {
		out, final, err := s.rec.Outcome(ctx, inv)
		if err == nil && !final {
			return t, nil // re-queued: still working
		}
		if err == nil && out != nil {
			parts := a2a.ContentParts{a2a.TextPart{Text: answerText(out)}}
			if out.Data != nil {
				parts = append(parts, a2a.DataPart{Data: out.Data})
			}
			t.Artifacts = append(t.Artifacts, &a2a.Artifact{ID: a2a.NewArtifactID(), Name: "investigation " + out.InvestigationID, Parts: parts})
			state, text := a2a.TaskStateFailed, fmt.Sprintf("investigation %s failed: %s", out.InvestigationID, out.Error)
			switch out.Status {
			case "completed":
				state, text = a2a.TaskStateCompleted, answerText(out)
			case "cancelled":
				state, text = a2a.TaskStateCanceled, "the investigation was cancelled"
			}
			t.Status = a2a.TaskStatus{State: state, Message: a2a.NewMessageForTask(a2a.MessageRoleAgent, t, a2a.TextPart{Text: text})}
			if err := s.Save(ctx, t); err != nil {
				return nil, err
			}
			return t, nil
		}
	}
	t.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Message: a2a.NewMessageForTask(a2a.MessageRoleAgent, t,
		a2a.TextPart{Text: "the server restarted while this task was running, before its investigation started"})}
	if err := s.Save(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// investigationOf finds the investigation id recorded by Started in the
// task's status message or history.
func investigationOf(t *a2a.Task) string {
	msgs := []*a2a.Message{t.Status.Message}
	for i := len(t.History) - 1; i >= 0; i-- {
		msgs = append(msgs, t.History[i])
	}
	for _, m := range msgs {
		if m == nil {
			continue
		}
		if id, ok := m.Metadata[MetaInvestigationID].(string); ok && id != "" {
			return id
		}
	}
	return ""
}

// owned checks that the caller's store holds the task a method names
// before the library acts on it.
type owned struct {
	a2asrv.RequestHandler
	store *taskStore
}

func (o *owned) own(ctx context.Context, id a2a.TaskID) error {
	if id == "" {
		return nil // the library refuses a missing id itself
	}
	_, err := o.store.Get(ctx, id)
	return err
}

func (o *owned) OnCancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	if p == nil {
		return nil, a2a.ErrInvalidParams
	}
	if err := o.own(ctx, p.ID); err != nil {
		return nil, err
	}
	return o.RequestHandler.OnCancelTask(ctx, p)
}

func (o *owned) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	if p != nil && p.Message != nil {
		if err := o.own(ctx, p.Message.TaskID); err != nil {
			return nil, err
		}
	}
	return o.RequestHandler.OnSendMessage(ctx, p)
}

func (o *owned) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	if p != nil && p.Message != nil {
		if err := o.own(ctx, p.Message.TaskID); err != nil {
			return failed(err)
		}
	}
	return o.RequestHandler.OnSendMessageStream(ctx, p)
}

func (o *owned) OnResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	if p == nil {
		return failed(a2a.ErrInvalidParams)
	}
	if err := o.own(ctx, p.ID); err != nil {
		return failed(err)
	}
	return o.RequestHandler.OnResubscribeToTask(ctx, p)
}

func (o *owned) OnGetTaskPushConfig(ctx context.Context, p *a2a.GetTaskPushConfigParams) (*a2a.TaskPushConfig, error) {
	if p == nil {
		return nil, a2a.ErrInvalidParams
	}
	if err := o.own(ctx, p.TaskID); err != nil {
		return nil, err
	}
	return o.RequestHandler.OnGetTaskPushConfig(ctx, p)
}

func (o *owned) OnListTaskPushConfig(ctx context.Context, p *a2a.ListTaskPushConfigParams) ([]*a2a.TaskPushConfig, error) {
	if p == nil {
		return nil, a2a.ErrInvalidParams
	}
	if err := o.own(ctx, p.TaskID); err != nil {
		return nil, err
	}
	return o.RequestHandler.OnListTaskPushConfig(ctx, p)
}

func (o *owned) OnSetTaskPushConfig(ctx context.Context, p *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	if p == nil {
		return nil, a2a.ErrInvalidParams
	}
	if err := o.own(ctx, p.TaskID); err != nil {
		return nil, err
	}
	return o.RequestHandler.OnSetTaskPushConfig(ctx, p)
}

func (o *owned) OnDeleteTaskPushConfig(ctx context.Context, p *a2a.DeleteTaskPushConfigParams) error {
	if p == nil {
		return a2a.ErrInvalidParams
	}
	if err := o.own(ctx, p.TaskID); err != nil {
		return err
	}
	return o.RequestHandler.OnDeleteTaskPushConfig(ctx, p)
}

func failed(err error) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
}
