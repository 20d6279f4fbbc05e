package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/secretref"
)

// Restart backoff of a crashing stdio server: the first restart is
// immediate, then 1s, 2s, 4s ... up to maxBackoff while crashes continue.
const (
	baseBackoff = time.Second
	maxBackoff  = 30 * time.Second
)

// mcpSession is one live MCP session and how to end it.
type mcpSession struct {
	cs      *mcp.ClientSession
	dead    <-chan struct{} // closed when the peer is gone (stdio: the child exited); nil: unknown
	stop    func() error
	started time.Time
	pid     int // stdio: the child's pid (and process group); 0 otherwise
}

func (s *mcpSession) alive() bool {
	if s.dead == nil {
		return true
	}
	select {
	case <-s.dead:
		return false
	default:
		return true
	}
}

// mcpConn is an MCP client over a dial function (streamable HTTP or a
// supervised stdio child). A session found broken is dropped and a new
// one dialled at the next call.
type mcpConn struct {
	name   string
	maxOut int
	dial   func(ctx context.Context) (*mcpSession, error)

	mu        sync.Mutex
	sess      *mcpSession
	closed    bool
	crashes   int // consecutive broken sessions
	lastStart time.Time
}

func newMCPClient(version string) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "rootcause", Version: version}, nil)
}

// connectDetached connects with a context that outlives the call (a
// session lives on after the call that dialled it), while still giving up
// when ctx ends before the handshake completes.
func connectDetached(ctx context.Context, client *mcp.Client, t mcp.Transport) (*mcp.ClientSession, context.CancelFunc, error) {
	connCtx, cancel := context.WithCancel(context.Background())
	stopAF := context.AfterFunc(ctx, cancel)
	cs, err := client.Connect(connCtx, t, nil)
	if !stopAF() {
		if err == nil {
			_ = cs.Close()
		}
		err = fmt.Errorf("connecting: %w", context.Cause(ctx))
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return cs, cancel, nil
}

func (c *mcpConn) session(ctx context.Context) (*mcpSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, &evidence.Error{Source: source(c.name), Code: evidence.CodeUnavailable, Err: errors.New("the tool server client is stopped")}
	}
	if c.sess != nil && c.sess.alive() {
		return c.sess, nil
	}
	if c.sess != nil {
		old := c.sess
		c.sess = nil
		c.crashes++
		_ = old.stop()
	}
	if c.crashes > 1 {
		wait := baseBackoff << min(c.crashes-2, 5)
		wait = min(wait, maxBackoff) - time.Since(c.lastStart)
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, &evidence.Error{Source: source(c.name), Code: evidence.CodeUnavailable,
					Err: fmt.Errorf("the server failed %d times in a row; the next restart is in %s", c.crashes, wait.Round(time.Millisecond))}
			}
		}
	}
	c.lastStart = time.Now()
	s, err := c.dial(ctx)
	if err != nil {
		c.crashes++
		return nil, &evidence.Error{Source: source(c.name), Code: evidence.CodeUnavailable, Err: &transportError{err}}
	}
	c.sess = s
	return s, nil
}

// drop ends s after a transport failure, if it is still the current one.
func (c *mcpConn) drop(s *mcpSession) {
	c.mu.Lock()
	if c.sess != s {
		c.mu.Unlock()
		return
	}
	c.sess = nil
	c.crashes++
	c.mu.Unlock()
	_ = s.stop()
}

func (c *mcpConn) ok() {
	c.mu.Lock()
	c.crashes = 0
	c.mu.Unlock()
}

func (c *mcpConn) close() error {
	c.mu.Lock()
	c.closed = true
	s := c.sess
	c.sess = nil
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.stop()
}

// failed classifies a session error: JSON-RPC errors from the server leave
// the session up; anything else drops it.
func (c *mcpConn) failed(ctx context.Context, s *mcpSession, what string, err error) error {
	var we *jsonrpc.Error
	// The SDK reports its own transport failures as JSON-RPC errors in the
	// implementation range (-32001 unknown, -32003 client closing, -32004
	// server closing, -32005 rejected by transport): those are not answers
	// of the server.
	local := errors.As(err, &we) && (we.Code == -32001 || (we.Code <= -32003 && we.Code >= -32005))
	if we != nil && !local {
		code := evidence.CodeInvalid
		if we.Code == jsonrpc.CodeMethodNotFound {
			code = evidence.CodeUnavailable
		}
		if strings.Contains(strings.ToLower(we.Message), "unknown tool") || strings.Contains(strings.ToLower(we.Message), "not found") {
			return &evidence.Error{Source: source(c.name), Code: evidence.CodeUnavailable, Err: fmt.Errorf("%w: %s: %s", errToolMissing, what, we.Message)}
		}
		return &evidence.Error{Source: source(c.name), Code: code, Err: fmt.Errorf("%s: the server answered error %d: %s", what, we.Code, cut(we.Message, 2000))}
	}
	if ctx.Err() != nil {
		// Our deadline or cancellation: the session may be fine, but a
		// stdio request cannot be withdrawn reliably; keep it.
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	c.drop(s)
	if !s.alive() {
		return &evidence.Error{Source: source(c.name), Code: evidence.CodeUnavailable,
			Err: &transportError{fmt.Errorf("%s: the server process exited: %v", what, err)}}
	}
	return &evidence.Error{Source: source(c.name), Code: evidence.CodeUnavailable, Err: &transportError{fmt.Errorf("%s: %w", what, err)}}
}

func (c *mcpConn) list(ctx context.Context) ([]ToolInfo, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	var infos []ToolInfo
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		res, err := s.cs.ListTools(ctx, params)
		if err != nil {
			return nil, c.failed(ctx, s, "tools/list", err)
		}
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			schema, err := json.Marshal(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %q: bad input schema: %w", t.Name, err)
			}
			desc := t.Description
			if desc == "" {
				desc = t.Title
			}
			ro := true
			if a := t.Annotations; a != nil && !a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint {
				ro = false
			}
			infos = append(infos, ToolInfo{Name: t.Name, Description: desc, Parameters: schema, ReadOnly: ro})
		}
		if res.NextCursor == "" || page > 50 {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	c.ok()
	return parseToolList(c.name, infos)
}

func (c *mcpConn) call(ctx context.Context, tool string, args json.RawMessage) (*Result, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	var arguments any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		arguments = args
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		return nil, c.failed(ctx, s, "tools/call "+tool, err)
	}
	c.ok()
	text, truncated := joinText(res.Content, c.maxOut)
	if res.IsError {
		if text == "" {
			text = "(no message)"
		}
		return nil, &evidence.Error{Source: source(c.name), Code: evidence.CodeInvalid,
			Err: fmt.Errorf("tool %s reported an error: %s", tool, cut(text, 4000))}
	}
	out := &Result{Content: text, Truncated: truncated}
	if text == "" && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil && len(b) <= c.maxOut {
			out.Content = json.RawMessage(b)
		} else if err == nil {
			out.Content, out.Truncated = string(b[:c.maxOut]), true
		}
	}
	return out, nil
}

// joinText joins the text parts of a result (other parts are described),
// within max bytes.
func joinText(content []mcp.Content, max int) (string, bool) {
	var sb strings.Builder
	for _, p := range content {
		var s string
		switch v := p.(type) {
		case *mcp.TextContent:
			s = v.Text
		case *mcp.ImageContent:
			s = fmt.Sprintf("[image %s, %d bytes]", v.MIMEType, len(v.Data))
		case *mcp.AudioContent:
			s = fmt.Sprintf("[audio %s, %d bytes]", v.MIMEType, len(v.Data))
		case *mcp.ResourceLink:
			s = fmt.Sprintf("[resource %s]", v.URI)
		case *mcp.EmbeddedResource:
			if v.Resource != nil {
				s = v.Resource.Text
				if s == "" {
					s = fmt.Sprintf("[resource %s]", v.Resource.URI)
				}
			}
		default:
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(s)
		if sb.Len() > max {
			return cut(sb.String(), max), true
		}
	}
	return sb.String(), false
}

func (c *mcpConn) ping(ctx context.Context) error {
	s, err := c.session(ctx)
	if err != nil {
		return err
	}
	if err := s.cs.Ping(ctx, nil); err != nil {
		return c.failed(ctx, s, "ping", err)
	}
	return nil
}

// headerTransport adds resolved headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

func newMCPHTTPConn(def Definition, client *http.Client, res secretref.Resolver, maxOut int, version string) (conn, error) {
	u, err := url.Parse(def.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tool server %q: url must be an http or https URL", def.Name)
	}
	c := &mcpConn{name: def.Name, maxOut: maxOut}
	c.dial = func(ctx context.Context) (*mcpSession, error) {
		headers, err := resolveAll(ctx, res, def.Headers, "headers")
		if err != nil {
			return nil, err
		}
		base := client.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		hc := *client
		hc.Transport = &headerTransport{base: base, headers: headers}
		t := &mcp.StreamableClientTransport{Endpoint: def.URL, HTTPClient: &hc, MaxRetries: 2, DisableStandaloneSSE: true}
		cs, cancel, err := connectDetached(ctx, newMCPClient(version), t)
		if err != nil {
			return nil, unwrapURL(err)
		}
		return &mcpSession{cs: cs, started: time.Now(), stop: func() error {
			err := cs.Close()
			cancel()
			return err
		}}, nil
	}
	return c, nil
}

// childEnv is the environment of a stdio child: PATH (so that a command
// such as "node" can find its helpers) plus the configured variables,
// resolved from their references. Nothing else of the server's
// environment is passed.
func childEnv(ctx context.Context, def Definition, res secretref.Resolver) ([]string, error) {
	env := []string{"PATH=" + os.Getenv("PATH")}
	vals, err := resolveAll(ctx, res, def.Env, "env")
	if err != nil {
		return nil, err
	}
	for k, v := range vals {
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("env %s: the value contains a NUL byte", k)
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

// stderrTail keeps the last bytes a child wrote to stderr, for errors.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
}

const stderrKeep = 2048

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrKeep {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-stderrKeep:]...)
	}
	return len(p), nil
}

func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "?"))
}

// newStdioConn supervises a child speaking MCP over stdin/stdout. The
// child runs in its own process group; it is started at the first call,
// restarted at the next call after it dies, and stopped by closing its
// stdin, then SIGTERM to the group after grace, then SIGKILL after another
// grace (and a final SIGKILL sweep of the group).
func newStdioConn(def Definition, res secretref.Resolver, maxOut int, grace time.Duration, version string, log *slog.Logger) (conn, error) {
	if def.Command == "" {
		return nil, fmt.Errorf("tool server %q: command is required for transport mcp-stdio", def.Name)
	}
	c := &mcpConn{name: def.Name, maxOut: maxOut}
	c.dial = func(ctx context.Context) (*mcpSession, error) {
		env, err := childEnv(ctx, def, res)
		if err != nil {
			return nil, err
		}
		p, err := startChild(def, env, grace)
		if err != nil {
			return nil, err
		}
		t := &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}
		cs, cancel, err := connectDetached(ctx, newMCPClient(version), t)
		if err != nil {
			_ = p.terminate(nil)
			if tail := p.stderr.String(); tail != "" {
				err = fmt.Errorf("%w (stderr: %s)", err, cut(tail, 500))
			}
			return nil, fmt.Errorf("starting %s: %w", def.Command, err)
		}
		log.Info("tool server child started", "server", def.Name, "pid", p.cmd.Process.Pid)
		return &mcpSession{cs: cs, dead: p.exited, started: time.Now(), pid: p.Pid(), stop: func() error {
			err := p.terminate(cs)
			cancel()
			log.Info("tool server child stopped", "server", def.Name, "pid", p.cmd.Process.Pid)
			return err
		}}, nil
	}
	return c, nil
}

// child is a running stdio server.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end
	stdout *os.File // our end
	stderr *stderrTail
	exited chan struct{}
	grace  time.Duration
	once   sync.Once
	err    error
}

func startChild(def Definition, env []string, grace time.Duration) (*child, error) {
	cmd := exec.Command(def.Command, def.Args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW, errR, errW} {
			f.Close()
		}
		return nil, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	p := &child{cmd: cmd, stdin: inW, stdout: outR, stderr: &stderrTail{}, exited: make(chan struct{}), grace: grace}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := errR.Read(buf)
			if n > 0 {
				_, _ = p.stderr.Write(buf[:n])
			}
			if err != nil {
				errR.Close()
				return
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid returns the child's process id (also its process group id).
func (p *child) Pid() int { return p.cmd.Process.Pid }

// terminate stops the child: close the session (and so its stdin), wait
// grace, SIGTERM the group, wait grace, SIGKILL the group; finally SIGKILL
// the group once more to reap anything the child left behind.
func (p *child) terminate(cs *mcp.ClientSession) error {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		if cs != nil {
			done := make(chan struct{})
			go func() { _ = cs.Close(); close(done) }()
			select {
			case <-done:
			case <-time.After(p.grace):
			}
		}
		p.stdin.Close()
		wait := func(d time.Duration) bool {
			select {
			case <-p.exited:
				return true
			case <-time.After(d):
				return false
			}
		}
		if !wait(p.grace) {
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			if !wait(p.grace) {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				if !wait(5 * time.Second) {
					p.err = fmt.Errorf("child %d did not exit after SIGKILL", pgid)
				}
			}
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // stragglers of the group; ESRCH when none
		p.stdout.Close()
	})
	return p.err
}
