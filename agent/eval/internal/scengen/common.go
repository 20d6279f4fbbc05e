package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Log styles of application logs.
const (
	styleText   = "text"   // 2026-03-14T10:01:02.123Z INFO  [svc] message
	styleJSON   = "json"   // {"ts":"...","level":"info",...}
	styleLogfmt = "logfmt" // time=... level=info msg="..."
	styleSpring = "spring" // Spring Boot 3 default pattern
)

// msgLine formats one application log line.
func msgLine(style string, t time.Time, level, svc, msg string) string {
	switch style {
	case styleJSON:
		return fmt.Sprintf(`{"ts":%q,"level":%q,"service":%q,"msg":%q}`, ts(t), strings.ToLower(level), svc, msg)
	case styleLogfmt:
		return fmt.Sprintf(`time=%s level=%s service=%s msg=%q`, ts(t), strings.ToLower(level), svc, msg)
	case styleSpring:
		lg := map[string]string{"INFO": " INFO", "WARN": " WARN", "ERROR": "ERROR", "DEBUG": "DEBUG"}[level]
		return fmt.Sprintf("%s %s 1 --- [%s] [nio-8080-exec-%d] c.a.%s.web.ApiController : %s", t.UTC().Format("2006-01-02T15:04:05.000Z07:00"), lg, svc, 1+int(t.UnixNano()/1e6)%10, strings.ReplaceAll(svc, "-", ""), msg)
	default:
		return fmt.Sprintf("%s %-5s [%s] %s", ts(t), level, svc, msg)
	}
}

// reqLine formats one access log line of an HTTP request.
func reqLine(style string, t time.Time, svc, method, path string, status int, ms float64, rid string) string {
	switch style {
	case styleJSON:
		return fmt.Sprintf(`{"ts":%q,"level":"info","service":%q,"msg":"request completed","method":%q,"path":%q,"status":%d,"duration_ms":%.1f,"request_id":%q}`, ts(t), svc, method, path, status, ms, rid)
	case styleLogfmt:
		return fmt.Sprintf(`time=%s level=info service=%s msg="request completed" method=%s path=%s status=%d duration_ms=%.1f request_id=%s`, ts(t), svc, method, path, status, ms, rid)
	case styleSpring:
		return msgLine(style, t, "INFO", svc, fmt.Sprintf("%s %s -> %d in %.0f ms", method, path, status, ms))
	default:
		return fmt.Sprintf("%s INFO  [%s] %s %s %d %.1fms rid=%s", ts(t), svc, method, path, status, ms, rid)
	}
}

// chatter fills l with ordinary request logs of svc between from and to.
func (w *World) chatter(l *Lines, style, svc string, from, to time.Time, gap time.Duration, paths []string) {
	l.Every(from, to, gap, func(t time.Time, i int) string {
		p := paths[w.R.IntN(len(paths))]
		method := "GET"
		if strings.HasPrefix(p, "POST ") {
			method, p = "POST", strings.TrimPrefix(p, "POST ")
		}
		p = strings.ReplaceAll(p, "{id}", fmt.Sprint(1000+w.R.IntN(90000)))
		return reqLine(style, t, svc, method, p, 200, 4+w.R.ExpFloat64()*18, w.reqID())
	})
}

// startup adds start-up lines of a service at t.
func (w *World) startup(l *Lines, style, svc, version string, t time.Time, extra ...string) {
	l.Add(t, msgLine(style, t, "INFO", svc, fmt.Sprintf("starting %s version=%s go=go1.24.4", svc, version)))
	for i, e := range extra {
		tt := t.Add(time.Duration(200*(i+1)) * time.Millisecond)
		l.Add(tt, msgLine(style, tt, "INFO", svc, e))
	}
	tt := t.Add(time.Duration(300*(len(extra)+1)) * time.Millisecond)
	l.Add(tt, msgLine(style, tt, "INFO", svc, "http server listening on :8080"))
}

// healthyLogs gives every pod of a some ordinary logs.
func (w *World) healthyLogs(a *App, style, version string, gap time.Duration, paths []string, extra ...string) {
	for _, p := range a.Pods {
		l := w.lines()
		start := p.Status.ContainerStatuses[0].State.Running
		if start == nil {
			continue
		}
		st := start.StartedAt.Time
		if st.After(w.ago(70 * time.Minute)) {
			w.startup(l, style, a.Spec.Name, version, st, extra...)
		}
		from := st
		if from.Before(w.ago(70 * time.Minute)) {
			from = w.ago(70 * time.Minute)
		}
		w.chatter(l, style, a.Spec.Name, from.Add(2*time.Second), w.Now, gap, paths)
		w.podLog(p, "", l.String())
	}
}

// baseCluster adds three nodes and healthy system workloads.
func (w *World) baseCluster(region, cpu string) []string {
	nodes := w.standardNodes(region, cpu)
	w.systemPods(nodes)
	return nodes
}

// completedJob adds a finished batch Job pod with an old, resolved BackOff
// warning (noise).
func (w *World) completedJob(ns, job string, node string, started time.Time) {
	n := w.ns(ns)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"job-name": job, "batch.kubernetes.io/job-name": job}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/ops/" + strings.Split(job, "-2")[0] + ":1.4.2",
			Resources:              corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("128Mi")}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}},
			RestartPolicy: corev1.RestartPolicyOnFailure, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler", TerminationGracePeriodSeconds: ptr(int64(30))}}
	p := w.newPod(ns, job+"-"+w.suffix(5), tmpl, node, started)
	p.GenerateName = job + "-"
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: w.uid(), Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
	end := started.Add(time.Duration(3+w.R.IntN(4)) * time.Minute)
	firstFail := started.Add(20 * time.Second)
	cs := &p.Status.ContainerStatuses[0]
	cs.Ready, cs.Started, cs.RestartCount = false, ptr(false), 1
	cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: mt(firstFail.Add(15 * time.Second)), FinishedAt: mt(end), ContainerID: cs.ContainerID}}
	cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: mt(started.Add(3 * time.Second)), FinishedAt: mt(firstFail), ContainerID: "containerd://" + restartID(cs.ContainerID)}}
	p.Status.Phase = corev1.PodSucceeded
	setPodConditions(p, started, end)
	p.Status.Conditions[0].Status = corev1.ConditionFalse
	p.Status.Conditions[2].Reason, p.Status.Conditions[2].Message = "PodCompleted", ""
	p.Status.Conditions[3].Reason, p.Status.Conditions[3].Message = "PodCompleted", ""
	n.Pods = append(n.Pods, p)
	w.podEvent(p, "Warning", "BackOff", "Back-off restarting failed container main in pod "+p.Name+"_"+ns+"("+string(p.UID)+")", firstFail.Add(2*time.Second), time.Time{}, 1)
	w.event(evSpec{NS: ns, Kind: "Job", Name: job, UID: p.OwnerReferences[0].UID, Reason: "SuccessfulCreate", Msg: "Created pod: " + p.Name, First: started.Add(-time.Second), Component: "job-controller"})
	w.event(evSpec{NS: ns, Kind: "Job", Name: job, UID: p.OwnerReferences[0].UID, Reason: "Completed", Msg: "Job completed", First: end.Add(2 * time.Second), Component: "job-controller"})
	l := w.lines()
	l.Add(firstFail.Add(16*time.Second), ts(firstFail.Add(16*time.Second))+" INFO starting "+job)
	l.Add(end.Add(-20*time.Second), ts(end.Add(-20*time.Second))+fmt.Sprintf(" INFO processed %d records", 1000+w.R.IntN(50000)))
	l.Add(end.Add(-time.Second), ts(end.Add(-time.Second))+" INFO done")
	w.podLog(p, "", l.String())
}

// resolvedScheduling adds a pod that waited for capacity and then ran
// (FailedScheduling then TriggeredScaleUp then Scheduled): noise.
func (w *World) resolvedScheduling(a *App, at time.Time) {
	p := a.Pods[len(a.Pods)-1]
	w.event(evSpec{NS: p.Namespace, Kind: "Pod", Name: p.Name, UID: p.UID, Type: "Warning", Reason: "FailedScheduling",
		Msg:   "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
		First: at, Last: at.Add(40 * time.Second), Count: 3, Component: "default-scheduler"})
	w.event(evSpec{NS: p.Namespace, Kind: "Pod", Name: p.Name, UID: p.UID, Reason: "TriggeredScaleUp",
		Msg:   "pod triggered scale-up: [{eks-general-m6-20240611 3->4 (max: 8)}]",
		First: at.Add(12 * time.Second), Component: "cluster-autoscaler"})
}

// hpaNoise adds an unrelated HPA warning about missing metrics.
func (w *World) hpaNoise(ns, name string, at time.Time) {
	w.event(evSpec{NS: ns, Kind: "HorizontalPodAutoscaler", APIVersion: "autoscaling/v2", Name: name, UID: w.uid(), Type: "Warning", Reason: "FailedGetResourceMetric",
		Msg:   "failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API",
		First: at, Last: at.Add(90 * time.Second), Count: 4, Component: "horizontal-pod-autoscaler"})
}

// nodeCPU writes node CPU utilisation (flat noise) for the cluster's nodes.
func (w *World) nodeCPU(o *OM, level float64) {
	o.Family("instance:node_cpu_utilisation:rate5m", "gauge", "Fraction of CPU time in use per node.")
	for i, n := range w.Nodes {
		l := level * (0.8 + 0.2*float64(i))
		o.Gauge(fmt.Sprintf(`instance=%q,job="node-exporter"`, n.Status.Addresses[0].Address+":9100"), 0.07, diurnal(l, 0.1))
	}
}

// goroutines writes go_goroutines of a few healthy jobs (noise).
func (w *World) goroutines(o *OM, jobs ...string) {
	o.Family("go_goroutines", "gauge", "Number of goroutines that currently exist.")
	for _, j := range jobs {
		base := float64(40 + w.R.IntN(200))
		o.Gauge(fmt.Sprintf(`job=%q,namespace="monitoring"`, j), 0.04, constant(base))
	}
}

// upSeries writes up{job} = 1 for healthy scrape targets.
func (w *World) upSeries(o *OM, jobs ...string) {
	o.Family("up", "gauge", "Whether the scrape target is up.")
	for _, j := range jobs {
		o.GaugeExact(fmt.Sprintf(`job=%q`, j), constant(1))
	}
}

// sawtooth models memory that grows from lo to hi over period, resetting at
// each restart time; before first it is flat at base.
func sawtooth(restarts []time.Time, start time.Time, lo, hi float64, period time.Duration) func(time.Time) float64 {
	return func(t time.Time) float64 {
		if t.Before(start) {
			return math.NaN()
		}
		last := start
		for _, r := range restarts {
			if !r.After(t) {
				last = r
			}
		}
		f := float64(t.Sub(last)) / float64(period)
		if f > 1 {
			f = 1
		}
		return lo + (hi-lo)*math.Sqrt(f)
	}
}

// between returns f inside [from, to) and NaN (no sample) outside.
func between(from, to time.Time, f func(time.Time) float64) func(time.Time) float64 {
	return func(t time.Time) float64 {
		if t.Before(from) || !t.Before(to) {
			return math.NaN()
		}
		return f(t)
	}
}

// svcPortTarget is a named target port.
func svcPortTarget(name string) intstr.IntOrString { return intstr.FromString(name) }
