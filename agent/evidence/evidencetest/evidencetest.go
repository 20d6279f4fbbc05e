// Package evidencetest is a conformance suite for evidence backends: the
// same assertions run against the incident-bundle backend and the live
// backends (client-go against a loopback API server, client_golang against
// a real Prometheus), so both give the same answers to the same questions.
package evidencetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KubeWant is what a Kubernetes source must answer.
type KubeWant struct {
	Namespaces []string
	// Namespace is the namespace the per-namespace checks use.
	Namespace    string
	Pods         []string // pod names in Namespace
	Selector     string   // a label selector ...
	SelectorPods []string // ... and the pods it selects in Namespace
	AllPods      int      // pods in every namespace
	Deployments  []string
	ReplicaSets  []string
	Services     []string
	Nodes        []string
	// Events in Namespace, in order, as "Type/Reason/Name/Count".
	Events []string
	// Endpoints per service of Namespace: ready and not-ready address counts.
	Endpoints map[string][2]int
	Logs      []LogWant
}

// LogWant is a pod log query and its expected answer.
type LogWant struct {
	Query evidence.PodLogQuery
	Texts []string // expected lines' text, in order
	// Sources, when set, are the expected lines' sources.
	Sources []string
	Matched int
	Code    string // expected error code instead of a result
}

// RunKubernetes checks k against w.
func RunKubernetes(t *testing.T, k evidence.Kubernetes, w KubeWant) {
	t.Helper()
	ctx := context.Background()
	ns, err := k.Namespaces(ctx)
	must(t, "Namespaces", err)
	eq(t, "Namespaces", w.Namespaces, ns)

	pods, err := k.Pods(ctx, w.Namespace, "")
	must(t, "Pods", err)
	eq(t, "Pods", w.Pods, names(pods, func(p *corev1.Pod) *metav1.ObjectMeta { return &p.ObjectMeta }))
	sel, err := k.Pods(ctx, w.Namespace, w.Selector)
	must(t, "Pods(selector)", err)
	eq(t, "Pods("+w.Selector+")", w.SelectorPods, names(sel, func(p *corev1.Pod) *metav1.ObjectMeta { return &p.ObjectMeta }))
	all, err := k.Pods(ctx, "", "")
	must(t, "Pods(all)", err)
	if len(all) != w.AllPods {
		t.Errorf("Pods(all namespaces): %d pods, want %d", len(all), w.AllPods)
	}
	if _, err := k.Pods(ctx, w.Namespace, "app in (("); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("Pods with a bad selector: error %v, want code invalid", err)
	}

	deps, err := k.Deployments(ctx, w.Namespace)
	must(t, "Deployments", err)
	eq(t, "Deployments", w.Deployments, namesOf(deps))
	rss, err := k.ReplicaSets(ctx, w.Namespace)
	must(t, "ReplicaSets", err)
	eq(t, "ReplicaSets", w.ReplicaSets, namesOf(rss))
	svcs, err := k.Services(ctx, w.Namespace)
	must(t, "Services", err)
	eq(t, "Services", w.Services, namesOf(svcs))
	nodes, err := k.Nodes(ctx)
	must(t, "Nodes", err)
	eq(t, "Nodes", w.Nodes, namesOf(nodes))
	if _, err := k.DaemonSets(ctx, w.Namespace); err != nil {
		t.Errorf("DaemonSets: %v", err)
	}

	evs, err := k.Events(ctx, w.Namespace)
	must(t, "Events", err)
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s/%s/%s/%d", e.Type, e.Reason, e.InvolvedObject.Name, e.Count))
		if e.FirstTimestamp.IsZero() || e.LastTimestamp.IsZero() {
			t.Errorf("event %s: first/last timestamps not normalised: %v / %v", e.Name, e.FirstTimestamp, e.LastTimestamp)
		}
		if e.Message == "" {
			t.Errorf("event %s has no message", e.Name)
		}
	}
	eq(t, "Events", w.Events, got)

	eps, err := k.Endpoints(ctx, w.Namespace)
	must(t, "Endpoints", err)
	gotEP := map[string][2]int{}
	for _, e := range eps {
		var c [2]int
		for _, s := range e.Subsets {
			c[0] += len(s.Addresses)
			c[1] += len(s.NotReadyAddresses)
		}
		gotEP[e.Name] = c
	}
	eq(t, "Endpoints", w.Endpoints, gotEP)

	runLogs(t, k, w.Logs)
}

// runLogs checks each log query's answer.
func runLogs(t *testing.T, k evidence.Kubernetes, logs []LogWant) {
	t.Helper()
	ctx := context.Background()
	for _, lw := range logs {
		name := fmt.Sprintf("PodLogs(%s/%s container=%q previous=%v pattern=%q)", lw.Query.Namespace, lw.Query.Pod, lw.Query.Container, lw.Query.Previous, lw.Query.Pattern)
		res, err := k.PodLogs(ctx, lw.Query)
		if lw.Code != "" {
			if evidence.CodeOf(err) != lw.Code {
				t.Errorf("%s: error %v, want code %s", name, err, lw.Code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var texts, sources []string
		for _, l := range res.Lines {
			texts = append(texts, l.Text)
			sources = append(sources, l.Source)
		}
		eq(t, name+" lines", lw.Texts, texts)
		if lw.Sources != nil {
			eq(t, name+" sources", lw.Sources, sources)
		}
		if res.Matched != lw.Matched {
			t.Errorf("%s: matched %d, want %d", name, res.Matched, lw.Matched)
		}
		if res.Truncated != (res.Matched > len(res.Lines)) {
			t.Errorf("%s: truncated %v with %d matched and %d lines", name, res.Truncated, res.Matched, len(res.Lines))
		}
	}
}

// CompareKubernetes checks that got answers exactly as want for every list
// in namespaces (and all namespaces) and for the log queries.
func CompareKubernetes(t *testing.T, want, got evidence.Kubernetes, namespaces []string, logs []evidence.PodLogQuery) {
	t.Helper()
	ctx := context.Background()
	check := func(what string, f func(k evidence.Kubernetes) (any, error)) {
		t.Helper()
		a, errA := f(want)
		b, errB := f(got)
		if evidence.CodeOf(errA) != evidence.CodeOf(errB) || (errA == nil) != (errB == nil) {
			t.Errorf("%s: errors differ: %v vs %v", what, errA, errB)
			return
		}
		ja, jb := normJSON(t, a), normJSON(t, b)
		if d := cmp.Diff(ja, jb); d != "" {
			t.Errorf("%s differs between backends (-first +second):\n%s", what, d)
		}
	}
	check("Namespaces", func(k evidence.Kubernetes) (any, error) { return k.Namespaces(ctx) })
	check("Nodes", func(k evidence.Kubernetes) (any, error) { return k.Nodes(ctx) })
	for _, ns := range append([]string{""}, namespaces...) {
		check("Pods "+ns, func(k evidence.Kubernetes) (any, error) { return k.Pods(ctx, ns, "") })
		check("Pods app=cart "+ns, func(k evidence.Kubernetes) (any, error) { return k.Pods(ctx, ns, "app=cart") })
		check("Events "+ns, func(k evidence.Kubernetes) (any, error) { return k.Events(ctx, ns) })
		check("Deployments "+ns, func(k evidence.Kubernetes) (any, error) { return k.Deployments(ctx, ns) })
		check("ReplicaSets "+ns, func(k evidence.Kubernetes) (any, error) { return k.ReplicaSets(ctx, ns) })
		check("DaemonSets "+ns, func(k evidence.Kubernetes) (any, error) { return k.DaemonSets(ctx, ns) })
		check("Services "+ns, func(k evidence.Kubernetes) (any, error) { return k.Services(ctx, ns) })
		check("Endpoints "+ns, func(k evidence.Kubernetes) (any, error) { return k.Endpoints(ctx, ns) })
	}
	for _, q := range logs {
		// Scanned is left out: a live API server filters by sinceTime
		// before the client sees the lines.
		check(fmt.Sprintf("PodLogs %+v", q), func(k evidence.Kubernetes) (any, error) {
			r, err := k.PodLogs(ctx, q)
			if r != nil {
				r.Scanned = 0
			}
			return r, err
		})
	}
}

// normJSON renders v as generic JSON with Kubernetes TypeMeta (kind,
// apiVersion) and resourceVersion removed: list items carry them or not
// depending on the transport.
func normJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var g any
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	var strip func(any)
	strip = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			delete(x, "kind")
			delete(x, "apiVersion")
			if md, ok := x["metadata"].(map[string]any); ok {
				delete(md, "resourceVersion")
			}
			for _, v := range x {
				strip(v)
			}
		case []any:
			for _, v := range x {
				strip(v)
			}
		}
	}
	strip(g)
	return g
}

// MetricQuery is one query of a Metrics source: instant when Step is 0.
type MetricQuery struct {
	Expr       string
	At         time.Time
	Start, End time.Time
	Step       time.Duration
}

func (q MetricQuery) run(ctx context.Context, m evidence.Metrics) ([]evidence.Series, error) {
	if q.Step == 0 {
		return m.Query(ctx, q.Expr, q.At)
	}
	return m.QueryRange(ctx, q.Expr, q.Start, q.End, q.Step)
}

// MetricWant is a query and its expected answer (values within Eps,
// relative to the value's magnitude when above 1).
type MetricWant struct {
	MetricQuery
	Want []evidence.Series
	Eps  float64
}

// RunMetrics checks each query's answer.
func RunMetrics(t *testing.T, m evidence.Metrics, wants []MetricWant) {
	t.Helper()
	for _, w := range wants {
		got, err := w.run(context.Background(), m)
		if err != nil {
			t.Errorf("%s: %v", w.Expr, err)
			continue
		}
		if msg := DiffSeries(w.Want, got, w.Eps); msg != "" {
			t.Errorf("%s: %s", w.Expr, msg)
		}
	}
}

// CompareMetrics checks that got answers each query as want does.
func CompareMetrics(t *testing.T, want, got evidence.Metrics, qs []MetricQuery, eps float64) {
	t.Helper()
	ctx := context.Background()
	for _, q := range qs {
		a, errA := q.run(ctx, want)
		b, errB := q.run(ctx, got)
		if errA != nil || errB != nil {
			t.Errorf("%s: errors: %v / %v", q.Expr, errA, errB)
			continue
		}
		if len(a) == 0 {
			t.Errorf("%s: no series: the query should select data", q.Expr)
		}
		if msg := DiffSeries(a, b, eps); msg != "" {
			t.Errorf("%s differs between backends: %s", q.Expr, msg)
		}
	}
}

// DiffSeries compares two answers as sets of series and says how got
// differs from want, or "": labels exactly, timestamps exactly, values
// within eps relative to their magnitude (NaN equals NaN).
func DiffSeries(want, got []evidence.Series, eps float64) string {
	key := func(s evidence.Series) string {
		b, _ := json.Marshal(s.Labels)
		return string(b)
	}
	if len(want) != len(got) {
		var a, b []string
		for _, s := range want {
			a = append(a, key(s))
		}
		for _, s := range got {
			b = append(b, key(s))
		}
		return fmt.Sprintf("%d series %v, want %d %v", len(got), b, len(want), a)
	}
	w := slices.Clone(want)
	g := slices.Clone(got)
	slices.SortFunc(w, func(a, b evidence.Series) int { return strings.Compare(key(a), key(b)) })
	slices.SortFunc(g, func(a, b evidence.Series) int { return strings.Compare(key(a), key(b)) })
	for i := range w {
		if key(w[i]) != key(g[i]) {
			return fmt.Sprintf("series %s, want %s", key(g[i]), key(w[i]))
		}
		if len(w[i].Points) != len(g[i].Points) {
			return fmt.Sprintf("series %s: %d points, want %d", key(w[i]), len(g[i].Points), len(w[i].Points))
		}
		for j, p := range w[i].Points {
			q := g[i].Points[j]
			if !p.T.Equal(q.T) {
				return fmt.Sprintf("series %s point %d: time %s, want %s", key(w[i]), j, q.T, p.T)
			}
			if !close(p.V, q.V, eps) {
				return fmt.Sprintf("series %s at %s: %v, want %v (eps %g)", key(w[i]), p.T.Format(time.RFC3339), q.V, p.V, eps)
			}
		}
	}
	return ""
}

func close(a, b, eps float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if a == b {
		return true
	}
	return math.Abs(a-b) <= eps*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eq(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

func names[T any](items []T, meta func(*T) *metav1.ObjectMeta) []string {
	var out []string
	for i := range items {
		out = append(out, meta(&items[i]).Name)
	}
	return out
}

type named interface{ GetName() string }

func namesOf[T any](items []T) []string {
	var out []string
	for i := range items {
		if n, ok := any(&items[i]).(named); ok {
			out = append(out, n.GetName())
		}
	}
	return out
}
