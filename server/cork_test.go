package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/db"
)

// tcpPair returns both ends of a loopback TCP connection, the first
// accepted through CorkListener.
func tcpPair(t *testing.T) (*corkConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cl := CorkListener(ln)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := cl.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	cc, ok := srv.(*corkConn)
	if !ok {
		t.Fatalf("CorkListener accepted a %T", srv)
	}
	t.Cleanup(func() { cc.Close(); client.Close() })
	return cc, client
}

// threadWrites returns the write system calls the calling thread has made
// (/proc/thread-self/io), or -1 where that is not available.
func threadWrites() int { return writeCalls("/proc/thread-self/io") }

// writeCalls reads the count of write system calls (syscw) from a
// /proc io file, or -1 where that is not available.
func writeCalls(path string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}

// TestCorkOneWrite: corked, net/http's two writes of a large answer (its
// full 4 KB buffer, then the rest of the body) leave in one system call,
// byte for byte and in order; uncorked, the connection writes as it is
// asked to.
func TestCorkOneWrite(t *testing.T) {
	if threadWrites() < 0 {
		t.Skip("no /proc/thread-self/io")
	}
	head := bytes.Repeat([]byte("h"), 4096)
	body := make([]byte, 60<<10) // well under the loopback socket buffers
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	want := append(append([]byte{}, head...), body...)
	// The fewest write calls of a few tries: a try can be charged a write
	// of the runtime's own (waking the network poller) on the same thread.
	calls := func(corked bool) int {
		fewest := 1 << 30
		for range 5 {
			srv, client := tcpPair(t)
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(io.LimitReader(client, int64(len(want))))
				got <- b
			}()
			n := func() int {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				before := threadWrites()
				if corked {
					srv.cork()
				}
				if n, err := srv.Write(head); err != nil || n != len(head) {
					t.Fatalf("Write(head) = %d, %v", n, err)
				}
				if n, err := srv.Write(body); err != nil || n != len(body) {
					t.Fatalf("Write(body) = %d, %v", n, err)
				}
				if corked {
					if err := srv.uncork(); err != nil {
						t.Fatal(err)
					}
				}
				return threadWrites() - before
			}()
			if b := <-got; !bytes.Equal(b, want) {
				t.Fatalf("corked %v: received %d bytes, not what was written", corked, len(b))
			}
			fewest = min(fewest, n)
		}
		return fewest
	}
	if n := calls(false); n != 2 {
		t.Errorf("uncorked: %d write calls, want 2", n)
	}
	if n := calls(true); n != 1 {
		t.Errorf("corked: %d write calls, want 1", n)
	}
}

// TestCorkHoldsOnlyWhileCorked: small writes are held while corked and
// sent, in order, by uncork or by the next write after it; nothing is held
// once uncorked.
func TestCorkHoldsOnlyWhileCorked(t *testing.T) {
	srv, client := tcpPair(t)
	srv.cork()
	for _, s := range []string{"one ", "two "} {
		if n, err := srv.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if len(srv.pending) != len("one two ") {
		t.Fatalf("%d bytes held, want %d", len(srv.pending), len("one two "))
	}
	if err := srv.uncork(); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Write([]byte("three")); err != nil {
		t.Fatal(err)
	}
	if len(srv.pending) != 0 {
		t.Fatalf("%d bytes held after uncork", len(srv.pending))
	}
	got := make([]byte, len("one two three"))
	if _, err := io.ReadFull(client, got); err != nil || string(got) != "one two three" {
		t.Fatalf("received %q, %v", got, err)
	}
	// Held bytes above corkDirect go out with the write that passes it.
	srv.cork()
	small := bytes.Repeat([]byte("s"), corkDirect-10)
	srv.Write(small)
	srv.Write([]byte("0123456789abcdef"))
	if len(srv.pending) != 0 {
		t.Fatalf("%d bytes still held past corkDirect", len(srv.pending))
	}
	srv.uncork()
	rest := make([]byte, len(small)+16)
	if _, err := io.ReadFull(client, rest); err != nil || !bytes.HasSuffix(rest, []byte("0123456789abcdef")) || !bytes.HasPrefix(rest, small) {
		t.Fatalf("received %d bytes out of order, %v", len(rest), err)
	}
}

// TestCorkContextOnlyForCorkConns: the context of a connection that did not
// come through CorkListener has no cork, and a handler writes as before.
func TestCorkContextOnlyForCorkConns(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if corkFrom(CorkContext(context.Background(), a)) != nil {
		t.Fatal("a pipe has a cork")
	}
	srv, _ := tcpPair(t)
	if corkFrom(CorkContext(context.Background(), srv)) != srv {
		t.Fatal("CorkContext lost the connection's cork")
	}
}

// TestLargeEffectiveConfigThroughCork serves a 3-level effective config of
// about 160 KB through CorkListener and CorkContext as serve wires them,
// with keep-alive requests pipelined on one connection: each answer (the
// identity body, a 304, gzip, /auth/me, an error, the team's own config)
// arrives whole, in order, with its headers.
func TestLargeEffectiveConfigThroughCork(t *testing.T) {
	h := newHarness(t)
	for _, node := range []string{"acme", "platform", "payments"} {
		agents := map[string]any{}
		for i := range 100 {
			agents[fmt.Sprintf("custom_%s_%03d", node, i)] = map[string]any{"prompt": strings.Repeat("investigate carefully ", 22), "timeout": 60 + i}
		}
		setAgents(t, h, node, agents)
	}
	plain := h.do(req{path: "/api/v1/config/me/effective", token: "payments-read", header: map[string]string{"Accept-Encoding": "identity"}})
	if plain.status != 200 || len(plain.body) < 100<<10 {
		t.Fatalf("effective: %d, %d bytes", plain.status, len(plain.body))
	}
	etag := plain.header.Get("ETag")
	// The team's own config (about 50 KB), written by writeJSON.
	raw := h.do(req{path: "/api/v1/config/me/raw", token: "payments-read", header: map[string]string{"Accept-Encoding": "identity"}})
	if raw.status != 200 || len(raw.body) < 40<<10 {
		t.Fatalf("raw: %d, %d bytes", raw.status, len(raw.body))
	}

	// The harness serves through CorkListener and CorkContext.
	c := dialHarness(t, h)
	type ask struct {
		path, token, extra string
		status             int
		body               []byte
	}
	asks := []ask{
		{"/api/v1/config/me/effective", "payments-read", "", 200, plain.body},
		{"/api/v1/config/me/effective", "payments-read", "If-None-Match: " + etag + "\r\n", 304, nil},
		{"/api/v1/auth/me", "payments-read", "", 200, nil},
		{"/api/v1/config/me/effective", "payments-read", "Accept-Encoding: gzip\r\n", 200, nil},
		{"/api/v1/config/me/effective", "", "", 401, nil},
		{"/api/v1/config/me/raw", "payments-read", "", 200, raw.body},
		{"/api/v1/config/me/effective", "payments-read", "", 200, plain.body},
	}
	var reqs bytes.Buffer
	for _, a := range asks {
		fmt.Fprintf(&reqs, "GET %s HTTP/1.1\r\nHost: rootcause\r\n%s", a.path, a.extra)
		if a.token != "" {
			fmt.Fprintf(&reqs, "Authorization: Bearer %s\r\n", h.tokens[a.token])
		}
		reqs.WriteString("\r\n")
	}
	if _, err := c.Write(reqs.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i, a := range asks {
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != a.status {
			t.Fatalf("answer %d (%s): %d, %v", i, a.path, resp.StatusCode, err)
		}
		if resp.Header.Get(HeaderRequestID) == "" || resp.Header.Get(HeaderVersion) == "" {
			t.Errorf("answer %d: headers %v", i, resp.Header)
		}
		if a.body != nil {
			if !bytes.Equal(body, a.body) || resp.Header.Get("Content-Length") != strconv.Itoa(len(a.body)) {
				t.Fatalf("answer %d: %d bytes (Content-Length %s), want the %d of the effective config", i, len(body), resp.Header.Get("Content-Length"), len(a.body))
			}
			for _, k := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "X-Content-Type-Options", "Content-Type"} {
				if resp.Header.Get(k) == "" {
					t.Errorf("answer %d: no %s", i, k)
				}
			}
			if strings.HasSuffix(a.path, "/effective") && (resp.Header.Get("ETag") != etag || resp.Header.Get("Vary") == "" || resp.Header.Get("Cache-Control") == "") {
				t.Errorf("answer %d: validators %v", i, resp.Header)
			}
		}
	}
}

// processWrites returns the write system calls this process has made
// (/proc/self/io), or -1 where that is not available.
func processWrites() int { return writeCalls("/proc/self/io") }

// TestLargeAnswerOneServerWrite: a large JSON answer through the server as
// serve wires it costs the server one write call. Counted for the whole
// process around one request on a raw connection: the request's write, the
// answer's, and nothing else in the fewest of a few tries.
func TestLargeAnswerOneServerWrite(t *testing.T) {
	if processWrites() < 0 {
		t.Skip("no /proc/self/io")
	}
	h := newHarness(t)
	agents := map[string]any{}
	for i := range 100 {
		agents[fmt.Sprintf("custom_%03d", i)] = map[string]any{"prompt": strings.Repeat("investigate carefully ", 22)}
	}
	setAgents(t, h, "payments", agents)
	c := dialHarness(t, h)
	br := bufio.NewReader(c)
	request := []byte("GET /api/v1/config/me/raw HTTP/1.1\r\nHost: rootcause\r\nAuthorization: Bearer " + h.tokens["payments-read"] + "\r\n\r\n")
	fewest, size := 1<<30, int64(0)
	for range 10 {
		before := processWrites()
		if _, err := c.Write(request); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n < 40<<10 {
			t.Fatalf("raw config: %d, %d bytes", resp.StatusCode, n)
		}
		fewest, size = min(fewest, processWrites()-before), n
	}
	if fewest != 2 {
		t.Errorf("%d write calls for a request and its %d KB answer, want 2 (one each)", fewest, size>>10)
	}
}

// TestCorkLines: header lines handed to corkLines are added once, at the
// end of the held answer's header section, whether the answer leaves with
// a large write or at uncork; held bytes that are not a 200 answer's
// complete header section are never sent without them: the connection is
// closed.
func TestCorkLines(t *testing.T) {
	const lines = "Etag: \"abc\"\r\nVary: Accept-Encoding\r\n"
	head := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: x\r\n\r\n"
	want := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: x\r\n" + lines + "\r\n"
	large := bytes.Repeat([]byte("b"), corkDirect+1)
	for _, c := range []struct {
		name   string
		writes [][]byte
		want   string
	}{
		{"small answer, sent at uncork", [][]byte{[]byte(head + "hello")}, want + "hello"},
		{"header and body apart", [][]byte{[]byte(head[:10]), []byte(head[10:] + "he"), []byte("llo")}, want + "hello"},
		{"large body", [][]byte{[]byte(head + "x"), large}, want + "x" + string(large)},
		{"HTTP/1.0", [][]byte{[]byte(strings.Replace(head, "1.1", "1.0", 1) + "hello")}, strings.Replace(want, "1.1", "1.0", 1) + "hello"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, client := tcpPair(t)
			srv.corkLines([]byte(lines))
			for _, w := range c.writes {
				if n, err := srv.Write(w); err != nil || n != len(w) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if err := srv.uncork(); err != nil {
				t.Fatal(err)
			}
			// The next answer is not touched.
			if _, err := srv.Write([]byte("next")); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(c.want)+len("next"))
			if _, err := io.ReadFull(client, got); err != nil || string(got) != c.want+"next" {
				t.Fatalf("received %q, %v; want %q", got, err, c.want+"next")
			}
		})
	}
	for _, c := range []struct {
		name   string
		writes [][]byte
	}{
		{"nothing held", [][]byte{large}},
		{"not a 200", [][]byte{[]byte("HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno")}},
		{"an interim answer", [][]byte{[]byte("HTTP/1.1 100 Continue\r\n\r\n")}},
		{"header section incomplete", [][]byte{[]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n")}},
		{"not HTTP", [][]byte{[]byte("hello world, not an answer\r\n\r\n")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, client := tcpPair(t)
			srv.corkLines([]byte(lines))
			var err error
			for _, w := range c.writes {
				if _, err = srv.Write(w); err != nil {
					break
				}
			}
			if err == nil {
				err = srv.uncork()
			}
			if !errors.Is(err, errCorkLines) {
				t.Fatalf("err = %v, want %v", err, errCorkLines)
			}
			if b, _ := io.ReadAll(client); len(b) != 0 {
				t.Fatalf("the client received %q", b)
			}
		})
	}
}

// TestEffectiveConfigHeadersOnTheWire: through CorkListener, as serve
// wires it, the effective config's answers (identity and gzip) carry every
// header of the contract and the validators exactly once, in one header
// section, with the same values as through the map (the local socket's
// path); a 304 and a small answer are unchanged.
func TestEffectiveConfigHeadersOnTheWire(t *testing.T) {
	h := newHarness(t)
	agents := map[string]any{}
	for i := range 100 {
		// Hex digests, so that the gzip answer is also large enough to cork.
		sum := sha256.Sum256([]byte(strconv.Itoa(i)))
		agents[fmt.Sprintf("custom_%03d", i)] = map[string]any{"prompt": "investigate carefully " + hex.EncodeToString(sum[:])}
	}
	setAgents(t, h, "payments", agents)
	c := dialHarness(t, h)
	br := bufio.NewReader(c)
	// raw sends one request and returns its answer's header lines (the
	// status line first) and body.
	raw := func(extra string) ([]string, []byte) {
		t.Helper()
		fmt.Fprintf(c, "GET /api/v1/config/me/effective HTTP/1.1\r\nHost: rootcause\r\nAuthorization: Bearer %s\r\n%s\r\n", h.tokens["payments-read"], extra)
		var lines []string
		length := 0
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(l, "\r\n") {
				t.Fatalf("line %q does not end in CRLF", l)
			}
			l = strings.TrimSuffix(l, "\r\n")
			if l == "" {
				break
			}
			if k, v, ok := strings.Cut(l, ": "); ok && k == "Content-Length" {
				length, _ = strconv.Atoi(v)
			}
			lines = append(lines, l)
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatal(err)
		}
		return lines, body
	}
	// Through the map, for the values: the handler without a connection.
	mapped := func(accept string) (http.Header, []byte) {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/config/me/effective", nil)
		r.Header.Set("Authorization", "Bearer "+h.tokens["payments-read"])
		r.Header.Set("Accept-Encoding", accept)
		w := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("without a connection: %d", w.Code)
		}
		return w.Header(), w.Body.Bytes()
	}
	perRequest := map[string]bool{"Date": true, "X-Request-Id": true, "X-Ratelimit-Remaining": true, "X-Ratelimit-Reset": true}
	ids := map[string]bool{}
	for _, accept := range []string{"identity", "gzip", "identity", "gzip"} {
		lines, body := raw("Accept-Encoding: " + accept + "\r\n")
		if lines[0] != "HTTP/1.1 200 OK" {
			t.Fatalf("%s: status line %q", accept, lines[0])
		}
		seen := map[string]int{}
		got := http.Header{}
		for _, l := range lines[1:] {
			k, v, ok := strings.Cut(l, ": ")
			if !ok {
				t.Fatalf("%s: header line %q", accept, l)
			}
			seen[k]++
			got.Add(k, v)
		}
		want, wantBody := mapped(accept)
		want.Set("Date", "") // net/http adds it on the wire only
		// The body leaves from the cached slice (writeHeld): byte for
		// byte the map's answer, on a connection kept alive for the next.
		if !bytes.Equal(body, wantBody) {
			t.Errorf("%s: %d bytes on the wire differ from the map's %d", accept, len(body), len(wantBody))
		}
		for k := range want {
			if seen[k] != 1 {
				t.Errorf("%s: %s sent %d times, want once", accept, k, seen[k])
			}
			if !perRequest[k] && got.Get(k) != want.Get(k) {
				t.Errorf("%s: %s = %q on the wire, %q through the map", accept, k, got.Get(k), want.Get(k))
			}
		}
		for k := range seen {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: %s sent, not in the map's answer", accept, k)
			}
		}
		// The request's own headers (moved out of the map into lines on
		// this path) are all there, the id this request's own: a fresh
		// one on the same connection, whose line buffer is reused.
		for _, k := range movedHeaders {
			if seen[k] != 1 {
				t.Errorf("%s: %s sent %d times", accept, k, seen[k])
			}
		}
		if id := got.Get("X-Request-Id"); len(id) != requestIDLen || ids[id] {
			t.Errorf("%s: request id %q is not a fresh one", accept, id)
		} else {
			ids[id] = true
		}
		if strconv.Itoa(len(body)) != got.Get("Content-Length") || len(body) < 2<<10 {
			t.Errorf("%s: %d bytes for Content-Length %s", accept, len(body), got.Get("Content-Length"))
		}
		// A 304 for the tag just sent.
		lines304, body304 := raw("Accept-Encoding: " + accept + "\r\nIf-None-Match: " + got.Get("Etag") + "\r\n")
		if lines304[0] != "HTTP/1.1 304 Not Modified" || len(body304) != 0 {
			t.Fatalf("%s: If-None-Match: %q", accept, lines304)
		}
	}
}

// setAgents writes a team's custom agents into its node config.
func setAgents(t *testing.T, h *harness, node string, agents map[string]any) {
	t.Helper()
	if _, err := h.db.PatchNodeConfig(context.Background(), node, map[string]any{"agents": agents}, db.Actor{ID: "test"}, nil); err != nil {
		t.Fatal(err)
	}
}

// dialHarness opens a connection to the harness's server, through its
// CorkListener, closed when the test ends.
func dialHarness(t *testing.T, h *harness) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMoveLines: the request's own headers leave the map as lines only
// with one value of printable ASCII each; anything else (a value with CR or
// LF, two values, another header) stays in the map for net/http to write,
// and the connection's buffer is reused without the last answer's lines.
func TestMoveLines(t *testing.T) {
	for _, tc := range []struct {
		name      string
		h         http.Header
		wantLines string
		wantLeft  []string
	}{
		{"all five", http.Header{
			"X-Request-Id": {"0123abcd"}, "X-Rootcause-Version": {"v1.2.3"}, "X-Ratelimit-Limit": {"100"},
			"X-Ratelimit-Remaining": {"99"}, "X-Ratelimit-Reset": {"1764140000"}, "Content-Type": {"application/json"},
		}, "X-Request-Id: 0123abcd\r\nX-Rootcause-Version: v1.2.3\r\nX-Ratelimit-Limit: 100\r\nX-Ratelimit-Remaining: 99\r\nX-Ratelimit-Reset: 1764140000\r\n",
			[]string{"Content-Type"}},
		{"CR LF in a value", http.Header{"X-Request-Id": {"id"}, "X-Rootcause-Version": {"v1\r\nX-Evil: 1"}},
			"X-Request-Id: id\r\n", []string{"X-Rootcause-Version"}},
		{"control and non-ASCII bytes", http.Header{"X-Rootcause-Version": {"v\x00"}, "X-Ratelimit-Limit": {"1é"}},
			"", []string{"X-Ratelimit-Limit", "X-Rootcause-Version"}},
		{"two values", http.Header{"X-Ratelimit-Limit": {"1", "2"}, "X-Ratelimit-Reset": {"5"}},
			"X-Ratelimit-Reset: 5\r\n", []string{"X-Ratelimit-Limit"}},
		{"none", http.Header{"Etag": {`"x"`}}, "", []string{"Etag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &corkConn{reqBuf: []byte("stale lines of the last answer")}
			c.moveLines(tc.h)
			if string(c.reqLines) != tc.wantLines {
				t.Errorf("lines %q, want %q", c.reqLines, tc.wantLines)
			}
			var left []string
			for k := range tc.h {
				left = append(left, k)
			}
			slices.Sort(left)
			if !slices.Equal(left, tc.wantLeft) {
				t.Errorf("left in the map %q, want %q", left, tc.wantLeft)
			}
		})
	}
}
