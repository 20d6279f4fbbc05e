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

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// ServiceState is a service with its endpoint readiness.
type ServiceState struct {
	Service           corev1.Service
	ReadyEndpoints    int
	NotReadyEndpoints int
	// Known is false when endpoint counts were not reported.
	Known bool
}

// ConfigSource is the metadata of a Secret or ConfigMap.
type ConfigSource struct {
	Kind string
	Meta metav1.ObjectMeta
}

// K8sEvidence is the Kubernetes state an investigation gathered.
type K8sEvidence struct {
	Pods        []corev1.Pod
	Events      []corev1.Event
	Deployments []appsv1.Deployment
	ReplicaSets []appsv1.ReplicaSet
	Services    []ServiceState
	// CalledServices are the Services of other namespaces that the logs
	// call by their cluster names (for their ports only).
	CalledServices []ServiceState
	// CalledPods are the pods of other namespaces that a Service the
	// failing calls dial by its cluster IP selects (their ports).
	CalledPods []corev1.Pod
	// NodeAgents are the pods of the node agents of the pod network (the
	// CNI DaemonSets) read from kube-system when a pod's sandbox could not
	// get its network: whether the agent runs on the pod's node.
	NodeAgents []corev1.Pod
	// NodeDNS are the pods of the node-local DNS cache (NodeLocal
	// DNSCache's node-local-dns DaemonSet) read from kube-system when
	// callers fail to resolve names: whether it runs on their nodes.
	NodeDNS []corev1.Pod
	Nodes   []corev1.Node
	// Jobs are the namespace's Job objects, whose status says whether a
	// run failed even when its pods and events are gone or older than the
	// window.
	Jobs []batchv1.Job
	// CronJobs are the namespace's CronJob objects.
	CronJobs []batchv1.CronJob
	// ServiceAccounts are the ServiceAccounts read, of every namespace
	// (their image pull secrets).
	ServiceAccounts []corev1.ServiceAccount
	// RoleBindings are the RoleBindings read, of every namespace: what a
	// ServiceAccount the API server refuses is bound to, and where.
	RoleBindings []rbacv1.RoleBinding
	// ClusterRoleBindings are the cluster's ClusterRoleBindings: a
	// ServiceAccount bound cluster-wide, or the one of another namespace a
	// binding still names.
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	// Ingresses are the namespace's Ingress objects.
	Ingresses []networkingv1.Ingress
	// DaemonSets are the namespace's DaemonSet objects.
	DaemonSets []appsv1.DaemonSet
	// StatefulSets are the namespace's StatefulSet objects.
	StatefulSets []appsv1.StatefulSet
	// ConfigSources are the Secrets and ConfigMaps, of every namespace, of
	// the names the pods' config errors say are missing: their metadata
	// only, never their data.
	ConfigSources []ConfigSource
	// ProxyAllowlists are the ConfigMaps, of every namespace, that hold
	// an egress proxy's domain allowlist (proxydenied.go).
	ProxyAllowlists []corev1.ConfigMap
	// Claims are the namespace's PersistentVolumeClaims; Volumes and
	// StorageClasses the cluster's: where a pod's volume is and how its
	// class binds it (a volume provisioned in a zone its pod cannot run in).
	Claims         []corev1.PersistentVolumeClaim
	Volumes        []corev1.PersistentVolume
	StorageClasses []storagev1.StorageClass
	// NetworkPolicies are the namespace's NetworkPolicy objects.
	NetworkPolicies []networkingv1.NetworkPolicy
	// Autoscalers are the HPAs of the workloads whose pods were described.
	Autoscalers []autoscalingv2.HorizontalPodAutoscaler
	// PodDisruptionBudgets are the namespace's budgets (get pdb rows,
	// describe pages, YAML): what a drain may take of a workload.
	PodDisruptionBudgets []policyv1.PodDisruptionBudget
	// Custom are the objects of kinds without a typed reader (custom
	// resources: routes, certificates, GitOps applications, scalers), of
	// every namespace, read generically: their references and status
	// conditions.
	Custom []evidence.GenericObject
	// OtherBudgets are the PodDisruptionBudgets of the other namespaces
	// (what a node's drain may also be held by).
	OtherBudgets []policyv1.PodDisruptionBudget
	// Usage are the pods' memory and CPU readings handed over (kubectl top
	// pod), of every namespace, with the node each pod runs on when known.
	Usage []PodUsage
	// ContainerUsage are the containers' readings (kubectl top pod
	// --containers), with their pod's node when known; NodeUsage the
	// nodes' (kubectl top node).
	ContainerUsage []PodUsage
	NodeUsage      []evidence.Usage
	// PreviousLogs holds the last lines of crashed containers, keyed
	// "namespace/pod/container".
	PreviousLogs map[string][]evidence.LogLine
	// CurrentLogs marks the PreviousLogs entries read from the current
	// container because no previous instance's log existed.
	CurrentLogs map[string]bool
}

// PodUsage is a pod's usage reading (kubectl top pod) and its node ("" when
// not known).
type PodUsage struct {
	evidence.Usage
	Node string
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
	if m := findSubmatch(hashSuffix, name); m != nil {
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

// DetectKubernetes judges the cluster's state: every pod and container,
// every event, the mechanisms' own judgements of other objects
// (deployments, services), every node condition. Rollouts, which are
// changes, come from DetectRollouts.
func DetectKubernetes(ev K8sEvidence, w Window) []Finding {
	var out []Finding
	out = append(out, DetectPods(ev.Pods, ev.PreviousLogs, w)...)
	out = append(out, DetectEvents(ev.Events, ev.Pods, w)...)
	for _, m := range mechanisms {
		if m.objects != nil {
			out = append(out, m.objects(&ev, w)...)
		}
	}
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
	markSparedReplicas(out, pods, w)
	return out
}

// podFindings inspects one pod: the mechanisms' judgements of the pod
// as a whole, then of each of its containers.
func podFindings(p *corev1.Pod, prevLogs map[string][]evidence.LogLine, w Window) []Finding {
	var out []Finding
	base := Finding{Subject: WorkloadOfPod(p), Object: "pod " + p.Namespace + "/" + p.Name, Namespace: p.Namespace, Source: SrcKubernetes}
	if p.Spec.NodeName != "" {
		base.Related = []string{p.Spec.NodeName}
	}
	for _, m := range mechanisms {
		if m.pod == nil {
			continue
		}
		fs, whole := m.pod(p, base)
		if whole {
			return fs
		}
		out = append(out, fs...)
	}
	statuses := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		c := newContainerState(p, cs, base, prevLogs, w)
		for _, m := range mechanisms {
			if m.container != nil {
				out = append(out, m.container(c)...)
			}
		}
	}
	return out
}

// containerState is one container of a pod as the mechanisms judge it.
type containerState struct {
	Pod    *corev1.Pod
	Status corev1.ContainerStatus
	Spec   *corev1.Container // nil when the pod's spec does not list it
	Object string            // "pod ns/name container c"
	Base   Finding           // the pod's subject, object, namespace and node
	// Term is the latest termination (the current one or the last),
	// Current the current one; Waiting the waiting state. Any may be nil.
	Term, Current *corev1.ContainerStateTerminated
	Waiting       *corev1.ContainerStateWaiting
	LastLines     []evidence.LogLine // the previous container's last log lines
	Window        Window
}

func newContainerState(p *corev1.Pod, cs corev1.ContainerStatus, base Finding, prevLogs map[string][]evidence.LogLine, w Window) *containerState {
	c := &containerState{Pod: p, Status: cs, Spec: containerSpec(p, cs.Name), Base: base, Window: w,
		Object: base.Object + containerWord(cs.Name), Current: cs.State.Terminated, Waiting: cs.State.Waiting,
		LastLines: prevLogs[p.Namespace+"/"+p.Name+"/"+cs.Name]}
	c.Term = cs.LastTerminationState.Terminated
	if c.Current != nil && (c.Term == nil || c.Current.FinishedAt.After(c.Term.FinishedAt.Time)) {
		c.Term = c.Current
	}
	return c
}

// image is the container's image: its spec's, else its status's.
func (c *containerState) image() string {
	if c.Spec != nil {
		return c.Spec.Image
	}
	return c.Status.Image
}

// waitingFor reports whether the container waits for one of reasons.
func (c *containerState) waitingFor(reasons ...string) bool {
	return c.Waiting != nil && slices.Contains(reasons, c.Waiting.Reason)
}

// crashCauses asks the mechanisms that read a crash's termination and
// last lines (a configuration error, a command that cannot start) for the
// cause behind a crash finding.
func crashCauses(crash Finding, c *containerState) []Finding {
	var out []Finding
	for _, m := range crashReaders {
		if f, ok := m.fromCrash(crash, c); ok {
			out = append(out, f)
		}
	}
	return out
}

// validStart reports whether a termination's startedAt is real: the
// kubelet reports 1970-01-01 for a container that never started.
func validStart(p *corev1.Pod, t time.Time) bool {
	return !t.IsZero() && t.Year() > 1971 && !t.Before(p.CreationTimestamp.Time.Add(-time.Minute))
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
	latest := map[key]time.Time{}      // last time of the event that set a finding's facts
	latestFirst := map[key]time.Time{} // and its first time
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
		case "Job":
			// A CronJob's run is its CronJob's, as its pods are.
			if cj := cronJobOf(io.Name); cj != "" {
				t.Subject = cj
			}
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
		// A node that reported NodeReady after NodeNotReady is past it.
		if ok := succeeded["NodeReady "+io.Name]; e.Reason == "NodeNotReady" && io.Kind == "Node" && ok.After(last) {
			resolved = true
			weight *= 0.3
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
		// An event that went on after another of the same reason stopped
		// (a Secret not found, then a key not found in it) is the object's
		// state now; the earlier one is superseded history, quoted after
		// it, and its facts give way. Events seen together, a back-off
		// repeating the failure, or another reason (a pull secret not
		// retrieved, then the pull failing) are one state: the first keeps
		// its facts and the others add what it lacks.
		sameState := e.Reason == f.fact("reason") && !matchLine(backOffRE, e.Message)
		// An event that began only after the other stopped and then
		// repeated replaced it, however close they are.
		current := f.fact("message") == "" || sameState && (last.Sub(latest[k]) > supersededAfter || first.After(latest[k]) && last.After(first))
		superseded := !current && sameState && (latest[k].Sub(last) > supersededAfter || latestFirst[k].After(last) && latest[k].After(latestFirst[k]))
		if current {
			latest[k], latestFirst[k] = last, first
		}
		line := fmt.Sprintf("event %s on %s: %s (%s, first %s, last %s)", e.Reason, obj, quote(e.Message, 300), plural(int(count), "time", "times"), ts(first), ts(last))
		if current {
			f.Evidence = append([]string{line}, f.Evidence...)
			f.Summary = fmt.Sprintf("%s on %s: %s", e.Reason, obj, truncate(e.Message, 160))
		} else {
			f.Evidence = append(f.Evidence, line)
		}
		if current {
			// What an earlier event said gives way to this one's facts.
			g := Finding{}
			g.setFact("message", e.Message)
			g.setFact("reason", e.Reason)
			if m.eventFacts != nil {
				m.eventFacts(&g, e)
			}
			if f.Facts == nil {
				f.Facts = map[string]string{}
			}
			maps.Copy(f.Facts, g.Facts)
		} else if !superseded && m.eventFacts != nil {
			m.eventFacts(f, e)
		}
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
		}
		if f.fact("resolved") != "" && !strings.HasSuffix(f.Summary, "(resolved since)") {
			f.Summary += " (resolved since)"
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

// supersededAfter: an event last seen this long before another of its
// kind on the same object is past (see DetectEvents).
const supersededAfter = 5 * time.Minute

// backOffRE: a message that only says the kubelet backs off retrying.
var backOffRE = regexp.MustCompile(`(?i)back-?off`)

// successTimes maps each controller ("Kind ns/name") to the last time it
// created a pod (SuccessfulCreate).
func successTimes(events []corev1.Event) map[string]time.Time {
	out := map[string]time.Time{}
	for i := range events {
		e := &events[i]
		_, last := eventTime(e)
		k := e.InvolvedObject.Kind + " " + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		switch {
		case e.Reason == "NodeReady" && e.InvolvedObject.Kind == "Node":
			k = "NodeReady " + e.InvolvedObject.Name
		case e.Reason != "SuccessfulCreate":
			continue
		}
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

// podStateUnknown reports whether nothing of a pod's state was handed
// over: a pod a transcript names only in kubectl logs or exec lines has a
// name and no phase, conditions or container statuses. Its readiness is
// unknown, not false.
func podStateUnknown(p *corev1.Pod) bool {
	return p.Status.Phase == "" && len(p.Status.Conditions) == 0 && len(p.Status.ContainerStatuses) == 0 && len(p.Status.InitContainerStatuses) == 0
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	// No Ready condition (a kubectl get pods row: "1/1 Running"): ready
	// when it runs and every container is ready.
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready {
			return false
		}
	}
	return true
}

// DetectNodes asks the mechanisms what each node condition shows (NotReady
// or Unknown, memory, disk and PID pressure).
func DetectNodes(nodes []corev1.Node, w Window) []Finding {
	var out []Finding
	for i := range nodes {
		n := &nodes[i]
		obj := "node " + n.Name
		for _, c := range n.Status.Conditions {
			for _, m := range mechanisms {
				if m.nodeCondition == nil {
					continue
				}
				f := m.nodeCondition(n, c)
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
	}
	return out
}

// EnrichFromPods lets each finding's mechanism add what the spec of its
// workload's main container says (the liveness probe's timing, the CPU
// limit, the JVM heap size).
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
		if m := mechanismOf(f.Kind); m != nil && m.enrich != nil {
			m.enrich(f, c)
		}
	}
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

// isInitContainer reports whether a pod's container is one of its init
// containers, by its spec or, when the spec is not known (a kubectl get
// pods row "Init:CrashLoopBackOff"), by its status.
func isInitContainer(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range p.Status.InitContainerStatuses {
		if c.Name == name && containerSpec(p, name) == nil {
			return true
		}
	}
	return false
}

// componentNames maps each workload whose name is its Helm release's
// prefix before the component it runs ("kube-prometheus-stack-" before
// "kube-state-metrics", by its app.kubernetes.io/name label) to that
// component's name. A workload whose name does not end in its component's
// is left out: its label says nothing of a prefix.
func componentNames(pods []corev1.Pod, deps []appsv1.Deployment) map[string]string {
	out := map[string]string{}
	add := func(wl, name string) {
		if name != "" && wl != name && strings.HasSuffix(wl, "-"+name) {
			out[wl] = name
		}
	}
	for i := range pods {
		add(WorkloadOfPod(&pods[i]), pods[i].Labels["app.kubernetes.io/name"])
	}
	for i := range deps {
		add(deps[i].Name, deps[i].Labels["app.kubernetes.io/name"])
	}
	return out
}

// releaseNames maps each workload whose name starts with its Helm
// release's (app.kubernetes.io/instance "superset", workload
// "superset-postgresql") to that release.
func releaseNames(pods []corev1.Pod, deps []appsv1.Deployment) map[string]string {
	out := map[string]string{}
	add := func(wl, rel string) {
		if rel != "" && wl != rel && strings.HasPrefix(wl, rel+"-") {
			out[wl] = rel
		}
	}
	for i := range pods {
		add(WorkloadOfPod(&pods[i]), pods[i].Labels["app.kubernetes.io/instance"])
	}
	for i := range deps {
		add(deps[i].Name, deps[i].Labels["app.kubernetes.io/instance"])
	}
	return out
}
