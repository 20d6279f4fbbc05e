package toolserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
)

// everythingJS finds @modelcontextprotocol/server-everything as .ci/run
// installs it (<repo>/.cache/mcp), or at $MCP_EVERYTHING_JS. Without node
// or the package the test is skipped, except in CI (CI=true) where it
// fails.
func everythingJS(t *testing.T) (node, js string) {
	t.Helper()
	node, err := exec.LookPath("node")
	js = os.Getenv("MCP_EVERYTHING_JS")
	if js == "" {
		_, file, _, _ := runtime.Caller(0)
		js = filepath.Join(filepath.Dir(file), "..", "..", ".cache", "mcp", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	}
	_, statErr := os.Stat(js)
	if err != nil || statErr != nil {
		msg := fmt.Sprintf("node or @modelcontextprotocol/server-everything missing (node: %v; package %s: %v); install with: npm install --prefix .cache/mcp @modelcontextprotocol/server-everything", err, js, statErr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, js
}

// alive reports whether a process group still has members.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

func stdioRegistry(t *testing.T, node, js string, env map[string]any) *Registry {
	def := map[string]any{"transport": "mcp-stdio", "command": node, "args": []any{js, "stdio"}, "timeout": float64(20)}
	if env != nil {
		def["env"] = env
	}
	r := NewRegistry(Options{
		Config:    orgConfig(map[string]any{"everything": def}),
		Resolver:  mapResolver{"env:EVERYTHING_TOKEN": "configured-by-reference"},
		StopGrace: time.Second,
	})
	return r
}

// currentChild returns the running child's pid of the registry's only
// stdio server, or 0.
func currentChild(r *Registry) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.servers {
		c, ok := e.conn.(*mcpConn)
		if !ok {
			continue
		}
		c.mu.Lock()
		s := c.sess
		c.mu.Unlock()
		if s != nil && s.pid > 0 {
			return s.pid
		}
	}
	return 0
}

func TestMCPStdioEverything(t *testing.T) {
	node, js := everythingJS(t)
	t.Setenv("ROOTCAUSE_TEST_PARENT_SECRET", "must-not-leak")
	r := stdioRegistry(t, node, js, map[string]any{"EVERYTHING_TOKEN": "env:EVERYTHING_TOKEN"})
	closed := false
	defer func() {
		if !closed {
			_ = r.Close()
		}
	}()
	ctx := context.Background()

	team := map[string]any{
		"tool_servers": map[string]any{"everything": map[string]any{"transport": "mcp-stdio", "command": node, "args": []any{js, "stdio"}, "timeout": float64(20),
			"env": map[string]any{"EVERYTHING_TOKEN": "env:EVERYTHING_TOKEN"}}},
		"mcp_servers": []any{"everything"},
	}
	cat, err := r.CatalogFor(ctx, tools.Builtin(), team)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"everything:echo", "everything:get-sum", "everything:get-env", "everything:trigger-long-running-operation"} {
		if !cat.Has(n) {
			t.Fatalf("catalog lacks %s: %v", n, cat.Names())
		}
	}
	echo, _ := cat.Get("everything:echo")
	if !echo.ReadOnly || !strings.Contains(string(echo.Parameters), `"message"`) || echo.Integration != "toolserver:everything" {
		t.Fatalf("echo spec: %+v", echo.Spec)
	}
	if !r.KnownTool("everything:echo") || r.KnownTool("everything:no_such_tool") {
		t.Fatal("KnownTool")
	}

	s := &tools.Session{Catalog: cat, Toolkit: []string{"everything:echo", "everything:get-sum", "everything:get-env", "everything:trigger-long-running-operation"}, Timeout: 30 * time.Second}
	out, err := s.Call(ctx, "everything:echo", map[string]any{"message": "hello rootcause"})
	if err != nil {
		t.Fatal(err)
	}
	if res := out.(*Result); !strings.Contains(res.Content.(string), "hello rootcause") {
		t.Fatalf("echo: %+v", res)
	}
	out, err = s.Call(ctx, "everything:get-sum", map[string]any{"a": 2, "b": 40})
	if err != nil || !strings.Contains(out.(*Result).Content.(string), "42") {
		t.Fatalf("get-sum: %v %+v", err, out)
	}
	// A tool error result is an error the agent can read, not unavailable.
	_, err = s.Call(ctx, "everything:get-sum", map[string]any{"a": "x"})
	if err == nil || evidence.CodeOf(err) == evidence.CodeUnavailable {
		t.Fatalf("bad arguments: %v", err)
	}
	// The child sees only PATH and configured references.
	out, err = s.Call(ctx, "everything:get-env", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	envText := out.(*Result).Content.(string)
	if strings.Contains(envText, "must-not-leak") || !strings.Contains(envText, "configured-by-reference") {
		t.Fatalf("child environment: %s", cut(envText, 500))
	}
	if got := s.ToolsUsed(); len(got) != 3 || got[0] != "everything:echo" {
		t.Fatalf("tools_used: %v", got)
	}

	// Kill the child mid-call: the call fails cleanly as unavailable.
	pid := currentChild(r)
	if pid == 0 || !groupAlive(pid) {
		t.Fatal("no running child")
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "everything:trigger-long-running-operation", map[string]any{"duration": 20, "steps": 2})
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if evidence.CodeOf(err) != evidence.CodeUnavailable || evidence.SourceOf(err) != "toolserver:everything" {
			t.Fatalf("killed mid-call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not fail after its server was killed")
	}
	// The next call restarts it.
	out, err = s.Call(ctx, "everything:echo", map[string]any{"message": "again"})
	if err != nil || !strings.Contains(out.(*Result).Content.(string), "again") {
		t.Fatalf("after restart: %v", err)
	}
	pid2 := currentChild(r)
	if pid2 == 0 || pid2 == pid {
		t.Fatalf("child not restarted: %d → %d", pid, pid2)
	}

	// Close stops the child and its group: no orphans.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	deadline := time.Now().Add(5 * time.Second)
	for groupAlive(pid2) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if groupAlive(pid2) || groupAlive(pid) {
		t.Fatalf("process group %d (or %d) still alive after Close", pid2, pid)
	}
	if _, err := s.Call(ctx, "everything:echo", map[string]any{"message": "x"}); evidence.CodeOf(err) != evidence.CodeUnavailable {
		t.Fatalf("call after Close: %v", err)
	}
}

func TestMCPStdioBadCommand(t *testing.T) {
	r := NewRegistry(Options{Config: orgConfig(map[string]any{
		"broken": map[string]any{"transport": "mcp-stdio", "command": "/bin/sh", "args": []any{"-c", "echo not-mcp >&2; exit 3"}, "timeout": float64(5)},
	}), StopGrace: 200 * time.Millisecond})
	defer r.Close()
	_, err := r.Tools(context.Background(), "broken")
	if evidence.CodeOf(err) != evidence.CodeUnavailable {
		t.Fatalf("want unavailable, got %v", err)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestMCPStreamableHTTPEverything(t *testing.T) {
	node, js := everythingJS(t)
	port := freePort(t)
	cmd := exec.Command(node, js, "streamableHttp")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), fmt.Sprintf("PORT=%d", port)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
		if groupAlive(pgid) {
			t.Errorf("streamable server group %d still alive", pgid)
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not listen: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var sawAuth = make(chan string, 16)
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		select {
		case sawAuth <- r.Header.Get("X-Api-Key"):
		default:
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	r := NewRegistry(Options{
		Config:     orgConfig(map[string]any{"everything": map[string]any{"transport": "mcp-http", "url": url, "headers": map[string]any{"X-Api-Key": "env:K"}}}),
		Resolver:   mapResolver{"env:K": "key-1"},
		HTTPClient: client,
	})
	defer r.Close()
	ts, err := r.Tools(context.Background(), "everything")
	if err != nil {
		t.Fatal(err)
	}
	if got := <-sawAuth; got != "key-1" {
		t.Fatalf("header not sent: %q", got)
	}
	out, err := callTool(t, ts, "everything:echo", `{"message":"over http"}`)
	if err != nil || !strings.Contains(out.(*Result).Content.(string), "over http") {
		t.Fatalf("echo: %v %+v", err, out)
	}
	out, err = callTool(t, ts, "everything:get-sum", `{"a":1,"b":2}`)
	if err != nil || !strings.Contains(out.(*Result).Content.(string), "3") {
		t.Fatalf("get-sum: %v", err)
	}
	// The server goes away: calls fail as unavailable.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-done
	_, err = callTool(t, ts, "everything:echo", `{"message":"x"}`)
	if evidence.CodeOf(err) != evidence.CodeUnavailable {
		t.Fatalf("server gone: %v", err)
	}
	var ee *evidence.Error
	if !errors.As(err, &ee) || ee.Source != "toolserver:everything" {
		t.Fatalf("source: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
