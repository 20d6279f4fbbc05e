// Package e2e holds end-to-end tests that build the real rootcause binary
// once and drive it as an operator would: serve on loopback with a temp
// data dir, the CLI through the socket and on the file, curl-like HTTP
// calls, SIGTERM and SIGKILL.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the rootcause binary built by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rootcause-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "rootcause")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building rootcause: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// syncBuffer is a goroutine-safe buffer for a process's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// server is a running `rootcause serve`.
type server struct {
	t       *testing.T
	cmd     *exec.Cmd
	dataDir string
	url     string
	log     *syncBuffer
	done    chan struct{}
	exitErr error
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServer starts serve on a free loopback port and waits for /readyz.
func startServer(t *testing.T, dataDir string, env ...string) *server {
	t.Helper()
	for attempt := 0; ; attempt++ {
		s, err := tryStart(t, dataDir, env)
		if err == nil {
			return s
		}
		if attempt >= 2 { // the port may have been taken in between
			t.Fatalf("starting server: %v", err)
		}
	}
}

func tryStart(t *testing.T, dataDir string, env []string) (*server, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := &server{t: t, dataDir: dataDir, url: "http://" + addr, log: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(binary, "serve", "--data-dir", dataDir, "--addr", addr)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.kill() })
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return nil, fmt.Errorf("serve exited: %v\n%s", s.exitErr, s.log.String())
		default:
		}
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.kill()
	return nil, fmt.Errorf("serve not ready after 15s:\n%s", s.log.String())
}

// stop sends SIGTERM and requires a clean exit 0.
func (s *server) stop() {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(40 * time.Second):
		s.kill()
		s.t.Fatalf("serve did not stop on SIGTERM:\n%s", s.log.String())
	}
	if s.exitErr != nil {
		s.t.Fatalf("serve exited with %v after SIGTERM:\n%s", s.exitErr, s.log.String())
	}
}

// kill sends SIGKILL (if still running) and waits.
func (s *server) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// cli runs the binary and returns stdout, stderr and the exit code.
func cli(t *testing.T, dataDir string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, binary, append(args, "--data-dir", dataDir)...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running rootcause %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// mustCLI runs the binary and fails the test on a non-zero exit.
func mustCLI(t *testing.T, dataDir string, args ...string) string {
	t.Helper()
	out, errOut, code := cli(t, dataDir, args...)
	if code != 0 {
		t.Fatalf("rootcause %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// issue runs token issue and returns the one line it prints.
func issue(t *testing.T, dataDir string, args ...string) string {
	t.Helper()
	out := mustCLI(t, dataDir, append([]string{"token", "issue"}, args...)...)
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("token issue printed %q, want exactly one line", out)
	}
	return strings.TrimSuffix(out, "\n")
}

// response is a decoded HTTP answer.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (r *response) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// call sends a request with an Authorization header built from auth ("" for
// none) and decodes the JSON answer.
func call(t *testing.T, method, url, auth string, body any) *response {
	t.Helper()
	r, err := tryCall(method, url, auth, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func tryCall(method, url, auth string, body any) (*response, error) {
	var rd io.Reader
	if body != nil {
		buf, _ := json.Marshal(body)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := &response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &out.body)
	}
	return out, nil
}
