package analyst

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeSources only needs non-nil integrations for configured(); the fake
// run answers calls itself.
type fakeK8s struct{ evidence.Kubernetes }

// Objects answers that no object of any kind is held: the engine's tool
// calls carry these tests' evidence.
func (fakeK8s) Objects(context.Context, string, string, string) ([]evidence.KubeObject, error) {
	return nil, nil
}

// fakeRun answers tool calls from canned results, within a toolkit, and
// records the calls in one shared list (as the runtime's tools_used).
type fakeRun struct {
	toolkit []string
	results map[string]any
	errs    map[string]error
	env     *tools.Env
	mu      *sync.Mutex
	used    *[]string
	steps   *int
}

func newFakeRun(toolkit []string, results map[string]any, src *evidence.Sources) *fakeRun {
	return &fakeRun{toolkit: toolkit, results: results, errs: map[string]error{}, env: &tools.Env{Sources: src},
		mu: &sync.Mutex{}, used: new([]string), steps: new(int)}
}

func (r *fakeRun) Call(ctx context.Context, name string, args any) (any, error) {
	if !r.Has(name) {
		return nil, evidence.Errorf(name, evidence.CodeNotConfigured, "not in toolkit")
	}
	r.mu.Lock()
	if !slices.Contains(*r.used, name) {
		*r.used = append(*r.used, name)
	}
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.errs[name]; err != nil {
		return nil, err
	}
	return r.results[name], nil
}

func (r *fakeRun) Has(name string) bool { return slices.Contains(r.toolkit, name) }
func (r *fakeRun) Step(string, int, int) {
	r.mu.Lock()
	*r.steps++
	r.mu.Unlock()
}
func (r *fakeRun) Sub(a agent.Agent) agent.Run {
	c := *r
	c.toolkit = a.Tools
	return &c
}
func (r *fakeRun) Env() *tools.Env { return r.env }

func oomPod() corev1.Pod {
	return pod("checkout-7d9f8b6c5-abcde", func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 4,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: mt(now.Add(-3 * time.Minute))}}}}
	})
}

func plannerRequest(agents map[string]agent.Agent) *agent.Request {
	return &agent.Request{Agent: agent.Agent{Name: tools.AgentPlanner, Enabled: true}, Message: "checkout keeps restarting",
		Context: map[string]string{"service": "checkout", "namespace": "shop"}, Agents: agents}
}

func TestEnginePlannerOOM(t *testing.T) {
	src := &evidence.Sources{Now: func() time.Time { return now }, Kubernetes: fakeK8s{}, Changes: fakeChanges{}}
	results := map[string]any{
		"list_pods": []corev1.Pod{oomPod()},
		"get_events": []corev1.Event{{Reason: "BackOff", Type: "Warning", Message: "Back-off restarting failed container app", Count: 9,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "checkout-7d9f8b6c5-abcde"},
			FirstTimestamp: metav1.NewTime(now.Add(-20 * time.Minute)), LastTimestamp: metav1.NewTime(now.Add(-time.Minute))}},
		"list_changes": []evidence.Change{{Timestamp: now.Add(-25 * time.Minute), Service: "checkout", Kind: "deploy", Description: "checkout v2.3.1", Revision: "v2.3.1"}},
	}
	agents := map[string]agent.Agent{
		// get_pod_logs disabled for the k8s agent.
		tools.AgentK8s:    {Name: tools.AgentK8s, Enabled: true, Tools: []string{"list_pods", "get_events"}},
		tools.AgentCoding: {Name: tools.AgentCoding, Enabled: true, Tools: []string{"list_changes"}},
		tools.AgentAWS:    {Name: tools.AgentAWS, Enabled: true, Tools: []string{"get_cloudwatch_logs"}}, // cloudwatch not configured
	}
	run := newFakeRun(nil, results, src)
	res, err := New(Options{}).Investigate(context.Background(), plannerRequest(agents), run)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Validate(); err != nil {
		t.Fatal(err)
	}
	d := res.RootCause.Description
	for _, want := range []string{"OOMKilled", "out of memory", "memory limit of 256Mi", "deploy"} {
		if !strings.Contains(d, want) {
			t.Errorf("description lacks %q: %s", want, d)
		}
	}
	if c := res.RootCause.Confidence; c < 80 || c > 95 {
		t.Errorf("confidence %.0f, want 80..95", c)
	}
	if len(res.RootCause.Evidence) < 2 || res.Verdict != "identified" {
		t.Errorf("evidence %v verdict %s", res.RootCause.Evidence, res.Verdict)
	}
	if want := []string{"list_pods", "get_events", "list_changes"}; !slices.Equal(*run.used, want) {
		t.Errorf("tools used %v, want %v", *run.used, want)
	}
	for i := 1; i < len(res.Timeline); i++ {
		if res.Timeline[i].Timestamp < res.Timeline[i-1].Timestamp {
			t.Errorf("timeline out of order: %v", res.Timeline)
		}
	}
	if len(res.Timeline) < 2 || !strings.Contains(res.Timeline[0].Event, "deploy") {
		t.Errorf("timeline %v: want the deploy first", res.Timeline)
	}
	gaps := strings.Join(res.DataGaps, "\n")
	for _, want := range []string{"get_pod_logs disabled", "metrics: prometheus not configured"} {
		if !strings.Contains(gaps, want) {
			t.Errorf("data gaps lack %q: %v", want, res.DataGaps)
		}
	}
	if res.AffectedSystems[0] != "checkout" {
		t.Errorf("affected %v", res.AffectedSystems)
	}
	if res.Recommendations[0].Priority != "high" || !strings.Contains(res.Recommendations[0].Action, "Roll back") {
		t.Errorf("recommendations %v", res.Recommendations)
	}
	if *run.steps < 3 {
		t.Errorf("%d progress steps", *run.steps)
	}
}

type fakeChanges struct{ evidence.Changes }

func TestEngineHealthy(t *testing.T) {
	src := &evidence.Sources{Now: func() time.Time { return now }, Kubernetes: fakeK8s{}}
	healthy := pod("checkout-7d9f8b6c5-abcde", func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
	run := newFakeRun([]string{"list_pods", "get_events", "get_pod_logs"}, map[string]any{
		"list_pods":    []corev1.Pod{healthy},
		"get_events":   []corev1.Event{},
		"get_pod_logs": &evidence.LogResult{Lines: []evidence.LogLine{{Time: now.Add(-time.Minute), Text: "GET /cart 200 3ms"}}},
	}, src)
	req := &agent.Request{Agent: agent.Agent{Name: tools.AgentInvestigation, Tools: run.toolkit}, Context: map[string]string{"service": "checkout"}}
	res, err := New(Options{}).Investigate(context.Background(), req, run)
	if err != nil {
		t.Fatal(err)
	}
	// One kind of direct evidence of its health (its one pod Ready; a
	// single log line says little): a low confidence (healthyproof.go).
	if res.Verdict != "healthy" || res.RootCause.Confidence != 30 || !strings.Contains(res.Summary, "No fault found") {
		t.Errorf("verdict %s confidence %.0f summary %q", res.Verdict, res.RootCause.Confidence, res.Summary)
	}
	if want := []string{"list_pods", "get_events", "get_pod_logs"}; !slices.Equal(*run.used, want) {
		t.Errorf("tools used %v, want %v", *run.used, want)
	}
}

func TestEngineUnavailableAndCancel(t *testing.T) {
	src := &evidence.Sources{Now: func() time.Time { return now }, Kubernetes: fakeK8s{}}
	unavailable := evidence.Errorf("kubernetes", evidence.CodeUnavailable, "connection refused")
	run := newFakeRun([]string{"list_pods", "get_events"}, nil, src)
	run.errs["list_pods"], run.errs["get_events"] = unavailable, unavailable
	req := &agent.Request{Agent: agent.Agent{Name: tools.AgentK8s, Tools: run.toolkit}}
	_, err := New(Options{}).Investigate(context.Background(), req, run)
	if evidence.CodeOf(err) != evidence.CodeUnavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
	// With some evidence, an unreachable source is a gap, not a failure.
	run.errs["list_pods"] = nil
	run.results = map[string]any{"list_pods": []corev1.Pod{}}
	res, err := New(Options{}).Investigate(context.Background(), req, run)
	if err != nil || !strings.Contains(strings.Join(res.DataGaps, " "), "get_events failed") {
		t.Fatalf("err %v gaps %v", err, res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(Options{}).Investigate(ctx, req, run); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
}

func TestScopeWindow(t *testing.T) {
	tests := []struct {
		tw         string
		start, end time.Time
	}{
		{"", now.Add(-time.Hour), now},
		{"30m", now.Add(-30 * time.Minute), now},
		{"last 2h", now.Add(-2 * time.Hour), now},
		{"2026-03-14T09:00:00Z/2026-03-14T10:00:00Z", time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC), time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)},
		{"nonsense", now.Add(-time.Hour), now},
	}
	for _, tt := range tests {
		sc := ScopeOf(&agent.Request{Context: map[string]string{"time_window": tt.tw}}, now)
		if !sc.Window.Start.Equal(tt.start) || !sc.Window.End.Equal(tt.end) || !sc.Window.BaselineStart.Before(sc.Window.Start) {
			t.Errorf("%q: window %+v", tt.tw, sc.Window)
		}
	}
}
