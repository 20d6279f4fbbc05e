package agent

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/rootcause/rootcause/db"
)

// EventFlushInterval is the longest a run's progress and tool-call events
// wait in memory before they are stored (and streamed). Events of a run
// that ends sooner are stored with its final record, in one transaction.
const EventFlushInterval = 100 * time.Millisecond

// eventLog buffers one run's progress and tool-call events. A run used to
// store each in its own write transaction (its own fsync); now they are
// stored together at most EventFlushInterval apart, and whatever is
// pending when the run ends goes into the final write, before the final
// status event. A nil *eventLog buffers nothing (its final is a plain
// write with the status event).
type eventLog struct {
	rt *Runtime
	id string

	write sync.Mutex // held across each store write: keeps the log in order

	mu       sync.Mutex
	pending  []db.InvestigationEvent
	progress *db.Progress // the latest step, not yet stored
	timer    *time.Timer
	closed   bool // the final record is written; later events are dropped
}

// add buffers ev (and p, the progress to store with it, if not nil).
func (l *eventLog) add(typ string, data any, p *db.Progress) {
	if l == nil {
		return
	}
	raw, _ := json.Marshal(data)
	ev := db.InvestigationEvent{Time: l.rt.cfg.Now(), Type: typ, Data: raw}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.pending = append(l.pending, ev)
	if p != nil {
		l.progress = p
	}
	if l.timer == nil {
		l.timer = time.AfterFunc(EventFlushInterval, l.flush)
	}
}

// take returns and clears what is pending.
func (l *eventLog) take(closing bool) ([]db.InvestigationEvent, *db.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs, p := l.pending, l.progress
	l.pending, l.progress = nil, nil
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if closing {
		l.closed = true
	}
	return evs, p
}

// flush stores the pending events and progress of a running investigation
// in one write and wakes the watchers.
func (l *eventLog) flush() {
	l.write.Lock()
	defer l.write.Unlock()
	evs, p := l.take(false)
	if len(evs) == 0 && p == nil {
		return
	}
	_, err := l.rt.cfg.Store.WriteInvestigation(context.Background(), l.id, db.InvestigationWrite{
		Update: func(i *db.Investigation) error {
			if i.Status != db.StatusRunning {
				return errSkip // final already (cancelled): nothing more to record
			}
			if p != nil {
				i.Progress = p
			}
			return nil
		},
		Events: func(*db.Investigation) []db.InvestigationEvent { return slices.Clone(evs) },
	})
	if err != nil && err != errSkip {
		l.rt.cfg.Logger.Warn("recording progress", "investigation_id", l.id, "err", err)
	}
	l.rt.notify(l.id)
}

// final stores w, the write that makes investigation id final, together
// with the pending events and, last, the event of the new status, and
// closes the log. On error the log stays open.
func (l *eventLog) final(ctx context.Context, w db.InvestigationWrite, rt *Runtime, id string) (*db.Investigation, error) {
	var evs []db.InvestigationEvent
	if l != nil {
		l.write.Lock()
		defer l.write.Unlock()
		evs, _ = l.take(false)
	}
	w.Events = func(inv *db.Investigation) []db.InvestigationEvent {
		return append(slices.Clip(evs), rt.statusEvent(inv)...)
	}
	inv, err := rt.cfg.Store.WriteInvestigation(ctx, id, w)
	if l != nil {
		if err != nil {
			l.mu.Lock()
			l.pending = append(evs, l.pending...) // kept for the write that does end the run
			l.mu.Unlock()
		} else {
			l.take(true)
		}
	}
	if err == nil {
		rt.notify(id)
	}
	return inv, err
}
