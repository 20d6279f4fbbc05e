package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
)

// ServiceState is a service with its endpoint readiness.
type ServiceState struct {
	Service           corev1.Service
	ReadyEndpoints    int
	NotReadyEndpoints int
	// Known is false when endpoint counts were not reported.
	Known bool
}

// K8sEvidence is the Kubernetes state an investigation gathered.
type K8sEvidence struct {
	Pods        []corev1.Pod
	Events      []corev1.Event
	Deployments []appsv1.Deployment
	ReplicaSets []appsv1.ReplicaSet
	Services    []ServiceState
	Nodes       []corev1.Node
	// Autoscalers are the HPAs of the workloads whose pods were described.
	Autoscalers []autoscalingv2.HorizontalPodAutoscaler
	// PreviousLogs holds the last lines of crashed containers, keyed
	// "namespace/pod/container".
	PreviousLogs map[string][]evidence.LogLine
	// CurrentLogs marks the PreviousLogs entries read from the current
	// container because no previous instance's log existed.
	CurrentLogs map[string]bool
}

// Window is the incident window and the baseline before it.
type Window struct {
	BaselineStart time.Time
	Start         time.Time
	End           time.Time
}

// inWindowOrRecent reports whether t is at or after the baseline start
// (conditions older than the baseline are background, not the incident).
func (w Window) recent(t time.Time) bool {
	return t.IsZero() || w.BaselineStart.IsZero() || !t.Before(w.BaselineStart)
}

var hashSuffix = regexp.MustCompile(`^(.+?)-[a-z0-9]{6,10}(-[a-z0-9]{5})?$`)

// WorkloadOfPod names the workload a pod belongs to: its Deployment (from a
// ReplicaSet owner), StatefulSet, DaemonSet or Job, else its app label, else
// its name without generated suffixes.
func WorkloadOfPod(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		switch o.Kind {
		case "ReplicaSet":
			return trimHash(o.Name)
		case "StatefulSet", "DaemonSet", "Job", "Deployment":
			return o.Name
		}
	}
	for _, k := range []string{"app.kubernetes.io/name", "app", "k8s-app", "name"} {
		if v := p.Labels[k]; v != "" {
			return v
		}
	}
	return workloadOfName(p.Name)
}

// trimHash removes a ReplicaSet pod-template hash ("checkout-7d9f8b6c5").
func trimHash(rs string) string {
	i := strings.LastIndexByte(rs, '-')
	if i > 0 && len(rs)-i-1 >= 5 && len(rs)-i-1 <= 10 && isAlnumLower(rs[i+1:]) && looksGenerated(rs[i+1:]) {
		return rs[:i]
	}
	return rs
}

// looksGenerated tells a generated suffix ("7d9f8b6c5", "xk2pq") from a
// word ("reconcile"): it has a digit or no vowel.
func looksGenerated(s string) bool {
	return strings.ContainsAny(s, "0123456789") || !strings.ContainsAny(s, "aeiou")
}

func isAlnumLower(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// workloadOfName guesses a workload from a pod name (for events about pods
// no longer listed).
func workloadOfName(name string) string {
	if m := hashSuffix.FindStringSubmatch(name); m != nil {
		return trimHash(m[1])
	}
	// StatefulSet ordinal.
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

type podIndex struct {
	byKey map[string]*corev1.Pod
}

func newPodIndex(pods []corev1.Pod) podIndex {
	ix := podIndex{byKey: map[string]*corev1.Pod{}}
	for i := range pods {
		ix.byKey[pods[i].Namespace+"/"+pods[i].Name] = &pods[i]
	}
	return ix
}

func (ix podIndex) workload(ns, name string) string {
	if p := ix.byKey[ns+"/"+name]; p != nil {
		return WorkloadOfPod(p)
	}
	return workloadOfName(name)
}

// DetectKubernetes runs every Kubernetes fault detector (rollouts, which
// are changes, come from DetectRollouts).
func DetectKubernetes(ev K8sEvidence, w Window) []Finding {
	var out []Finding
	out = append(out, DetectPods(ev.Pods, ev.PreviousLogs, w)...)
	out = append(out, DetectEvents(ev.Events, ev.Pods, w)...)
	out = append(out, DetectDeployments(ev.Deployments, ev.ReplicaSets, w)...)
	out = append(out, DetectServices(ev.Services, ev.Pods)...)
	out = append(out, DetectNodes(ev.Nodes, w)...)
	return out
}

func containerSpec(p *corev1.Pod, name string) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

func memLimit(c *corev1.Container) string {
	if c == nil {
		return ""
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		return q.String()
	}
	return ""
}

func memRequest(c *corev1.Container) string {
	if c == nil {
		return ""
	}
	if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
		return q.String()
	}
	return ""
}

// exitMeaning explains common container exit codes.
func exitMeaning(code int32) string {
	switch code {
	case 0:
		return "exited normally"
	case 1:
		return "application error"
	case 2:
		return "misuse of shell builtins or bad arguments"
	case 126:
		return "command not executable"
	case 127:
		return "command not found"
	case 134:
		return "aborted (SIGABRT)"
	case 137:
		return "killed (SIGKILL), usually out of memory"
	case 139:
		return "segmentation fault (SIGSEGV)"
	case 143:
		return "terminated (SIGTERM)"
	}
	return "non-zero exit"
}

// DetectPods inspects pod and container states: OOMKilled, crash loops
// with the last termination and the previous container's last log lines,
// image pull errors, config errors, unschedulable and evicted pods.
func DetectPods(pods []corev1.Pod, prevLogs map[string][]evidence.LogLine, w Window) []Finding {
	var out []Finding
	// A Job that completed got past the failures of its earlier pods.
	jobDone := map[string]bool{}
	for i := range pods {
		if j := jobOfPod(&pods[i]); j != "" && pods[i].Status.Phase == corev1.PodSucceeded {
			jobDone[pods[i].Namespace+"/"+j] = true
		}
	}
	for i := range pods {
		p := &pods[i]
		if j := jobOfPod(p); j != "" && jobDone[p.Namespace+"/"+j] && p.Status.Phase == corev1.PodFailed {
			for _, f := range podFindings(p, prevLogs, w) {
				f.setFact("resolved", "true")
				f.Weight *= 0.3
				f.Severity = SevInfo
				f.Summary += fmt.Sprintf(" (its Job %s completed on a later attempt)", j)
				out = append(out, f)
			}
			continue
		}
		out = append(out, podFindings(p, prevLogs, w)...)
	}
	return out
}

// podFindings inspects one pod.
func podFindings(p *corev1.Pod, prevLogs map[string][]evidence.LogLine, w Window) []Finding {
	var out []Finding
	{
		wl := WorkloadOfPod(p)
		obj := "pod " + p.Namespace + "/" + p.Name
		base := Finding{Subject: wl, Object: obj, Namespace: p.Namespace, Source: SrcKubernetes}
		if p.Spec.NodeName != "" {
			base.Related = []string{p.Spec.NodeName}
		}
		if p.Status.Reason == "Evicted" {
			f := base
			f.Kind, f.Severity, f.Weight = KindEviction, SevWarning, 0.8
			f.Time = p.Status.StartTime.Time
			for _, c := range p.Status.Conditions {
				if !c.LastTransitionTime.IsZero() {
					f.Time = earliest(f.Time, c.LastTransitionTime.Time)
				}
			}
			f.Summary = fmt.Sprintf("%s evicted: %s", obj, p.Status.Message)
			f.Evidence = []string{fmt.Sprintf("%s was evicted from node %s: %s", obj, p.Spec.NodeName, quote(p.Status.Message, 200))}
			f.setFact("node", p.Spec.NodeName)
			f.setFact("message", p.Status.Message)
			f.setFact("resource", pressureResource(p.Status.Message))
			out = append(out, f)
			return out
		}
		if p.Status.Phase == corev1.PodPending {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					f := base
					f.Kind, f.Severity, f.Weight = KindUnschedulable, SevCritical, 0.9
					f.Time = c.LastTransitionTime.Time
					if f.Time.IsZero() {
						f.Time = p.CreationTimestamp.Time
					}
					f.Summary = fmt.Sprintf("%s cannot be scheduled: %s", obj, c.Message)
					f.Evidence = []string{fmt.Sprintf("%s is Pending, PodScheduled=False (Unschedulable) since %s: %s", obj, ts(f.Time), quote(c.Message, 300))}
					f.setFact("message", c.Message)
					out = append(out, f)
				}
			}
		}
		statuses := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
		for _, cs := range statuses {
			out = append(out, containerFindings(p, cs, base, prevLogs, w)...)
		}
	}
	return out
}

func containerFindings(p *corev1.Pod, cs corev1.ContainerStatus, base Finding, prevLogs map[string][]evidence.LogLine, w Window) []Finding {
	var out []Finding
	spec := containerSpec(p, cs.Name)
	cobj := fmt.Sprintf("%s container %s", base.Object, cs.Name)
	last := cs.LastTerminationState.Terminated
	cur := cs.State.Terminated
	term := last
	if cur != nil && (term == nil || cur.FinishedAt.After(term.FinishedAt.Time)) {
		term = cur
	}
	waiting := cs.State.Waiting
	lastLines := prevLogs[p.Namespace+"/"+p.Name+"/"+cs.Name]

	// OOMKilled: the last (or current) termination says so.
	if term != nil && (term.Reason == "OOMKilled") && w.recent(term.FinishedAt.Time) {
		f := base
		f.Kind, f.Severity, f.Weight = KindOOMKilled, SevCritical, 0.95
		f.Time = term.FinishedAt.Time
		if f.Time.IsZero() {
			f.Time = term.StartedAt.Time
		}
		lim := memLimit(spec)
		f.Summary = fmt.Sprintf("%s OOMKilled (exit code %d), %s", cobj, term.ExitCode, plural(int(cs.RestartCount), "restart", "restarts"))
		ev := fmt.Sprintf("%s last terminated with reason OOMKilled, exit code %d, at %s; restart count %d", cobj, term.ExitCode, ts(term.FinishedAt.Time), cs.RestartCount)
		f.Evidence = []string{ev}
		if lim != "" {
			req := memRequest(spec)
			s := fmt.Sprintf("container %s memory limit is %s", cs.Name, lim)
			if req != "" {
				s += fmt.Sprintf(" (request %s)", req)
			}
			f.Evidence = append(f.Evidence, s)
		} else {
			f.Evidence = append(f.Evidence, fmt.Sprintf("container %s has no memory limit: the node's memory ran out", cs.Name))
		}
		if waiting != nil && waiting.Reason == "CrashLoopBackOff" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s is in CrashLoopBackOff", cobj))
			f.setFact("crashloop", "true")
		}
		f.setFact("memory_limit", lim)
		f.setFact("memory_request", memRequest(spec))
		f.setFact("container", cs.Name)
		f.setFact("restarts", strconv.Itoa(int(cs.RestartCount)))
		if spec != nil {
			f.setFact("image", spec.Image)
		}
		out = append(out, f)
		return out
	}
	if waiting != nil {
		switch waiting.Reason {
		case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull":
			f := base
			f.Kind, f.Severity, f.Weight = KindImagePull, SevCritical, 0.95
			f.Time = containerSince(p, cs)
			image := cs.Image
			if spec != nil {
				image = spec.Image
			}
			f.Summary = fmt.Sprintf("%s cannot pull image %s (%s)", cobj, image, waiting.Reason)
			f.Evidence = []string{fmt.Sprintf("%s is waiting with reason %s for image %s", cobj, waiting.Reason, image)}
			if waiting.Message != "" {
				f.Evidence = append(f.Evidence, fmt.Sprintf("kubelet: %s", quote(waiting.Message, 300)))
			}
			f.setFact("image", image)
			f.setFact("message", waiting.Message)
			f.setFact("container", cs.Name)
			out = append(out, f)
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
			f := base
			if sf, ok := startFailure(base, cobj, waiting.Reason, waiting.Message, 0, containerSince(p, cs)); ok {
				sf.setFact("container", cs.Name)
				sf.setFact("restarts", strconv.Itoa(int(cs.RestartCount)))
				if spec != nil {
					sf.setFact("image", spec.Image)
				}
				out = append(out, sf)
				break
			}
			f.Kind, f.Severity, f.Weight = KindConfigError, SevCritical, 0.95
			f.Time = containerSince(p, cs)
			f.Summary = fmt.Sprintf("%s cannot start: %s: %s", cobj, waiting.Reason, waiting.Message)
			f.Evidence = []string{fmt.Sprintf("%s is waiting with reason %s: %s", cobj, waiting.Reason, quote(waiting.Message, 300))}
			f.setFact("reason", waiting.Reason)
			f.setFact("message", waiting.Message)
			f.setFact("missing", missingRef(waiting.Message))
			f.setFact("container", cs.Name)
			out = append(out, f)
		case "CrashLoopBackOff":
			f := base
			f.Kind, f.Severity, f.Weight = KindCrashLoop, SevCritical, 0.85
			f.Time = containerSince(p, cs)
			ev := fmt.Sprintf("%s is in CrashLoopBackOff, restart count %d", cobj, cs.RestartCount)
			if term != nil {
				if validStart(p, term.StartedAt.Time) {
					f.Time = earliest(term.StartedAt.Time, f.Time)
				}
				ev += fmt.Sprintf("; last terminated with reason %s, exit code %d (%s) at %s", orDash(term.Reason), term.ExitCode, exitMeaning(term.ExitCode), ts(term.FinishedAt.Time))
				f.setFact("exit_code", strconv.Itoa(int(term.ExitCode)))
				f.setFact("reason", term.Reason)
				if term.Message != "" {
					f.Evidence = append(f.Evidence, fmt.Sprintf("termination message: %s", quote(term.Message, 200)))
				}
			}
			f.Evidence = append([]string{ev}, f.Evidence...)
			if n := len(lastLines); n > 0 {
				from := max(0, n-3)
				var qs []string
				for _, l := range lastLines[from:] {
					qs = append(qs, quote(l.Text, 200))
				}
				f.Evidence = append(f.Evidence, fmt.Sprintf("last log lines of the crashed container: %s", strings.Join(qs, " / ")))
				f.setFact("last_log", causeLine(lastLines))
			}
			f.Summary = fmt.Sprintf("%s in CrashLoopBackOff (exit code %s)", cobj, orDash(f.fact("exit_code")))
			if isInitContainer(p, cs.Name) {
				f.setFact("init_container", cs.Name)
				f.Summary = fmt.Sprintf("%s (init container) in Init:CrashLoopBackOff (exit code %s)", cobj, orDash(f.fact("exit_code")))
			}
			f.setFact("container", cs.Name)
			f.setFact("restarts", strconv.Itoa(int(cs.RestartCount)))
			if spec != nil {
				f.setFact("image", spec.Image)
			}
			out = append(out, f)
			if c, ok := configCrash(f, cobj, true); ok {
				out = append(out, c)
			}
			if term != nil {
				if sf, ok := startFailure(f, cobj, term.Reason, term.Message, term.ExitCode, term.FinishedAt.Time); ok {
					out = append(out, sf)
				}
			}
		}
		return out
	}
	// Restarted recently without a waiting state, or terminated with an
	// error (jobs, init containers).
	if term != nil && term.ExitCode != 0 && w.recent(term.FinishedAt.Time) && (cs.RestartCount >= 2 || cur != nil) {
		f := base
		f.Kind, f.Severity, f.Weight = KindCrashLoop, SevWarning, 0.6
		f.Time = term.StartedAt.Time
		if f.Time.IsZero() {
			f.Time = term.FinishedAt.Time
		}
		f.Summary = fmt.Sprintf("%s terminated with exit code %d (%s), %s", cobj, term.ExitCode, orDash(term.Reason), plural(int(cs.RestartCount), "restart", "restarts"))
		f.Evidence = []string{fmt.Sprintf("%s last terminated with reason %s, exit code %d (%s) at %s; restart count %d", cobj, orDash(term.Reason), term.ExitCode, exitMeaning(term.ExitCode), ts(term.FinishedAt.Time), cs.RestartCount)}
		if n := len(lastLines); n > 0 {
			line := causeLine(lastLines)
			f.Evidence = append(f.Evidence, fmt.Sprintf("last log line of the crashed container: %s", quote(line, 200)))
			f.setFact("last_log", line)
		}
		f.setFact("exit_code", strconv.Itoa(int(term.ExitCode)))
		f.setFact("container", cs.Name)
		out = append(out, f)
		if c, ok := configCrash(f, cobj, false); ok {
			out = append(out, c)
		}
		if sf, ok := startFailure(f, cobj, term.Reason, term.Message, term.ExitCode, term.FinishedAt.Time); ok {
			out = append(out, sf)
		}
	}
	return out
}

// validStart reports whether a termination's startedAt is real: the
// kubelet reports 1970-01-01 for a container that never started.
func validStart(p *corev1.Pod, t time.Time) bool {
	return !t.IsZero() && t.Year() > 1971 && !t.Before(p.CreationTimestamp.Time.Add(-time.Minute))
}

var startFailureMsgRE = regexp.MustCompile(`(?i)executable file not found|exec format error|no such file or directory|permission denied|oci runtime (create|exec) failed|runc create failed|unable to start container process|failed to create (containerd )?(task|shim)|exec: "[^"]*": `)

// IsStartFailure reports whether a container termination or waiting state
// says its command or entrypoint cannot be started at all (a bad image or
// command), as opposed to an application that starts and exits.
func IsStartFailure(reason, msg string, code int32) bool {
	switch reason {
	case "StartError", "ContainerCannotRun", "RunContainerError":
		return msg != "" || code == 126 || code == 127 || code == 128
	}
	if msg != "" && startFailureMsgRE.MatchString(msg) && (code == 126 || code == 127 || code == 128 || strings.Contains(strings.ToLower(msg), "runc") || strings.Contains(strings.ToLower(msg), "oci runtime")) {
		return true
	}
	return false
}

// startFailure derives a start_failure finding from a crashing container
// whose command/entrypoint cannot be executed.
func startFailure(crash Finding, cobj, reason, msg string, code int32, at time.Time) (Finding, bool) {
	if !IsStartFailure(reason, msg, code) {
		return Finding{}, false
	}
	f := crash
	f.Kind, f.Severity, f.Weight = KindStartFailure, SevCritical, 0.95
	f.Facts = maps.Clone(crash.Facts)
	if f.Time.IsZero() || f.Time.Year() <= 1971 {
		f.Time = at
	}
	mech := startMechanism(msg)
	f.Summary = fmt.Sprintf("%s cannot start its command/entrypoint (%s): %s", cobj, orDash(reason), truncate(msg, 160))
	ev := fmt.Sprintf("%s terminated with reason %s", cobj, orDash(reason))
	if code != 0 {
		ev += fmt.Sprintf(", exit code %d (%s)", code, exitMeaning(code))
	}
	ev += ": " + quote(msg, 300)
	f.Evidence = append([]string{ev}, crash.Evidence...)
	f.setFact("reason", reason)
	if f.Facts != nil {
		f.Facts["start_message"] = msg
	} else {
		f.setFact("start_message", msg)
	}
	f.setFact("start_mechanism", mech)
	if code != 0 {
		f.setFact("exit_code", strconv.Itoa(int(code)))
	}
	return f, true
}

var execNameRE = regexp.MustCompile(`exec: "([^"]+)"`)

// startMechanism says in plain words why the runtime could not start the
// process.
func startMechanism(msg string) string {
	l := strings.ToLower(msg)
	name := ""
	if m := execNameRE.FindStringSubmatch(msg); m != nil {
		name = m[1]
	}
	what := "the command"
	if name != "" {
		what = fmt.Sprintf("the command %q", name)
	}
	switch {
	case strings.Contains(l, "executable file not found"):
		return what + " does not exist in the image (executable file not found in $PATH)"
	case strings.Contains(l, "exec format error"):
		return what + " is built for another CPU architecture (exec format error)"
	case strings.Contains(l, "no such file or directory"):
		return what + " or its interpreter does not exist in the image (no such file or directory)"
	case strings.Contains(l, "permission denied"):
		return what + " is not executable (permission denied)"
	}
	return "the OCI runtime cannot start the container process"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// containerSince estimates when a container's trouble began: the pod's
// start, else its creation.
func containerSince(p *corev1.Pod, cs corev1.ContainerStatus) time.Time {
	if t := cs.LastTerminationState.Terminated; t != nil && validStart(p, t.StartedAt.Time) {
		return t.StartedAt.Time
	}
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

var missingRefRE = regexp.MustCompile(`(?i)(secret|configmap)s? "?([\w.-]+)"? not found|couldn't find key ([\w.-]+) in (Secret|ConfigMap) ([\w./-]+)`)

// missingRef extracts `secret "db-credentials"` from a config error.
func missingRef(msg string) string {
	m := missingRefRE.FindStringSubmatch(msg)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return strings.ToLower(m[1]) + " " + m[2]
	default:
		return fmt.Sprintf("key %s in %s %s", m[3], strings.ToLower(m[4]), m[5])
	}
}

func pressureResource(msg string) string {
	l := strings.ToLower(msg)
	switch {
	case strings.Contains(l, "memory"):
		return "memory"
	case strings.Contains(l, "ephemeral-storage"), strings.Contains(l, "disk"), strings.Contains(l, "nodefs"), strings.Contains(l, "imagefs"):
		return "disk"
	case strings.Contains(l, "pid"):
		return "pid"
	}
	return ""
}

func eventTime(e *corev1.Event) (first, last time.Time) {
	first = e.FirstTimestamp.Time
	if first.IsZero() {
		first = e.EventTime.Time
	}
	last = e.LastTimestamp.Time
	if last.IsZero() {
		last = first
	}
	return first, last
}

var oomProcRE = regexp.MustCompile(`(?i)killed process \d+ \(([^)]+)\)`)

// oomWorkload names the workload a node's OOM event is about: the killed
// process when a workload has its name, else the one workload on that node
// with an OOMKilled container.
func oomWorkload(msg, node string, pods []corev1.Pod) string {
	proc := ""
	if m := oomProcRE.FindStringSubmatch(msg); m != nil {
		proc = strings.ToLower(m[1])
	}
	var onNode []string
	for i := range pods {
		p := &pods[i]
		wl := WorkloadOfPod(p)
		if proc != "" && (strings.EqualFold(wl, proc) || strings.HasPrefix(proc, wl) || strings.HasPrefix(wl, proc) && len(proc) >= 5) {
			return wl
		}
		if p.Spec.NodeName != node {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" && !slices.Contains(onNode, wl) {
				onNode = append(onNode, wl)
			}
		}
	}
	if len(onNode) == 1 {
		return onNode[0]
	}
	return ""
}

// DetectEvents reads Warning events (and a few Normal ones that matter):
// scheduling failures, probe failures, mount failures, image pull errors,
// evictions, node conditions, quota and autoscaler limits.
func DetectEvents(events []corev1.Event, pods []corev1.Pod, w Window) []Finding {
	ix := newPodIndex(pods)
	type key struct {
		kind Kind
		obj  string
	}
	merged := map[key]*Finding{}
	var order []key
	succeeded := successTimes(events)
	for i := range events {
		e := &events[i]
		first, last := eventTime(e)
		if !w.End.IsZero() && first.After(w.End) {
			continue
		}
		if !last.IsZero() && !w.recent(last) {
			continue // stale: ended before the baseline began
		}
		m, weight := classifyEvent(e)
		if m == nil {
			continue
		}
		kind := m.kind
		io := e.InvolvedObject
		t := eventTarget{Subject: io.Name, Object: strings.ToLower(io.Kind) + " " + io.Namespace + "/" + io.Name, Pods: pods}
		switch io.Kind {
		case "Pod":
			t.Subject = ix.workload(io.Namespace, io.Name)
			t.Pod = ix.byKey[io.Namespace+"/"+io.Name]
			if t.Pod != nil && t.Pod.Spec.NodeName != "" {
				t.Related = append(t.Related, t.Pod.Spec.NodeName)
			}
		case "ReplicaSet":
			t.Subject = trimHash(io.Name)
		case "Node":
			t.Object = "node " + io.Name
		}
		if e.Source.Host != "" && io.Kind == "Pod" && !slices.Contains(t.Related, e.Source.Host) {
			t.Related = append(t.Related, e.Source.Host)
		}
		if m.eventTarget != nil {
			m.eventTarget(e, &t)
		}
		subject, obj, related := t.Subject, t.Object, t.Related
		// A pod that is now Running and ready (or has completed) has got
		// past a scheduling, pull, probe or crash problem its events tell of.
		resolved := false
		if io.Kind == "Pod" {
			p := ix.byKey[io.Namespace+"/"+io.Name]
			if p != nil && podHealthy(p) && (w.End.IsZero() || last.Before(w.End.Add(-5*time.Minute))) {
				resolved = true
				weight *= 0.3
			}
			// A pod that no longer exists (a finished Job's, a replaced
			// one) and whose events stopped is past its trouble.
			if p == nil && len(ix.byKey) > 0 && !w.End.IsZero() && last.Before(w.End.Add(-15*time.Minute)) && !m.eventOutlivesPod {
				resolved = true
				weight *= 0.4
			}
		}
		// A controller that created its pods after failing to is past
		// that failure: the later success supersedes it.
		if ok := succeeded[io.Kind+" "+io.Namespace+"/"+io.Name]; e.Reason == "FailedCreate" && ok.After(last) {
			resolved = true
			weight *= 0.3
		}
		k := key{kind, obj}
		f := merged[k]
		if f == nil {
			f = &Finding{Kind: kind, Subject: subject, Object: obj, Namespace: io.Namespace, Time: first,
				Source: SrcEvents, Weight: weight, Related: related}
			f.Severity = SevWarning
			if m.eventCritical {
				f.Severity = SevCritical
			}
			merged[k] = f
			order = append(order, k)
		}
		f.Time = earliest(f.Time, first)
		count := max(e.Count, 1)
		f.Evidence = append(f.Evidence, fmt.Sprintf("event %s on %s: %s (%s, first %s, last %s)", e.Reason, obj, quote(e.Message, 300), plural(int(count), "time", "times"), ts(first), ts(last)))
		if f.Summary == "" {
			f.Summary = fmt.Sprintf("%s on %s: %s", e.Reason, obj, truncate(e.Message, 160))
		}
		f.setFact("message", e.Message)
		f.setFact("reason", e.Reason)
		var seen int
		fmt.Sscan(f.fact("count"), &seen)
		if f.Facts == nil {
			f.Facts = map[string]string{}
		}
		f.Facts["count"] = strconv.Itoa(seen + int(count))
		if resolved {
			f.Severity = SevInfo
			f.Weight = min(f.Weight, weight)
			f.setFact("resolved", "true")
			if !strings.HasSuffix(f.Summary, "(resolved since)") {
				f.Summary += " (resolved since)"
			}
		}
		if m.eventFacts != nil {
			m.eventFacts(f, e)
		}
		if io.Kind == "Node" {
			f.setFact("node", io.Name)
		}
	}
	out := make([]Finding, 0, len(order))
	for _, k := range order {
		f := merged[k]
		if len(f.Evidence) > 3 {
			f.Evidence = f.Evidence[:3]
		}
		out = append(out, *f)
	}
	return out
}

// successTimes maps each controller ("Kind ns/name") to the last time it
// created a pod (SuccessfulCreate).
func successTimes(events []corev1.Event) map[string]time.Time {
	out := map[string]time.Time{}
	for i := range events {
		e := &events[i]
		if e.Reason != "SuccessfulCreate" {
			continue
		}
		_, last := eventTime(e)
		k := e.InvolvedObject.Kind + " " + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		if last.After(out[k]) {
			out[k] = last
		}
	}
	return out
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

var imageRE = regexp.MustCompile(`image "([^"]+)"`)

func imageFromMessage(msg string) string {
	if m := imageRE.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

func probeKind(msg string) string {
	l := strings.ToLower(msg)
	switch {
	case strings.HasPrefix(l, "readiness"):
		return "readiness"
	case strings.HasPrefix(l, "liveness"), strings.Contains(l, "failed liveness"):
		return "liveness"
	case strings.HasPrefix(l, "startup"):
		return "startup"
	}
	return "readiness"
}

func revisionOf(rs *appsv1.ReplicaSet) int {
	n, _ := strconv.Atoi(rs.Annotations["deployment.kubernetes.io/revision"])
	return n
}

// ownedBy returns the ReplicaSets of a deployment, by revision, oldest first.
func ownedBy(d *appsv1.Deployment, rss []appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for i := range rss {
		rs := &rss[i]
		if rs.Namespace != d.Namespace {
			continue
		}
		owned := false
		for _, o := range rs.OwnerReferences {
			if o.Kind == "Deployment" && o.Name == d.Name {
				owned = true
			}
		}
		if !owned && len(rs.OwnerReferences) == 0 && trimHash(rs.Name) == d.Name {
			owned = true
		}
		if owned {
			out = append(out, rs)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := revisionOf(out[i]), revisionOf(out[j])
		if ri != rj {
			return ri < rj
		}
		return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
	})
	return out
}

// DetectDeployments finds stuck or degraded rollouts: ProgressDeadlineExceeded,
// fewer available replicas than desired, and a new ReplicaSet failing while
// the old one still serves.
func DetectDeployments(deps []appsv1.Deployment, rss []appsv1.ReplicaSet, w Window) []Finding {
	var out []Finding
	for i := range deps {
		d := &deps[i]
		desired := int32(1)
		if d.Spec.Replicas != nil {
			desired = *d.Spec.Replicas
		}
		if desired == 0 {
			continue
		}
		obj := "deployment " + d.Namespace + "/" + d.Name
		f := Finding{Kind: KindRolloutStuck, Subject: d.Name, Object: obj, Namespace: d.Namespace, Source: SrcKubernetes, Severity: SevWarning, Weight: 0.6}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
				f.Weight, f.Severity = 0.85, SevCritical
				f.Time = c.LastTransitionTime.Time
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: Progressing=False, ProgressDeadlineExceeded since %s: %s", obj, ts(c.LastTransitionTime.Time), quote(c.Message, 200)))
			}
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionFalse {
				f.Time = earliest(f.Time, c.LastTransitionTime.Time)
			}
		}
		avail := d.Status.AvailableReplicas
		if avail < desired {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s has %d of %d replicas available (%d updated, %d unavailable)", obj, avail, desired, d.Status.UpdatedReplicas, d.Status.UnavailableReplicas))
			if avail == 0 {
				f.Severity = SevCritical
			}
		}
		owned := ownedBy(d, rss)
		if n := len(owned); n >= 2 {
			nw, old := owned[n-1], owned[n-2]
			if nw.Status.ReadyReplicas < valueOr(nw.Spec.Replicas, 0) && old.Status.ReadyReplicas > 0 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("new ReplicaSet %s (revision %d) has %d of %d pods ready while old ReplicaSet %s (revision %d) still serves %d",
					nw.Name, revisionOf(nw), nw.Status.ReadyReplicas, valueOr(nw.Spec.Replicas, 0), old.Name, revisionOf(old), old.Status.ReadyReplicas))
				f.Time = earliest(f.Time, nw.CreationTimestamp.Time)
				f.setFact("revision", strconv.Itoa(revisionOf(nw)))
				f.setFact("previous_revision", strconv.Itoa(revisionOf(old)))
			}
		}
		if len(f.Evidence) == 0 {
			continue
		}
		f.Summary = fmt.Sprintf("%s degraded: %d of %d replicas available", obj, avail, desired)
		f.setFact("desired", strconv.Itoa(int(desired)))
		f.setFact("available", strconv.Itoa(int(avail)))
		out = append(out, f)
	}
	return out
}

func valueOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// DetectRollouts turns recent ReplicaSet revisions into change findings: a
// new revision created in the window, with what changed in the pod
// template (images, memory and CPU limits, environment).
func DetectRollouts(deps []appsv1.Deployment, rss []appsv1.ReplicaSet, w Window) []Finding {
	var out []Finding
	for i := range deps {
		d := &deps[i]
		owned := ownedBy(d, rss)
		for j := len(owned) - 1; j >= 1; j-- {
			nw, old := owned[j], owned[j-1]
			created := nw.CreationTimestamp.Time
			if created.IsZero() || !w.recent(created) || (!w.End.IsZero() && created.After(w.End)) {
				break
			}
			diffs := templateDiff(&old.Spec.Template.Spec, &nw.Spec.Template.Spec)
			f := Finding{Kind: KindDeploy, Subject: d.Name, Object: "deployment " + d.Namespace + "/" + d.Name, Namespace: d.Namespace,
				Time: created, Severity: SevInfo, Weight: 0.8, Source: SrcKubernetes}
			f.Summary = fmt.Sprintf("deployment %s rolled out revision %d (ReplicaSet %s)", d.Name, revisionOf(nw), nw.Name)
			ev := fmt.Sprintf("ReplicaSet %s (revision %d) created at %s, replacing %s (revision %d)", nw.Name, revisionOf(nw), ts(created), old.Name, revisionOf(old))
			if onlyRestart(old, nw, diffs) {
				// kubectl rollout restart: the same pod template, new pods.
				// It ships no new code; it makes the pods re-read their
				// configuration (ConfigMaps, Secrets, volumes).
				f.Weight = 0.6
				f.setFact("restart", "true")
				f.Summary = fmt.Sprintf("deployment %s restarted (rollout restart, revision %d, ReplicaSet %s; pod template unchanged)", d.Name, revisionOf(nw), nw.Name)
				ev += ": a rollout restart (only the kubectl.kubernetes.io/restartedAt annotation changed), not a new version; the new pods re-read their ConfigMaps, Secrets and volumes"
			}
			if len(diffs) > 0 {
				ev += ": " + strings.Join(diffs, "; ")
				f.Summary += ": " + strings.Join(diffs, "; ")
			}
			f.Evidence = []string{ev}
			f.setFact("revision", strconv.Itoa(revisionOf(nw)))
			f.setFact("previous_revision", strconv.Itoa(revisionOf(old)))
			f.setFact("previous_image", firstImage(&old.Spec.Template.Spec))
			f.setFact("image", firstImage(&nw.Spec.Template.Spec))
			f.setFact("changes", strings.Join(diffs, "; "))
			for _, df := range diffs {
				if strings.Contains(df, "memory limit") {
					f.setFact("memory_limit_change", df)
				}
			}
			out = append(out, f)
		}
	}
	return out
}

func firstImage(s *corev1.PodSpec) string {
	if len(s.Containers) == 0 {
		return ""
	}
	return s.Containers[0].Image
}

// templateDiff lists what changed between two pod templates.
func templateDiff(a, b *corev1.PodSpec) []string {
	var out []string
	for _, cb := range b.Containers {
		var ca *corev1.Container
		for i := range a.Containers {
			if a.Containers[i].Name == cb.Name {
				ca = &a.Containers[i]
			}
		}
		if ca == nil {
			out = append(out, fmt.Sprintf("container %s added", cb.Name))
			continue
		}
		if ca.Image != cb.Image {
			out = append(out, fmt.Sprintf("image %s → %s", ca.Image, cb.Image))
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceCPU} {
			qa, oka := ca.Resources.Limits[res]
			qb, okb := cb.Resources.Limits[res]
			if oka != okb || (oka && qa.Cmp(qb) != 0) {
				out = append(out, fmt.Sprintf("%s %s limit %s → %s", cb.Name, res, qstr(oka, qa.String()), qstr(okb, qb.String())))
			}
		}
		envA := map[string]string{}
		for _, e := range ca.Env {
			envA[e.Name] = e.Value
		}
		for _, e := range cb.Env {
			if v, ok := envA[e.Name]; !ok {
				out = append(out, fmt.Sprintf("env %s added", e.Name))
			} else if v != e.Value {
				out = append(out, fmt.Sprintf("env %s %q → %q", e.Name, v, e.Value))
			}
		}
	}
	return out
}

func qstr(ok bool, s string) string {
	if !ok {
		return "none"
	}
	return s
}

// DetectServices finds services whose selector matches no ready endpoint.
func DetectServices(svcs []ServiceState, pods []corev1.Pod) []Finding {
	var out []Finding
	for _, s := range svcs {
		svc := s.Service
		if len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		ready, notReady := s.ReadyEndpoints, s.NotReadyEndpoints
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		var workloads []string
		for i := range pods {
			p := &pods[i]
			if p.Namespace != svc.Namespace || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if wl := WorkloadOfPod(p); !slices.Contains(workloads, wl) {
				workloads = append(workloads, wl)
			}
			if !s.Known {
				if podReady(p) {
					ready++
				} else {
					notReady++
				}
			}
		}
		if ready > 0 {
			continue
		}
		obj := "service " + svc.Namespace + "/" + svc.Name
		var mm *Finding
		if len(workloads) == 0 {
			if m, ok := selectorMismatch(svc, pods); ok {
				mm = &m
				workloads = append(workloads, m.Related...)
			}
		}
		f := Finding{Kind: KindNoEndpoints, Subject: svc.Name, Object: obj, Namespace: svc.Namespace, Source: SrcKubernetes,
			Severity: SevCritical, Weight: 0.8, Related: workloads}
		f.Summary = fmt.Sprintf("%s has no ready endpoints (%d not ready)", obj, notReady)
		f.Evidence = []string{fmt.Sprintf("%s (selector %s) has 0 ready endpoints and %d not ready", obj, sel.String(), notReady)}
		out = append(out, f)
		if mm != nil {
			out = append(out, *mm)
		}
	}
	return out
}

// podHealthy: Running with every container ready, or Succeeded.
func podHealthy(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if p.Status.Phase != corev1.PodRunning || !podReady(p) {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready || c.State.Waiting != nil {
			return false
		}
	}
	return true
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DetectNodes reads node conditions: NotReady (or Unknown) and memory,
// disk and PID pressure.
func DetectNodes(nodes []corev1.Node, w Window) []Finding {
	var out []Finding
	for i := range nodes {
		n := &nodes[i]
		obj := "node " + n.Name
		for _, c := range n.Status.Conditions {
			var f *Finding
			switch {
			case c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue:
				f = &Finding{Kind: KindNodeNotReady, Severity: SevCritical, Weight: 0.9}
				f.Summary = fmt.Sprintf("%s is NotReady (%s)", obj, orDash(c.Reason))
				f.Evidence = []string{fmt.Sprintf("%s condition Ready=%s since %s, reason %s: %s", obj, c.Status, ts(c.LastTransitionTime.Time), orDash(c.Reason), quote(c.Message, 200))}
			case (c.Type == corev1.NodeMemoryPressure || c.Type == corev1.NodeDiskPressure || c.Type == corev1.NodePIDPressure) && c.Status == corev1.ConditionTrue:
				f = &Finding{Kind: KindNodePressure, Severity: SevCritical, Weight: 0.9}
				res := map[corev1.NodeConditionType]string{corev1.NodeMemoryPressure: "memory", corev1.NodeDiskPressure: "disk", corev1.NodePIDPressure: "pid"}[c.Type]
				f.setFact("resource", res)
				f.Summary = fmt.Sprintf("%s has %s since %s", obj, c.Type, hm(c.LastTransitionTime.Time))
				f.Evidence = []string{fmt.Sprintf("%s condition %s=True since %s, reason %s: %s", obj, c.Type, ts(c.LastTransitionTime.Time), orDash(c.Reason), quote(c.Message, 200))}
				if res == "disk" {
					if q, ok := n.Status.Allocatable[corev1.ResourceEphemeralStorage]; ok {
						f.Evidence = append(f.Evidence, fmt.Sprintf("%s allocatable ephemeral-storage %s", obj, q.String()))
					}
				}
			case c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionTrue:
				f = &Finding{Kind: KindNodeNotReady, Severity: SevCritical, Weight: 0.8}
				f.Summary = fmt.Sprintf("%s network unavailable", obj)
				f.Evidence = []string{fmt.Sprintf("%s condition NetworkUnavailable=True since %s: %s", obj, ts(c.LastTransitionTime.Time), quote(c.Message, 200))}
			}
			if f == nil {
				continue
			}
			f.Subject, f.Object, f.Source = n.Name, obj, SrcKubernetes
			f.Time = c.LastTransitionTime.Time
			f.setFact("node", n.Name)
			if n.Spec.Unschedulable {
				f.Evidence = append(f.Evidence, obj+" is cordoned (unschedulable)")
			}
			out = append(out, *f)
		}
	}
	return out
}

// isClusterDNS reports whether a pod is part of the cluster DNS (CoreDNS or
// kube-dns).
func isClusterDNS(p *corev1.Pod) bool {
	if p.Labels["k8s-app"] == "kube-dns" {
		return true
	}
	wl := strings.ToLower(WorkloadOfPod(p))
	return wl == "coredns" || wl == "kube-dns" || strings.HasPrefix(wl, "coredns-") && p.Namespace == "kube-system"
}

var dnsFatalRE = regexp.MustCompile(`(?i)\[FATAL\]|\[ERROR\]|loop .*detected|plugin/\w+:|panic|error`)

// DetectDNSServer finds a failing cluster DNS: most CoreDNS/kube-dns pods
// not ready or crash-looping, with the last log lines of their crashed
// containers (e.g. "plugin/loop: Loop ... detected").
func DetectDNSServer(pods []corev1.Pod, prevLogs map[string][]evidence.LogLine, w Window) []Finding {
	var dns []*corev1.Pod
	for i := range pods {
		if isClusterDNS(&pods[i]) {
			dns = append(dns, &pods[i])
		}
	}
	if len(dns) == 0 {
		return nil
	}
	bad := 0
	f := Finding{Kind: KindDNSServer, Subject: WorkloadOfPod(dns[0]), Namespace: dns[0].Namespace, Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9}
	f.Object = "deployment " + dns[0].Namespace + "/" + f.Subject
	for _, p := range dns {
		if podHealthy(p) {
			continue
		}
		bad++
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				continue
			}
			ev := fmt.Sprintf("pod %s/%s container %s not ready, restart count %d", p.Namespace, p.Name, cs.Name, cs.RestartCount)
			if wt := cs.State.Waiting; wt != nil {
				ev += ", waiting: " + wt.Reason
				if wt.Reason == "CrashLoopBackOff" {
					f.setFact("crashloop", "true")
				}
			}
			t := containerSince(p, cs)
			if lt := cs.LastTerminationState.Terminated; lt != nil {
				ev += fmt.Sprintf("; last terminated %s, exit code %d (%s) at %s", orDash(lt.Reason), lt.ExitCode, exitMeaning(lt.ExitCode), ts(lt.FinishedAt.Time))
			}
			if w.recent(t) {
				f.Time = earliest(f.Time, t)
			}
			if len(f.Evidence) < 3 {
				f.Evidence = append(f.Evidence, ev)
			}
			lines := prevLogs[p.Namespace+"/"+p.Name+"/"+cs.Name]
			for j := len(lines) - 1; j >= 0; j-- {
				if dnsFatalRE.MatchString(lines[j].Text) {
					if f.fact("last_log") == "" {
						f.Evidence = append(f.Evidence, fmt.Sprintf("last log line of the crashed %s container: %s", cs.Name, quote(lines[j].Text, 240)))
					}
					f.setFact("last_log", lines[j].Text)
					break
				}
			}
		}
	}
	if bad == 0 || bad*2 < len(dns) {
		return nil
	}
	if f.Time.IsZero() {
		f.Time = w.Start
	}
	f.Summary = fmt.Sprintf("cluster DNS %s: %d of %d pods not ready (CrashLoopBackOff)", f.Subject, bad, len(dns))
	if f.fact("crashloop") == "" {
		f.Summary = fmt.Sprintf("cluster DNS %s: %d of %d pods not ready", f.Subject, bad, len(dns))
	}
	f.Related = []string{"kube-dns", "coredns"}
	return []Finding{f}
}

// probeConfig describes a container's liveness probe timing.
func probeConfig(c *corev1.Container) string {
	if c == nil || c.LivenessProbe == nil {
		return ""
	}
	lp := c.LivenessProbe
	return fmt.Sprintf("initialDelaySeconds %d, periodSeconds %d, failureThreshold %d", lp.InitialDelaySeconds, max(lp.PeriodSeconds, 10), max(lp.FailureThreshold, 3))
}

// EnrichFromPods adds what the pod specs say to findings about a
// workload: the liveness probe's timing and whether a startupProbe exists
// for probe kills, the CPU limit for CPU throttling.
func EnrichFromPods(fs []Finding, pods []corev1.Pod) {
	spec := map[string]*corev1.Container{}
	for i := range pods {
		p := &pods[i]
		wl := WorkloadOfPod(p)
		if _, ok := spec[wl]; ok || len(p.Spec.Containers) == 0 {
			continue
		}
		c := &p.Spec.Containers[0]
		for j := range p.Spec.Containers {
			if p.Spec.Containers[j].Name == wl {
				c = &p.Spec.Containers[j]
			}
		}
		spec[wl] = c
	}
	for i := range fs {
		f := &fs[i]
		c := spec[f.Subject]
		if c == nil {
			continue
		}
		switch f.Kind {
		case KindOOMKilled:
			f.setFact("jvm_xmx", xmxOfContainer(c))
		case KindLivenessKill:
			f.setFact("probe_config", probeConfig(c))
			if c.StartupProbe != nil {
				f.setFact("startup_probe", "true")
			}
		case KindCPUThrottling:
			if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
				f.setFact("cpu_limit", q.String())
				if len(f.Evidence) < 3 {
					f.Evidence = append(f.Evidence, fmt.Sprintf("container %s of %s has a cpu limit of %s", c.Name, f.Subject, q.String()))
				}
			}
		}
	}
}

// selectorMismatch explains a Service that selects no pod at all while the
// workload it is meant for runs: the pods that match part of the selector
// (or carry the Service's name) are Running and Ready, and the selector
// pairs their labels lack are named.
func selectorMismatch(svc corev1.Service, pods []corev1.Pod) (Finding, bool) {
	type cand struct {
		matched, ready, total int
		missing               []string
		pod                   *corev1.Pod
	}
	byWl := map[string]*cand{}
	var order []string
	for i := range pods {
		p := &pods[i]
		if p.Namespace != svc.Namespace || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		wl := WorkloadOfPod(p)
		matched := 0
		var missing []string
		for k, v := range svc.Spec.Selector {
			if p.Labels[k] == v {
				matched++
				continue
			}
			if have, ok := p.Labels[k]; ok {
				missing = append(missing, fmt.Sprintf("%s=%s (pods have %s=%s)", k, v, k, have))
			} else {
				missing = append(missing, fmt.Sprintf("%s=%s (pods have no %s label)", k, v, k))
			}
		}
		if matched == 0 && !strings.EqualFold(wl, svc.Name) {
			continue
		}
		c := byWl[wl]
		if c == nil {
			sort.Strings(missing)
			c = &cand{matched: matched, missing: missing, pod: p}
			byWl[wl] = c
			order = append(order, wl)
		}
		c.total++
		if podReady(p) {
			c.ready++
		}
	}
	best := ""
	for _, wl := range order {
		c := byWl[wl]
		if best == "" || c.matched > byWl[best].matched || c.matched == byWl[best].matched && strings.EqualFold(wl, svc.Name) {
			best = wl
		}
	}
	if best == "" {
		return Finding{}, false
	}
	c := byWl[best]
	obj := "service " + svc.Namespace + "/" + svc.Name
	sel := labels.SelectorFromSet(svc.Spec.Selector).String()
	var have []string
	for k, v := range c.pod.Labels {
		if k != "pod-template-hash" {
			have = append(have, k+"="+v)
		}
	}
	sort.Strings(have)
	f := Finding{Kind: KindSelector, Subject: svc.Name, Object: obj, Namespace: svc.Namespace, Source: SrcKubernetes, Severity: SevCritical,
		Weight: 0.75, Related: []string{best}}
	if c.ready > 0 {
		f.Weight = 0.95
	}
	f.Time = c.pod.CreationTimestamp.Time
	mismatch := fmt.Sprintf("Service %s selects %s but the pods of %s (%d of %d Running and Ready) are labelled %s; missing: %s",
		svc.Name, sel, best, c.ready, c.total, strings.Join(have, ","), strings.Join(c.missing, "; "))
	f.Summary = fmt.Sprintf("%s selector %s matches no pods; %s pods lack %s", obj, sel, best, strings.Join(c.missing, "; "))
	f.Evidence = []string{"selector/label mismatch: " + mismatch}
	f.setFact("mismatch", mismatch)
	f.setFact("workload", best)
	return f, true
}

var (
	errDetailRE  = regexp.MustCompile(`(?i)\berr(or)?=|"err(or)?"\s*:|\bcaused by\b|\bexception\b|\b(error|failed|invalid|cannot|can't|unable)\b[^:]*:\s*\S`)
	genericEndRE = regexp.MustCompile(`(?i)\b(exiting|shutting down|exited|terminating|stopping|bye)\b`)
	configPathRE = regexp.MustCompile(`(?:path|file|config)=["']?(/[\w./-]+)|(/[\w./-]+\.(?:ya?ml|json|toml|conf|cfg|ini|properties|xml|hcl))\b`)
)

// causeLine picks, among the last lines of a crashed container, the line
// that carries the cause: a configuration error, then an error line with
// its detail (err="yaml: line 47: …", "invalid …: …"), rather than a
// final generic "exiting" line.
func causeLine(lines []evidence.LogLine) string {
	if len(lines) == 0 {
		return ""
	}
	best, bestScore := len(lines)-1, 0
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-15; i-- {
		t := lines[i].Text
		score := 0
		switch {
		case configInvalidRE.MatchString(t) && errDetailRE.MatchString(t):
			score = 4
		case configInvalidRE.MatchString(t):
			score = 3
		case errDetailRE.MatchString(t) && errorWordRE.MatchString(t) && !genericEndRE.MatchString(t):
			score = 2
		case errorWordRE.MatchString(t):
			score = 1
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return lines[best].Text
}

// configCrash turns a crash whose cause line is a configuration error
// into a config_invalid finding: the application cannot parse its
// configuration (a ConfigMap or config file) and exits.
func configCrash(crash Finding, cobj string, loop bool) (Finding, bool) {
	line := crash.fact("last_log")
	if line == "" || !configInvalidRE.MatchString(line) {
		return Finding{}, false
	}
	f := crash
	f.Facts = nil
	f.Kind, f.Severity, f.Weight = KindConfigInvalid, SevCritical, 0.9
	f.Summary = fmt.Sprintf("%s exits on a configuration error: %s", cobj, truncate(ReadableLine(line), 160))
	f.Evidence = []string{fmt.Sprintf("%s exits (code %s) on a configuration error: %s", cobj, orDash(crash.fact("exit_code")), quote(ReadableLine(line), 240))}
	f.setFact("line", line)
	f.setFact("exit_code", crash.fact("exit_code"))
	f.setFact("container", crash.fact("container"))
	if loop {
		f.setFact("crashloop", "true")
	}
	if m := configPathRE.FindStringSubmatch(line); m != nil {
		f.setFact("config_path", m[1]+m[2])
	}
	return f, true
}

const restartedAtKey = "kubectl.kubernetes.io/restartedAt"

// onlyRestart reports whether a new ReplicaSet's pod template differs from
// the previous one only by the restartedAt annotation (kubectl rollout
// restart): a restart, not a deploy.
func onlyRestart(old, nw *appsv1.ReplicaSet, diffs []string) bool {
	if len(diffs) > 0 {
		return false
	}
	a, b := old.Spec.Template.Annotations, nw.Spec.Template.Annotations
	if b[restartedAtKey] == "" || a[restartedAtKey] == b[restartedAtKey] {
		return false
	}
	for k, v := range b {
		if k != restartedAtKey && a[k] != v {
			return false
		}
	}
	for k, v := range a {
		if k != restartedAtKey && b[k] != v {
			return false
		}
	}
	la, lb := maps.Clone(old.Spec.Template.Labels), maps.Clone(nw.Spec.Template.Labels)
	delete(la, "pod-template-hash")
	delete(lb, "pod-template-hash")
	if !maps.Equal(la, lb) {
		return false
	}
	return equality.Semantic.DeepEqual(old.Spec.Template.Spec, nw.Spec.Template.Spec)
}

func isInitContainer(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

var xmxRE = regexp.MustCompile(`-Xmx(\d+)([kKmMgGtT]?)\b`)

// xmxOf returns the last -Xmx option a text sets ("-Xmx3072m") and its
// size in bytes.
func xmxOf(text string) (string, int64) {
	ms := xmxRE.FindAllStringSubmatch(text, -1)
	if len(ms) == 0 {
		return "", 0
	}
	m := ms[len(ms)-1]
	n, _ := strconv.ParseInt(m[1], 10, 64)
	switch strings.ToLower(m[2]) {
	case "k":
		n <<= 10
	case "m":
		n <<= 20
	case "g":
		n <<= 30
	case "t":
		n <<= 40
	}
	return m[0], n
}

// xmxOfContainer reads the JVM heap size a container sets in its
// arguments or in JAVA_TOOL_OPTIONS / JAVA_OPTS / _JAVA_OPTIONS.
func xmxOfContainer(c *corev1.Container) string {
	text := strings.Join(c.Command, " ") + " " + strings.Join(c.Args, " ")
	for _, e := range c.Env {
		if strings.Contains(strings.ToUpper(e.Name), "JAVA") || strings.Contains(strings.ToUpper(e.Name), "JVM") {
			text += " " + e.Value
		}
	}
	x, _ := xmxOf(text)
	return x
}
