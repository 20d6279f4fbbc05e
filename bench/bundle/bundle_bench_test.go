// Package bundlebench measures incident bundles at scale: a generated
// cluster-info dump of 50,000 Kubernetes objects in 50 namespaces with
// 500 MB of pod logs, opened lazily and investigated by the analyst.
//
//	go test ./bench/bundle -run '^$' -bench . -benchtime 3x -timeout 30m
//
// The bundle is generated once per run into a temporary directory, or kept
// in $ROOTCAUSE_BENCH_BUNDLE when set (generated there if absent).
package bundlebench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/internal/heapsample"
)

const (
	namespaces   = 50
	podsPerNS    = 400 // + 400 events, 100 ReplicaSets, 50 Deployments, 50 Services = 1,000 objects per namespace
	logPods      = 500 // pods with a logs.txt ...
	logBytes     = 1 << 20
	incidentNS   = "ns-07"
	incidentDep  = "api-3"
	capturedAtTS = "2026-03-14T10:42:00Z"
)

var capturedAt, _ = time.Parse(time.RFC3339, capturedAtTS)

func bundleDir(b *testing.B) string {
	b.Helper()
	dir := os.Getenv("ROOTCAUSE_BENCH_BUNDLE")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "bundle")
	}
	if _, err := os.Stat(filepath.Join(dir, "bundle.json")); err == nil {
		return dir
	}
	if err := generate(dir); err != nil {
		b.Fatal(err)
	}
	return dir
}

func meta(name, ns string, created time.Time, lbl map[string]string, owner ...map[string]any) map[string]any {
	m := map[string]any{"name": name, "namespace": ns, "uid": ns + "-" + name, "resourceVersion": "1000",
		"creationTimestamp": created.Format(time.RFC3339), "labels": lbl,
		"annotations": map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Pod"}`}}
	if len(owner) > 0 {
		m["ownerReferences"] = owner
	}
	return m
}

func writeList(path, kind string, items []any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(map[string]any{"kind": kind, "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "1"}, "items": items})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// generate writes the synthetic bundle: one deployment of ns-07 is
// OOMKilled in a crash loop; everything else is healthy.
func generate(dir string) error {
	base := capturedAt.Add(-3 * time.Hour)
	logged := 0
	for n := 0; n < namespaces; n++ {
		ns := fmt.Sprintf("ns-%02d", n)
		var pods, evs, rss, deps, svcs []any
		for d := 0; d < 50; d++ {
			dep := fmt.Sprintf("api-%d", d)
			lbl := map[string]string{"app": dep}
			sick := ns == incidentNS && dep == incidentDep
			deps = append(deps, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(dep, ns, base, lbl),
				"spec": map[string]any{"replicas": 10, "selector": map[string]any{"matchLabels": lbl},
					"template": map[string]any{"metadata": map[string]any{"labels": lbl}, "spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example.com/" + dep + ":1.0",
						"resources": map[string]any{"limits": map[string]any{"memory": "256Mi"}}}}}}},
				"status": map[string]any{"replicas": 10, "readyReplicas": 10, "availableReplicas": 10}})
			svcs = append(svcs, map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta(dep, ns, base, lbl),
				"spec": map[string]any{"selector": lbl, "ports": []any{map[string]any{"port": 80, "targetPort": 8080, "protocol": "TCP"}}}})
			for r := 0; r < 2; r++ {
				rs := fmt.Sprintf("%s-%d", dep, r)
				rss = append(rss, map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet",
					"metadata": func() map[string]any {
						m := meta(rs, ns, base.Add(time.Duration(r)*time.Hour), map[string]string{"app": dep},
							map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": dep, "uid": ns + "-" + dep, "controller": true})
						m["annotations"] = map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(r + 1)}
						return m
					}(),
					"spec":   map[string]any{"replicas": 10 * r, "selector": map[string]any{"matchLabels": lbl}},
					"status": map[string]any{"replicas": 10 * r}})
			}
			for p := 0; p < podsPerNS/50; p++ {
				name := fmt.Sprintf("%s-1-p%02d", dep, p)
				status := map[string]any{"phase": "Running", "podIP": fmt.Sprintf("10.%d.%d.%d", n, d, p+1),
					"conditions":        []any{map[string]any{"type": "Ready", "status": "True"}},
					"containerStatuses": []any{map[string]any{"name": "app", "ready": true, "restartCount": 0, "image": "x", "imageID": "", "state": map[string]any{"running": map[string]any{"startedAt": base.Format(time.RFC3339)}}}}}
				if sick {
					status["conditions"] = []any{map[string]any{"type": "Ready", "status": "False"}}
					status["containerStatuses"] = []any{map[string]any{"name": "app", "ready": false, "restartCount": 7, "image": "x", "imageID": "",
						"state":     map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}},
						"lastState": map[string]any{"terminated": map[string]any{"reason": "OOMKilled", "exitCode": 137, "finishedAt": capturedAt.Add(-2 * time.Minute).Format(time.RFC3339)}}}}
				}
				pods = append(pods, map[string]any{"apiVersion": "v1", "kind": "Pod",
					"metadata": meta(name, ns, base.Add(time.Hour), lbl, map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": dep + "-1", "uid": ns + "-" + dep + "-1", "controller": true}),
					"spec":     map[string]any{"nodeName": fmt.Sprintf("node-%d", p%20), "containers": []any{map[string]any{"name": "app", "image": "registry.example.com/" + dep + ":1.1", "ports": []any{map[string]any{"containerPort": 8080}}, "resources": map[string]any{"limits": map[string]any{"memory": "256Mi"}}}}},
					"status":   status})
				for e := 0; e < 1; e++ {
					reason, typ := "Pulled", "Normal"
					if sick {
						reason, typ = "BackOff", "Warning"
					}
					t := capturedAt.Add(-time.Duration(e*20+p) * time.Minute)
					evs = append(evs, map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": fmt.Sprintf("%s.%d", name, e), "namespace": ns},
						"involvedObject": map[string]any{"kind": "Pod", "name": name, "namespace": ns}, "reason": reason, "type": typ,
						"message": "Container image already present on machine", "firstTimestamp": t.Format(time.RFC3339), "lastTimestamp": t.Format(time.RFC3339), "count": 1,
						"source": map[string]any{"component": "kubelet"}})
				}
				if logged < logPods && (p < 1 || sick) {
					logged++
					if err := writeLog(filepath.Join(dir, "kubernetes", ns, name), name, sick); err != nil {
						return err
					}
				}
			}
		}
		for kind, items := range map[string][]any{"pods": pods, "events": evs, "replicasets": rss, "deployments": deps, "services": svcs} {
			if err := writeList(filepath.Join(dir, "kubernetes", ns, kind+".json"), "List", items); err != nil {
				return err
			}
		}
	}
	var nodes []any
	for i := 0; i < 20; i++ {
		nodes = append(nodes, map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": fmt.Sprintf("node-%d", i)},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}})
	}
	if err := writeList(filepath.Join(dir, "kubernetes", "nodes.json"), "NodeList", nodes); err != nil {
		return err
	}
	for n := 0; logged < logPods; n++ { // pad: more healthy pods' logs up to 500 MB
		ns := fmt.Sprintf("ns-%02d", n%namespaces)
		name := fmt.Sprintf("api-%d-1-p%02d", 10+n/namespaces, 1+n%9)
		logged++
		if err := writeLog(filepath.Join(dir, "kubernetes", ns, name), name, false); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"captured_at": "`+capturedAtTS+`", "description": "synthetic: 50,000 objects, 500 MB of logs"}`), 0o644)
}

func writeLog(dir, pod string, sick bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "logs.txt"))
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, "==== START logs for container app of pod x/%s ====\n", pod)
	t := capturedAt.Add(-3 * time.Hour)
	size := 0
	for i := 0; size < logBytes; i++ {
		t = t.Add(100 * time.Millisecond)
		var n int
		if sick && i%5000 == 4999 {
			n, _ = fmt.Fprintf(w, "%s ERROR java.lang.OutOfMemoryError: Java heap space\n", t.Format(time.RFC3339Nano))
		} else {
			n, _ = fmt.Fprintf(w, "%s INFO request handled path=/api/items/%d status=200 duration_ms=%d\n", t.Format(time.RFC3339Nano), i, i%300)
		}
		size += n
	}
	fmt.Fprintf(w, "==== END logs for container app of pod x/%s ====\n", pod)
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// BenchmarkOpen50k opens the bundle and answers the first questions of an
// investigation: namespaces, one namespace's pods and events, and one
// pod's log searched for a pattern.
func BenchmarkOpen50k(b *testing.B) {
	dir := bundleDir(b)
	ctx := context.Background()
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		bd, err := bundle.OpenDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		k := bd.Sources(bd.CapturedAt).Kubernetes
		nss, err := k.Namespaces(ctx)
		if err != nil || len(nss) != namespaces {
			b.Fatalf("namespaces: %d %v", len(nss), err)
		}
		pods, err := k.Pods(ctx, incidentNS, "")
		if err != nil || len(pods) != podsPerNS {
			b.Fatalf("pods: %d %v", len(pods), err)
		}
		if _, err := k.Events(ctx, incidentNS); err != nil {
			b.Fatal(err)
		}
		res, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: incidentNS, Pod: incidentDep + "-1-p00", Pattern: "OutOfMemoryError"})
		if err != nil || res.Matched == 0 {
			b.Fatalf("logs: %+v %v", res, err)
		}
	}
}

// BenchmarkInvestigate50k runs the analyst on the bundle, with the
// namespace given (as a team's default namespace or an alert gives it) and
// without (every namespace read), and reports the peak heap in use and the
// process's peak resident memory during the investigation.
func BenchmarkInvestigate50k(b *testing.B) {
	for _, tc := range []struct{ name, ns string }{{"namespace", incidentNS}, {"all-namespaces", ""}} {
		b.Run(tc.name, func(b *testing.B) { investigate(b, tc.ns) })
	}
}

// resetPeakRSS resets the kernel's peak resident set of the process.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func peakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var kb uint64
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%d", &kb)
		}
	}
	return kb << 10
}

func investigate(b *testing.B, ns string) {
	dir := bundleDir(b)
	cat := tools.Builtin()
	agents := agent.Resolve(nil, cat)
	a := agents[tools.AgentPlanner]
	rctx := map[string]string{"service": incidentDep}
	if ns != "" {
		rctx["namespace"] = ns
	}
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	var peak uint64
	var cause string
	b.ResetTimer()
	for b.Loop() {
		peak = max(peak, heapsample.Peak(10*time.Millisecond, func() {
			bd, err := bundle.OpenDir(dir)
			if err != nil {
				b.Fatal(err)
			}
			env := &tools.Env{Sources: bd.Sources(bd.CapturedAt)}
			r := &run{cat: cat, env: env, session: &tools.Session{Catalog: cat, Env: env, Toolkit: a.Tools, Used: &tools.UsedTools{}}}
			res, err := analyst.New(analyst.Options{}).Investigate(context.Background(), &agent.Request{ID: "bench", Team: "bench", Agent: a,
				Message: "Why is api-3 failing?", Context: rctx, Agents: agents}, r)
			if err != nil || res == nil {
				b.Fatalf("investigate: %v", err)
			}
			cause = res.RootCause.Description
		}))
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MB")
	if !strings.Contains(strings.ToLower(cause), "memory") {
		b.Errorf("the analyst missed the OOM kills: %s", cause)
	}
}

type run struct {
	cat     *tools.Catalog
	env     *tools.Env
	session *tools.Session
}

func (r *run) Call(ctx context.Context, name string, args any) (any, error) {
	return r.session.Call(ctx, name, args)
}
func (r *run) Has(name string) bool  { return r.session.Has(name) }
func (r *run) Step(string, int, int) {}
func (r *run) Sub(a agent.Agent) agent.Run {
	return &run{cat: r.cat, env: r.env, session: &tools.Session{Catalog: r.cat, Env: r.env, Toolkit: a.Tools, Used: r.session.Used}}
}
func (r *run) Env() *tools.Env { return r.env }
