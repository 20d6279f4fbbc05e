package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
)

// A large answer in one write system call.
//
// net/http writes an answer through a 4 KB buffer per connection: the status
// line and the headers go into it, a body larger than the buffer fills it,
// the full buffer is written (one system call, one small TCP segment the
// client wakes up for), and then the rest of the body in a second call.
// Profiled under load (docs/performance.md), that first small write was
// about 8 % of a bare handler's CPU for a 200 KB answer.
//
// Connections accepted through CorkListener can be corked by a handler
// around a large write (corkOf, cork, uncork; writeJSONBody does for every
// JSON answer of corkMin bytes or more): while corked, a write
// smaller than corkDirect is copied and held; the next larger write sends
// what is held and itself with one writev; uncork sends anything still
// held. Nothing is reordered (the connection's writes all go through it),
// nothing is held past the handler's own write, and an uncorked connection
// writes exactly as before.
//
// A handler can also hand the cork header lines made once with a cached
// answer (corkLines): they are added to the end of the answer's header
// section as it leaves, so that net/http's header map holds only the
// per-request headers. Every header of the answer is still sent once: the
// lines are added only to a held "HTTP/1.x 200 " header section, and a
// connection whose held bytes are not one is closed with an error rather
// than sending an answer without them (fail closed).

// corkMin is the smallest body worth corking for: net/http copies a
// smaller one into its buffers and writes the whole answer at the end.
const corkMin = 2 << 10

// corkDirect is the size from which a corked write is sent at once, with
// whatever is held before it; smaller writes are held (net/http's are at
// most its 4 KB buffer).
const corkDirect = 16 << 10

// CorkListener wraps ln so that its TCP connections can be corked by the
// handlers of a server whose ConnContext is CorkContext. Other connections
// are returned as they are.
func CorkListener(ln net.Listener) net.Listener { return corkListener{ln} }

type corkListener struct{ net.Listener }

func (l corkListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		return &corkConn{Conn: tc, tcp: tc}, nil
	}
	return c, err
}

// CorkContext is an http.Server's ConnContext that lets the handlers find
// the connection's cork (see CorkListener).
func CorkContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*corkConn); ok {
		return context.WithValue(ctx, corkKey{}, cc)
	}
	return ctx
}

type corkKey struct{}

// corkOf returns the cork of the connection w answers on: w must be the
// server's own responseWriter (serve's), else there is none.
func corkOf(w http.ResponseWriter) *corkConn {
	if rw, ok := w.(*responseWriter); ok && rw.ctx != nil {
		return corkFrom(rw.ctx)
	}
	return nil
}

// corkFrom returns the cork of the request's connection, or nil.
func corkFrom(ctx context.Context) *corkConn {
	cc, _ := ctx.Value(corkKey{}).(*corkConn)
	return cc
}

// corkConn is a TCP connection whose writes can be held while corked.
// Like net.Conn writes from net/http, its writes come from one goroutine at
// a time (the connection's); cork and uncork are called from that
// goroutine, by the handler.
type corkConn struct {
	net.Conn
	tcp     *net.TCPConn
	corked  bool
	pending []byte      // held bytes (a copy)
	bufs    net.Buffers // the writev's vector, reused
	vec     [5][]byte
	// lines are header lines ("Key: value\r\n"...) still to be added to
	// the held answer's header section (corkLines); nil when none.
	// reqLines are the request's own lines added before them (moveLines),
	// in reqBuf, the connection's buffer for them, reused.
	lines, reqLines []byte
	reqBuf          []byte
}

// cork holds the connection's small writes until a large one or uncork.
func (c *corkConn) cork() { c.corked = true }

// corkLines corks the connection for a 200 answer and adds lines, complete
// header lines each ending in CRLF (made once with a cached answer, never
// from request input), at the end of that answer's header section. The
// caller must cork before the answer's header is written and have every
// byte of it reach the connection before uncork (flush the response
// writer): the lines go out with the first write that sends the header.
func (c *corkConn) corkLines(lines []byte) {
	c.corked = true
	c.lines = lines
}

// movedHeaders are the headers every authenticated answer carries whose
// values the server makes (the request id, the version, the rate limit's
// three): moveLines takes them out of net/http's header map into the
// answer's lines.
var movedHeaders = [...]string{"X-Request-Id", "X-Rootcause-Version", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"}

// moveLines moves the movedHeaders h holds, each with one value of
// printable ASCII, out of h into header lines added to the answer before
// the corkLines' lines. A header with another value stays in h for
// net/http to write. The caller must have called corkLines: the lines go
// out with that answer's header section, or the connection is closed.
func (c *corkConn) moveLines(h http.Header) {
	buf := c.reqBuf[:0]
	for _, k := range movedHeaders {
		vs, ok := h[k]
		if !ok || len(vs) != 1 || !printable(vs[0]) {
			continue
		}
		buf = append(append(append(append(buf, k...), ": "...), vs[0]...), "\r\n"...)
		delete(h, k)
	}
	c.reqBuf, c.reqLines = buf, buf
}

// printable reports whether v is all printable ASCII (no control
// character, no CR or LF), and so can be a header line's value as it is.
func printable(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// uncork sends whatever is held and ends the cork.
func (c *corkConn) uncork() error {
	c.corked = false
	return c.flush()
}

func (c *corkConn) flush() error {
	if c.lines != nil || c.reqLines != nil {
		_, err := c.writeWithLines(nil)
		return err
	}
	if len(c.pending) == 0 {
		return nil
	}
	p := c.pending
	c.pending = c.pending[:0]
	_, err := c.Conn.Write(p)
	return err
}

// errCorkLines is the error of an answer whose header section was not
// held when its header lines were to be added.
var errCorkLines = errors.New("cork: the answer's header section is not held; connection closed")

// writeWithLines sends the held bytes, which must begin with a complete
// "HTTP/1.x 200 " header section, with c.lines added at its end, and p
// after them, in one writev. It returns the bytes of p written. Anything
// else held is not sent: the connection is closed (the client sees it end
// rather than an answer without its headers).
func (c *corkConn) writeWithLines(p []byte) (int, error) {
	lines, reqLines := c.lines, c.reqLines
	c.lines, c.reqLines = nil, nil
	held := c.pending
	c.pending = c.pending[:0]
	end := headerEnd(held)
	if end < 0 {
		c.Conn.Close()
		return 0, errCorkLines
	}
	c.vec = [5][]byte{held[:end], reqLines, lines, held[end:], p}
	c.bufs = c.vec[:]
	n, err := c.bufs.WriteTo(c.tcp) // one writev
	c.vec, c.bufs = [5][]byte{}, nil
	before := int64(len(held) + len(reqLines) + len(lines))
	if err == nil && n != before+int64(len(p)) {
		err = io.ErrShortWrite
	}
	return int(max(n-before, 0)), err
}

// headerEnd returns where header lines are to be added to b, the held
// bytes of a 200 answer: just before the empty line that ends its header
// section. It returns -1 unless b begins with an HTTP/1.x 200 status line
// and holds the whole header section.
func headerEnd(b []byte) int {
	if len(b) < 13 || string(b[:7]) != "HTTP/1." || string(b[8:13]) != " 200 " {
		return -1
	}
	i := bytes.Index(b, []byte("\r\n\r\n"))
	if i < 0 {
		return -1
	}
	return i + 2
}

func (c *corkConn) Write(p []byte) (int, error) {
	if !c.corked {
		if len(c.pending) > 0 {
			if err := c.flush(); err != nil {
				return 0, err
			}
		}
		return c.Conn.Write(p)
	}
	if len(p) < corkDirect && len(c.pending)+len(p) <= corkDirect {
		if c.pending == nil {
			c.pending = make([]byte, 0, 4<<10)
		}
		c.pending = append(c.pending, p...)
		return len(p), nil
	}
	if c.lines != nil || c.reqLines != nil {
		return c.writeWithLines(p)
	}
	if len(c.pending) == 0 {
		return c.Conn.Write(p)
	}
	held := len(c.pending)
	c.vec = [5][]byte{c.pending, p}
	c.bufs = c.vec[:2]
	n, err := c.bufs.WriteTo(c.tcp) // one writev
	c.vec, c.bufs = [5][]byte{}, nil
	c.pending = c.pending[:0]
	if err == nil && n != int64(held+len(p)) {
		err = io.ErrShortWrite
	}
	written := int(n) - held
	if written < 0 {
		written = 0
		if err == nil {
			err = errors.New("cork: held bytes not written")
		}
	}
	return written, err
}

// ReadFrom keeps *net.TCPConn's sendfile and splice (net/http's
// response.ReadFrom uses them), after sending anything held.
func (c *corkConn) ReadFrom(r io.Reader) (int64, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	return c.tcp.ReadFrom(r)
}

// CloseWrite keeps net/http's graceful close of TCP connections.
func (c *corkConn) CloseWrite() error {
	if err := c.flush(); err != nil {
		return err
	}
	return c.tcp.CloseWrite()
}
