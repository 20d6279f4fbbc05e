package jaeger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// TestConformance runs the trace conformance suite against a real Jaeger
// (the v1.76 binary built from tools/jaeger into .cache/jaeger by .ci/run),
// started on loopback with in-memory storage and fed the fixture over
// OTLP/HTTP JSON.
func TestConformance(t *testing.T) {
	url, otlp := StartJaeger(t)
	body, err := json.Marshal(otlpjson.Encode(evidencetest.TraceFixture()))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(otlp+"/v1/traces", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("OTLP export: HTTP %d", resp.StatusCode)
	}
	c, err := New(Config{URL: url, HTTP: &http.Client{}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The collector pipeline stores spans asynchronously.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := c.FindTraces(context.Background(), evidence.TraceQuery{Start: evidencetest.TraceT0.Add(-time.Hour), End: evidencetest.TraceT0.Add(time.Hour)})
		if err == nil && len(got) == 3 && got[len(got)-1].Spans == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger did not make the fixture queryable: %v %+v", err, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	evidencetest.RunTraces(t, c)

	// What rootcause capture --traces writes from this Jaeger is a bundle
	// that answers the same.
	var out bytes.Buffer
	if _, err := otlpjson.Export(context.Background(), c, evidencetest.TraceT0.Add(-time.Hour), evidencetest.TraceT0.Add(time.Hour), &out); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(fstest.MapFS{"traces/capture.jsonl": {Data: out.Bytes()}}, "captured")
	if err != nil {
		t.Fatal(err)
	}
	evidencetest.RunTraces(t, b.Sources(time.Time{}).Traces)
}

// StartJaeger starts Jaeger on free loopback ports and returns its query
// URL and OTLP/HTTP URL; it is stopped when the test ends. Without the
// binary the test is skipped, except in CI (CI=true), where it fails.
func StartJaeger(t *testing.T) (queryURL, otlpURL string) {
	t.Helper()
	bin := os.Getenv("ROOTCAUSE_JAEGER")
	if bin == "" {
		_, file, _, _ := runtime.Caller(0)
		bin = filepath.Join(filepath.Dir(file), "..", "..", "..", "..", ".cache", "jaeger", "jaeger")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("no Jaeger binary at %s (build it: cd tools/jaeger && go build -o ../../.cache/jaeger/jaeger github.com/jaegertracing/jaeger/cmd/jaeger)", bin)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ports := freePorts(t, 3)
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: mem
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`, ports[0], ports[1], ports[2])
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jaeger.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "--config", "file:"+filepath.Join(dir, "jaeger.yaml"))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited closes when Jaeger exits (waitErr set), so that both the
	// start loop and the cleanup can see it.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("jaeger output:\n%s", out.String())
		}
	})
	queryURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	otlpURL = fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("jaeger exited: %v\n%s", waitErr, out.String())
		default:
		}
		resp, err := http.Get(queryURL + "/api/v3/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not answer on %s: %v\n%s", queryURL, err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return queryURL, otlpURL
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{URL: "jaeger:16686", HTTP: &http.Client{}},
		{URL: "ftp://jaeger", HTTP: &http.Client{}},
		{URL: "http://user:pw@jaeger", HTTP: &http.Client{}},
		{URL: "http://jaeger:16686"},
	} {
		if _, err := New(c); evidence.CodeOf(err) != evidence.CodeInvalid {
			t.Errorf("%+v: %v", c, err)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}
