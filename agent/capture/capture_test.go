package capture_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/agent/capture"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/live/kube"
	"github.com/rootcause/rootcause/agent/evidence/live/kube/kubetest"
	"github.com/rootcause/rootcause/agent/evidence/live/prom"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
	"github.com/rootcause/rootcause/outbound"
)

// run is a minimal agent.Run over one set of sources.
type run struct {
	cat     *tools.Catalog
	env     *tools.Env
	used    *tools.UsedTools
	session *tools.Session
}

func newRun(cat *tools.Catalog, env *tools.Env, used *tools.UsedTools, a agent.Agent) *run {
	return &run{cat: cat, env: env, used: used, session: &tools.Session{Catalog: cat, Env: env, Toolkit: a.Tools, Used: used}}
}

func (r *run) Call(ctx context.Context, name string, args any) (any, error) {
	return r.session.Call(ctx, name, args)
}
func (r *run) Has(name string) bool        { return r.session.Has(name) }
func (r *run) Step(string, int, int)       {}
func (r *run) Sub(a agent.Agent) agent.Run { return newRun(r.cat, r.env, r.used, a) }
func (r *run) Env() *tools.Env             { return r.env }
func (r *run) tools() []string             { return r.used.Names() }

var _ agent.Run = (*run)(nil)

// investigate runs the analyst's planner on sources.
func investigate(t *testing.T, s *evidence.Sources, msg string, rctx map[string]string) (*finding.Result, []string) {
	t.Helper()
	return investigateAs(t, s, tools.AgentPlanner, msg, rctx)
}

// investigateAs runs the analyst as agent name on sources.
func investigateAs(t *testing.T, s *evidence.Sources, name, msg string, rctx map[string]string) (*finding.Result, []string) {
	t.Helper()
	cat := tools.Builtin()
	agents := agent.Resolve(nil, cat)
	a := agents[name]
	r := newRun(cat, &tools.Env{Sources: s}, &tools.UsedTools{}, a)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := analyst.New(analyst.Options{}).Investigate(ctx, &agent.Request{ID: "t", Team: "t", Agent: a, Message: msg, Context: rctx, Agents: agents}, r)
	if err != nil {
		t.Fatal(err)
	}
	res.Normalize()
	return res, r.tools()
}

var loopback = outbound.New(outbound.MustAllowlist("127.0.0.1"))

// liveShop serves the shop incident from a loopback API server and a real
// Prometheus backfilled with its samples.
func liveShop(t *testing.T) *evidence.Sources {
	t.Helper()
	_, rc := kubetest.Start(t, evidencetest.ShopBundleDir())
	k, err := kube.New(kube.Config{REST: rc, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	url := evidencetest.StartPrometheus(t, filepath.Join(evidencetest.ShopBundleDir(), "prometheus", "metrics.om"))
	m, err := prom.New(prom.Config{URL: url, Timeout: 20 * time.Second, Guard: loopback})
	if err != nil {
		t.Fatal(err)
	}
	now := evidencetest.ShopCapturedAt
	return &evidence.Sources{Now: func() time.Time { return now }, Kubernetes: k, Metrics: m}
}

// TestCaptureThenInvestigate captures the live shop incident, investigates
// the capture, and gets the live investigation's answer.
func TestCaptureThenInvestigate(t *testing.T) {
	live := liveShop(t)
	out := filepath.Join(t.TempDir(), "incident")
	var progress bytes.Buffer
	m, err := capture.Run(context.Background(), capture.Options{Out: out, Since: 3 * time.Hour, Now: evidencetest.ShopCapturedAt,
		Kube: live.Kubernetes, Metrics: live.Metrics, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"capture: kubernetes:", "capture: logs:", "capture: prometheus:", "capture: wrote"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	if m.CapturedAt != "2026-03-14T10:42:00Z" || len(m.Capture.Cut) != 0 {
		t.Errorf("manifest: %+v", m)
	}
	b, err := bundle.OpenDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if !b.CapturedAt.Equal(evidencetest.ShopCapturedAt) {
		t.Errorf("captured_at %v", b.CapturedAt)
	}
	r, err := bundle.Check(context.Background(), b)
	if err != nil || len(r.Errors) > 0 || len(r.Skipped) > 0 {
		t.Fatalf("the capture does not read cleanly: %v %+v %+v", err, r.Errors, r.Skipped)
	}
	// The captured bundle answers the Kubernetes questions as the cluster did.
	capt := b.Sources(b.CapturedAt)
	evidencetest.CompareKubernetes(t, live.Kubernetes, capt.Kubernetes, []string{"shop", "default"}, evidencetest.ShopLogQueries())

	msg, rctx := "Why is checkout failing?", map[string]string{"service": "checkout", "namespace": "shop"}
	want, wantTools := investigate(t, live, msg, rctx)
	got, gotTools := investigate(t, capt, msg, rctx)
	if want.RootCause.Description != got.RootCause.Description {
		t.Errorf("root cause differs:\nlive:    %s\ncapture: %s", want.RootCause.Description, got.RootCause.Description)
	}
	if !strings.Contains(strings.ToLower(want.RootCause.Description), "memory") {
		t.Errorf("live investigation missed the OOM: %s", want.RootCause.Description)
	}
	if strings.Join(want.AffectedSystems, ",") != strings.Join(got.AffectedSystems, ",") {
		t.Errorf("affected systems differ: %v vs %v", want.AffectedSystems, got.AffectedSystems)
	}
	if strings.Join(wantTools, ",") != strings.Join(gotTools, ",") {
		t.Errorf("tools used differ: %v vs %v", wantTools, gotTools)
	}
}

// TestCaptureSecretsAndCap captures every kind: no Secret value is written,
// and a small size cap cuts parts and lists them in bundle.json.
func TestCaptureSecretsAndCap(t *testing.T) {
	_, rc := kubetest.Start(t, evidencetest.KindsBundleDir())
	k, err := kube.New(kube.Config{REST: rc})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 20, 9, 30, 0, 0, time.UTC)
	out := filepath.Join(t.TempDir(), "kinds")
	if _, err := capture.Run(context.Background(), capture.Options{Out: out, Now: now, Kube: k}); err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		for _, v := range evidencetest.KindsSecretValues {
			if bytes.Contains(data, []byte(v)) {
				t.Errorf("%s holds a Secret value", p)
			}
		}
		return nil
	})
	b, _ := bundle.OpenDir(out)
	evidencetest.CompareKinds(t, b.Sources(b.CapturedAt).Kubernetes, k, []string{"web", "batch"})
	// the crashlooping worker's current log is captured (no previous log exists)
	logs, err := os.ReadFile(filepath.Join(out, "kubernetes", "batch", "worker-7c8d9e6f5-abcde", "logs.txt"))
	if err != nil || !strings.Contains(string(logs), "DEPLOY_ENV is undefined") {
		t.Errorf("current log of the crashlooping worker: %v %q", err, logs)
	}

	small := filepath.Join(t.TempDir(), "small")
	m, err := capture.Run(context.Background(), capture.Options{Out: small, Now: now, Kube: k, MaxBytes: 24 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Capture.Cut) == 0 || m.Capture.Bytes > 24<<10 {
		t.Fatalf("cap of 24 kB: %d bytes, cut %v", m.Capture.Bytes, m.Capture.Cut)
	}
	raw, _ := os.ReadFile(filepath.Join(small, "bundle.json"))
	var meta struct {
		Capture struct{ Cut []capture.Cut } `json:"capture"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil || len(meta.Capture.Cut) != len(m.Capture.Cut) {
		t.Errorf("bundle.json does not list the cuts: %v %s", err, raw)
	}

	if _, err := capture.Run(context.Background(), capture.Options{Out: out, Kube: k}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("capture into a non-empty directory: %v", err)
	}
}

// inventoryRE is the closing inventory of a healthy answer: "(7 pods, 6
// events, …, 4 log sources)".
var inventoryRE = regexp.MustCompile(`\((\d+ [a-z ]+(, )?)+\)\.?$`)

// TestCaptureScenarios captures each public Kubernetes scenario from a
// loopback API server and a real Prometheus, and checks that investigating
// the capture gives the root cause the live investigation gave.
func TestCaptureScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus per scenario")
	}
	for _, name := range []string{"crashloop-missing-env", "oom-after-deploy", "imagepull-bad-tag", "pending-insufficient-cpu",
		"readiness-probe-failing", "node-disk-pressure", "bad-deploy-5xx", "healthy-control"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "scenarios", name)
			var sc struct {
				Now     time.Time `json:"now"`
				Request struct {
					AgentName string            `json:"agent_name"`
					Message   string            `json:"message"`
					Context   map[string]string `json:"context"`
				} `json:"request"`
			}
			raw, err := os.ReadFile(filepath.Join(dir, "scenario.json"))
			if err != nil || json.Unmarshal(raw, &sc) != nil {
				t.Fatalf("scenario.json: %v", err)
			}
			oms, _ := filepath.Glob(filepath.Join(dir, "prometheus", "*.om"))
			if len(oms) != 1 {
				t.Fatalf("want one OpenMetrics file, got %v", oms)
			}
			_, rc := kubetest.Start(t, dir)
			k, err := kube.New(kube.Config{REST: rc, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			m, err := prom.New(prom.Config{URL: evidencetest.StartPrometheus(t, oms[0]), Timeout: 20 * time.Second, Guard: loopback})
			if err != nil {
				t.Fatal(err)
			}
			now := sc.Now
			live := &evidence.Sources{Now: func() time.Time { return now }, Kubernetes: k, Metrics: m}
			out := filepath.Join(t.TempDir(), name)
			if _, err := capture.Run(context.Background(), capture.Options{Out: out, Since: 6 * time.Hour, Now: now, Kube: k, Metrics: m}); err != nil {
				t.Fatal(err)
			}
			b, err := bundle.OpenDir(out)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := investigateAs(t, live, sc.Request.AgentName, sc.Request.Message, sc.Request.Context)
			got, _ := investigateAs(t, b.Sources(b.CapturedAt), sc.Request.AgentName, sc.Request.Message, sc.Request.Context)
			// A healthy answer ends with what it looked at ("7 pods, …, 4 log
			// sources"): a capture also holds the logs of the other
			// namespaces' pods it took, which the analyst reads as logs
			// handed over, so that count may be larger; the answer is not.
			if a, b := inventoryRE.ReplaceAllString(want.RootCause.Description, "()"), inventoryRE.ReplaceAllString(got.RootCause.Description, "()"); a != b {
				t.Errorf("root cause differs:\nlive:    %s\ncapture: %s", want.RootCause.Description, got.RootCause.Description)
			}
		})
	}
}
