package bundle

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sync"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// MaxTraceLine is the longest traces/*.jsonl line read (one export
// request); a longer line is a malformed-bundle error, never loaded whole.
const MaxTraceLine = 64 << 20

// traceLine is one decoded line of a traces file.
type traceLine struct {
	file  int   // index into bundleTraces.files
	off   int64 // byte offset of the line
	line  int   // 1-based line number
	spans []*evidence.Span
	err   error
}

// linePool recycles line buffers between the reader and the decoders.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// forEachLine calls fn with every non-blank line of r, its byte offset and
// 1-based number. The slice is only valid during the call.
func forEachLine(r io.Reader, fn func(line []byte, off int64, n int) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var off int64
	var long []byte
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > MaxTraceLine {
				return fmt.Errorf("line %d: longer than %d bytes", n+1, MaxTraceLine)
			}
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		if len(line) > 0 {
			n++
			if t := bytes.TrimSpace(line); len(t) > 0 {
				if ferr := fn(t, off, n); ferr != nil {
					return ferr
				}
			}
			off += int64(len(line))
		}
		long = long[:0]
		if cap(long) > 4<<20 {
			long = nil // do not keep a huge buffer for the rest of the file
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// decodeLines reads the traces files in order and decodes their lines on
// every core, calling fn (always from the calling goroutine) with each
// decoded line, in no particular order. Memory stays bounded: a few lines
// per core are in flight. fn returning an error (or evidence.ErrStop) ends
// the read, and that error is returned.
func (t *bundleTraces) decodeLines(ctx context.Context, fn func(*traceLine) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := max(1, runtime.GOMAXPROCS(0))
	type job struct {
		file int
		off  int64
		line int
		data *[]byte // from linePool; the decoder copies what it keeps
	}
	jobs := make(chan job, 2*workers)
	results := make(chan *traceLine, 2*workers)
	var readErr error
	go func() { // reader
		defer close(jobs)
		for i, p := range t.files {
			f, err := t.fsys.Open(p)
			if err != nil {
				readErr = &evidence.Error{Source: "traces", Code: evidence.CodeMalformed, File: p, Err: err}
				return
			}
			err = forEachLine(f, func(line []byte, off int64, n int) error {
				buf := linePool.Get().(*[]byte)
				*buf = append((*buf)[:0], line...)
				select {
				case jobs <- job{file: i, off: off, line: n, data: buf}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			f.Close()
			if err != nil {
				if ctx.Err() == nil {
					readErr = &evidence.Error{Source: "traces", Code: evidence.CodeMalformed, File: p, Err: err}
				}
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				tl := &traceLine{file: j.file, off: j.off, line: j.line}
				err := otlpjson.Decode(*j.data, func(s *evidence.Span) error {
					tl.spans = append(tl.spans, s)
					return nil
				})
				if cap(*j.data) <= 4<<20 {
					linePool.Put(j.data) // a huge line's buffer is left to the GC
				}
				if err != nil {
					tl.spans = nil
					tl.err = &evidence.Error{Source: "traces", Code: evidence.CodeMalformed, File: t.files[j.file], Line: j.line, Err: err}
				}
				select {
				case results <- tl:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	var firstErr error
	for tl := range results {
		if firstErr != nil {
			continue // drain
		}
		if tl.err != nil {
			firstErr = tl.err
			cancel()
			continue
		}
		if err := fn(tl); err != nil {
			firstErr = err
			cancel()
		}
	}
	if firstErr != nil {
		return firstErr
	}
	if readErr != nil {
		return readErr
	}
	return ctx.Err()
}

// readLineAt decodes the one line of file i that starts at off.
func (t *bundleTraces) readLineAt(i int, off int64, fn func(*evidence.Span) error) error {
	p := t.files[i]
	f, err := t.fsys.Open(p)
	if err != nil {
		return &evidence.Error{Source: "traces", Code: evidence.CodeMalformed, File: p, Err: err}
	}
	defer f.Close()
	var r io.Reader = f
	if ra, ok := f.(io.ReaderAt); ok {
		r = io.NewSectionReader(ra, off, 1<<62)
	} else if s, ok := f.(io.Seeker); ok {
		if _, err := s.Seek(off, io.SeekStart); err != nil {
			return &evidence.Error{Source: "traces", Code: evidence.CodeMalformed, File: p, Err: err}
		}
	} else if _, err := io.CopyN(io.Discard, f, off); err != nil {
		return &evidence.Error{Source: "traces", Code: evidence.CodeMalformed, File: p, Err: err}
	}
	done := errors.New("done")
	err = forEachLine(r, func(line []byte, _ int64, _ int) error {
		if err := otlpjson.Decode(line, fn); err != nil {
			return err
		}
		return done
	})
	if err != nil && !errors.Is(err, done) {
		return &evidence.Error{Source: "traces", Code: evidence.CodeMalformed, File: p, Err: err}
	}
	return nil
}

// traceFiles lists traces/*.jsonl in name order.
func traceFiles(fsys fs.FS) []string {
	m, _ := fs.Glob(fsys, "traces/*.jsonl")
	return m
}
