package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestPIDLines: a thread or process that cannot be created, as the JVM,
// glibc, shells, systemd, runc, Go, Python, Node and the kernel say it, is
// out of PIDs, not out of memory; a full heap stays an OOM.
func TestPIDLines(t *testing.T) {
	for line, want := range map[string]Kind{
		"java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory or process/resource limits reached":                                  KindPIDExhaustion,
		"java.lang.OutOfMemoryError: unable to create new native thread":                                                                                         KindPIDExhaustion,
		`[0.842s][warning][os,thread] Failed to start thread "Unknown thread" - pthread_create failed (EAGAIN) for attributes: stacksize: 1024k, guardsize: 0k.`: KindPIDExhaustion,
		"/docker-entrypoint.sh: fork: retry: Resource temporarily unavailable":                                                                                   KindPIDExhaustion,
		"2026-11-20T14:35:02+0000 node-7 systemd[1]: Failed to fork: Resource temporarily unavailable":                                                           KindPIDExhaustion,
		`OCI runtime create failed: runc create failed: unable to start container process: fork/exec /proc/self/exe: resource temporarily unavailable: unknown`:  KindPIDExhaustion,
		"runtime: failed to create new OS thread (have 9 already; errno=11)":                                                                                     KindPIDExhaustion,
		"RuntimeError: can't start new thread":  KindPIDExhaustion,
		"Error: spawn /usr/bin/chromium EAGAIN": KindPIDExhaustion,
		"[812345.1] cgroup: fork rejected by pids controller in /kubepods.slice/kubepods-burstable.slice/pod1234.slice": KindPIDExhaustion,
		"java.lang.OutOfMemoryError: Java heap space":                                                                   KindHeapExhausted,
		"FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory":                             KindHeapExhausted,
	} {
		if got, _ := ClassifyLine(line); got != want {
			t.Errorf("%.70q: %q, want %q", line, got, want)
		}
	}
}

// TestDetectPIDExhaustion: a node whose PIDs reached their limit (the
// kubelet's pid eviction, node_exporter's series, the journal failing to
// fork) is the root for the pods on it that cannot create threads; the pod
// whose ps shows zombies (or that was evicted for pids) holds them. Pods
// on other nodes are not its victims; PIDPressure with nothing failing is
// left to node pressure.
func TestDetectPIDExhaustion(t *testing.T) {
	now := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-time.Hour), End: now}
	on := func(name, ns, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{NodeName: node}}
	}
	pods := []corev1.Pod{
		on("orders-api-7d9f5c8b64-2hkq8", "shop", "worker-3.internal"),
		on("orders-api-7d9f5c8b64-x8m2t", "shop", "worker-4.internal"),
		on("thumbnailer-5c7d8b9f6d-x2k4p", "media", "worker-3.internal"),
	}
	victimAt := now.Add(-40 * time.Minute)
	victim := LogSet{Source: "orders-api-7d9f5c8b64-2hkq8", Subject: "orders-api", Templates: []analysis.LogTemplate{
		{Example: "Exception in thread \"pool-3-thread-9\" java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory or process/resource limits reached", Incident: 14, FirstIncident: victimAt, FirstSeen: victimAt},
	}}
	other := LogSet{Source: "orders-api-7d9f5c8b64-x8m2t", Subject: "orders-api", Templates: []analysis.LogTemplate{
		{Example: "RuntimeError: can't start new thread", Incident: 2, FirstIncident: victimAt, FirstSeen: victimAt},
	}}
	journal := LogSet{Source: "worker-3-syslog", Subject: "worker-3-syslog", Host: true, Templates: []analysis.LogTemplate{
		{Example: "May  4 09:19:30 worker-3 kubelet[2211]: W0504 09:19:30.661508    2211 eviction_manager.go:349] \"Eviction manager: attempting to reclaim\" resourceName=\"pid\"", Incident: 3, FirstIncident: now.Add(-41 * time.Minute)},
	}}
	series := func(name string, labels evidence.Labels, vals ...float64) evidence.Series {
		l := evidence.Labels{"__name__": name, "node": "worker-3.internal", "instance": "10.1.3.7:9100"}
		for k, v := range labels {
			l[k] = v
		}
		s := evidence.Series{Labels: l}
		for i, v := range vals {
			s.Points = append(s.Points, evidence.Point{T: now.Add(time.Duration(i-6) * 10 * time.Minute), V: v})
		}
		return s
	}
	procs := MetricSet{Name: "node_processes_pids", Class: MetricState, Series: []evidence.Series{
		series("node_processes_pids", nil, 900, 9000, 20000, 30000, 32700, 32760, 32760),
		series("node_processes_max_processes", nil, 32768, 32768, 32768, 32768, 32768, 32768, 32768),
		series("node_processes_state", evidence.Labels{"state": "Z"}, 0, 8000, 19000, 29000, 31500, 31600, 31600),
	}}
	ps := evidence.CommandOutput{Command: "kubectl exec -n media thumbnailer-5c7d8b9f6d-x2k4p -- ps aux", Exec: true, Namespace: "media", Pod: "thumbnailer-5c7d8b9f6d-x2k4p", Run: "ps aux", Lines: []string{
		"USER  PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND",
		"app     1  0.3  1.1 2210 9900 ?  Ssl  08:01 0:09 python worker.py",
	}}
	for i := 0; i < 30; i++ {
		ps.Lines = append(ps.Lines, "app   2101  0.0  0.0     0    0 ?  Z    08:02 0:00 [convert] <defunct>")
	}
	evicted := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "thumbnailer-5c7d8b9f6d-q7wnb", Namespace: "media"}, Reason: "Evicted", Type: "Warning",
		Message: "The node was low on resource: pids.", Source: corev1.EventSource{Host: "worker-3.internal"}}
	cases := []struct {
		name               string
		ev                 Gathered
		n                  int
		culprit, workloads string
		want               []string
	}{
		{"metrics, zombies in ps", Gathered{K8s: K8sEvidence{Pods: pods}, Logs: []LogSet{victim, other}, Metrics: []MetricSet{procs}, Commands: []evidence.CommandOutput{ps}, Window: w}, 1,
			"thumbnailer", "orders-api,thumbnailer", []string{"node worker-3.internal ran out of PIDs", "node_processes_pids passed 90% of its limit of 32768", "zombie (defunct)", "30 zombie (defunct) processes in its pod thumbnailer-5c7d8b9f6d-x2k4p", "unable to create native thread"}},
		{"journal and an eviction for pids", Gathered{K8s: K8sEvidence{Pods: pods, Events: []corev1.Event{evicted}}, Logs: []LogSet{victim, journal}, Window: w}, 1,
			"thumbnailer", "orders-api,thumbnailer", []string{"the kubelet evicted thumbnailer-5c7d8b9f6d-q7wnb", "The PIDs are held by thumbnailer"}},
		{"threads fail but the node says nothing", Gathered{K8s: K8sEvidence{Pods: pods}, Logs: []LogSet{victim}, Window: w}, 0, "", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := oneFinding(t, detectPIDExhaustion(&c.ev, nil), c.n > 0)
			if !ok {
				return
			}
			if f.Subject != "worker-3.internal" || f.fact("culprit") != c.culprit || f.fact("workloads") != c.workloads || f.Weight != 0.95 {
				t.Errorf("subject %q culprit %q workloads %q weight %v", f.Subject, f.fact("culprit"), f.fact("workloads"), f.Weight)
			}
			h := &Hypothesis{Kind: KindPIDExhaustion, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			if !pidExhaustion.related(h, &Finding{Kind: KindPIDExhaustion, Subject: "orders-api"}) || pidExhaustion.related(h, &Finding{Kind: KindLogErrors, Subject: "payments"}) {
				t.Error("related: orders-api should be, payments should not")
			}
			wantDescribed(t, h, Scope{}, c.want...)
			if d := describe(h, Scope{}); strings.Contains(d, "x8m2t") {
				t.Errorf("a pod on another node is not a victim: %s", d)
			}
		})
	}
}

// TestPIDChange: a change to the workload holding the PIDs, or to how
// processes are started, triggers; a cache TTL does not.
func TestPIDChange(t *testing.T) {
	h := &Hypothesis{Kind: KindPIDExhaustion, Subject: "worker-3", Primary: []*Finding{{Facts: map[string]string{"culprit": "thumbnailer"}}}}
	for _, c := range []struct {
		subject, desc string
		want          bool
	}{
		{"thumbnailer", "thumbnailer 3.1.0", true},
		{"renderer", "base image node:20-slim without tini", true},
		{"orders-api", "orders-api: raise cache TTL 30s -> 60s", false},
	} {
		f := &Finding{Kind: KindDeploy, Subject: c.subject, Facts: map[string]string{"description": c.desc}}
		if got := pidExhaustion.fitsChange(h, f); got != c.want {
			t.Errorf("fitsChange(%s %q) = %v, want %v", c.subject, c.desc, got, c.want)
		}
	}
}
