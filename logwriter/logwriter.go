// Package logwriter is the server log's output: an io.Writer that takes a
// line into memory and returns at once, while one goroutine writes what has
// accumulated to the real output in a single write call. Under load many
// log lines share one system call instead of one each, and no request waits
// for the terminal, journal or disk behind stderr.
//
// The goroutine gathers lines for up to BatchDelay after the first one
// before it writes, so that a busy server makes about twenty write calls a
// second rather than one per request or two. Each batch also costs the
// goroutine's wake-ups (the first line's signal and the delay's timer),
// which on a busy server were more of the log's cost than formatting and
// writing the lines (docs/performance.md).
//
// Nothing is ever dropped: when more than the buffer limit is waiting, Write
// blocks until the background write has caught up (back-pressure instead of
// loss), Flush waits until everything written so far has reached the
// output, and Close writes out the rest before it returns; writes after
// Close go straight to the output.
package logwriter

import (
	"io"
	"sync"
	"time"
)

// DefaultLimit is the amount of pending output, in bytes, beyond which
// Write waits for the background write.
const DefaultLimit = 1 << 20

// BatchDelay is how long the background goroutine waits after waking for
// a line before it writes what has accumulated: a log line reaches the
// output at most about this much later than without the wait (Flush and
// Close end the wait at once). A batch that reaches half the limit is
// written at once.
const BatchDelay = 50 * time.Millisecond

// Writer is an asynchronous buffered writer. Create it with New; it is safe
// for concurrent use. Each Write's bytes reach the output contiguously and
// in the order of the Write calls.
type Writer struct {
	out   io.Writer
	limit int
	delay time.Duration

	mu       sync.Mutex
	cond     *sync.Cond // signalled when a background write completes
	pending  []byte     // bytes accepted and not yet handed to out
	spare    []byte     // the buffer being written (swapped with pending)
	writing  bool       // the loop is writing spare
	written  uint64     // generation: number of completed background writes
	closing  bool
	closed   bool // the loop has exited; writes go straight to out
	err      error
	wake     chan struct{}
	hurry    chan struct{} // ends the batch delay early (Flush, Close, a full batch)
	loopDone chan struct{}
}

// New returns a Writer writing to out with DefaultLimit and starts its
// background goroutine; Close stops it.
func New(out io.Writer) *Writer { return NewLimit(out, DefaultLimit) }

// NewLimit is New with a pending-bytes limit (at least 4 KiB).
func NewLimit(out io.Writer, limit int) *Writer {
	limit = max(limit, 4<<10)
	w := &Writer{out: out, limit: limit, delay: BatchDelay, wake: make(chan struct{}, 1),
		hurry: make(chan struct{}, 1), loopDone: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.loop()
	return w
}

// Write accepts p and returns len(p); the bytes are written to the output
// later, in order. It blocks only while more than the limit is pending. The
// error of an earlier background write is returned once, by the next
// Write, Flush or Close.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.out.Write(p)
	}
	for len(w.pending) > 0 && len(w.pending)+len(p) > w.limit && !w.closed {
		w.cond.Wait()
	}
	if w.closed {
		return w.out.Write(p)
	}
	w.pending = append(w.pending, p...)
	select {
	case w.wake <- struct{}{}:
	default:
	}
	if len(w.pending) >= w.limit/2 {
		w.signalHurry()
	}
	if err := w.err; err != nil {
		w.err = nil
		return len(p), err
	}
	return len(p), nil
}

// loop writes whatever is pending, one write call per batch, until Close.
func (w *Writer) loop() {
	defer close(w.loopDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		w.mu.Lock()
		for len(w.pending) == 0 && !w.closing {
			w.mu.Unlock()
			<-w.wake
			w.mu.Lock()
		}
		if len(w.pending) == 0 && w.closing {
			w.closed = true
			w.cond.Broadcast()
			w.mu.Unlock()
			return
		}
		if !w.closing && len(w.pending) < w.limit/2 {
			// Let more lines join this batch.
			w.mu.Unlock()
			timer.Reset(w.delay)
			select {
			case <-timer.C:
			case <-w.hurry:
				timer.Stop()
			}
			w.mu.Lock()
		}
		w.pending, w.spare = w.spare[:0], w.pending
		w.writing = true
		w.mu.Unlock()

		_, err := w.out.Write(w.spare)

		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = err
		}
		if cap(w.spare) > 4*w.limit {
			w.spare = nil // do not keep a buffer grown by one huge line
		}
		w.writing = false
		w.written++
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

// Flush waits until every byte written before the call has been handed to
// the output, and returns the error of a failed background write, if any.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Bytes pending now are written by the next batch to start: wait for
	// the write in progress (if any) and then for one more.
	need := w.written
	if w.writing {
		need++
	}
	if len(w.pending) > 0 {
		need++
		w.signalHurry()
	}
	for w.written < need && !w.closed {
		w.cond.Wait()
	}
	err := w.err
	w.err = nil
	return err
}

// Close writes out everything pending, stops the background goroutine and
// returns the first unreported write error. Later writes go straight to the
// output. Close is idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	w.signalHurry()
	<-w.loopDone
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	w.err = nil
	return err
}

// signalHurry ends a batch delay in progress, or the next one.
func (w *Writer) signalHurry() {
	select {
	case w.hurry <- struct{}{}:
	default:
	}
}
