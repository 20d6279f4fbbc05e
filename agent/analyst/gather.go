package analyst

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
)

// Evidence domains a specialist can gather.
const (
	domKubernetes = "kubernetes state"
	domPodLogs    = "pod logs"
	domMetrics    = "metrics"
	domLogs       = "host logs"
	domChanges    = "changes"
	domCloudWatch = "cloudwatch"
)

// gatherer collects evidence across specialists, calling each tool once.
type gatherer struct {
	opts Options
	sc   Scope
	src  *evidence.Sources

	k8s        K8sEvidence
	haveK8s    map[string]bool // tool name → gathered
	logSets    []LogSet
	metricSets []MetricSet
	changes    []evidence.Change
	earlier    []evidence.Change // changes of the month before the window
	// hostCommands are the cluster-changing commands host logs record
	// (hostcommands.go).
	hostCommands []evidence.LogLine
	commands     []evidence.CommandOutput
	// streamed are log streams kept line by line for the mechanisms that
	// read them entry by entry (a managed server's slow log).
	streamed []evidence.CommandOutput
	// jobDeletes are the audit log's deletes of Jobs (jobdeleted.go).
	jobDeletes []jobDelete
	// wafBlocks are the requests a firewall's log records blocked
	// (wafblocked.go).
	wafBlocks []evidence.LogLine
	// rejectedReloads are the lines of pod logs, before the window, in
	// which a server rejected a new configuration (rejectedconfig.go).
	rejectedReloads []evidence.LogLine
	done            map[string]bool // domain → gathered

	calls       int   // successful calls
	unavailable error // the first unavailable error
	gaps        []string
	metricNames int
	logSources  int
}

func newGatherer(opts Options, sc Scope, src *evidence.Sources) *gatherer {
	return &gatherer{opts: opts, sc: sc, src: src, haveK8s: map[string]bool{}, done: map[string]bool{},
		k8s: K8sEvidence{PreviousLogs: map[string][]evidence.LogLine{}, CurrentLogs: map[string]bool{}}}
}

// domainsOf lists the domains a specialist's toolkit can gather that are
// configured and not gathered yet.
func (g *gatherer) domainsOf(sp specialist) []string {
	var out []string
	want := func(d, integration string, tools ...string) {
		if g.done[d] || !configured(g.src, integration) {
			return
		}
		for _, t := range tools {
			if sp.run.Has(t) {
				out = append(out, d)
				return
			}
		}
	}
	want(domKubernetes, "kubernetes", "list_pods", "get_events", "list_deployments", "list_services", "list_nodes", "get_rollout_history")
	want(domPodLogs, "kubernetes", "get_pod_logs")
	want(domChanges, "changes", "list_changes")
	want(domMetrics, "prometheus", "list_metrics")
	want(domLogs, "logs", "get_log_signatures")
	want(domCloudWatch, "cloudwatch", "get_cloudwatch_logs", "get_cloudwatch_metrics")
	return out
}

func (g *gatherer) gather(ctx context.Context, sp specialist, d string) error {
	var err error
	switch d {
	case domKubernetes:
		err = g.gatherKubernetes(ctx, sp)
	case domPodLogs:
		if !g.haveK8s["list_pods"] {
			return nil // pods come first; a later specialist may list them (not done)
		}
		err = g.gatherPodLogs(ctx, sp)
	case domChanges:
		err = g.gatherChanges(ctx, sp)
	case domMetrics:
		err = g.gatherMetrics(ctx, sp)
	case domLogs:
		err = g.gatherHostLogs(ctx, sp)
	case domCloudWatch:
		err = g.gatherCloudWatch(ctx, sp)
	}
	// Kubernetes state is complete only once pods were listed (or this
	// specialist could try): a specialist that only reads events and
	// deployments leaves the pods to the next one.
	// CloudWatch is gathered once both its logs and its metrics were
	// read: a specialist with only the metric tools leaves the logs (a
	// CloudTrail trail, a Lambda's log group) to the next one.
	if err == nil && (d != domKubernetes || g.haveK8s["list_pods"] || sp.run.Has("list_pods")) && (d != domCloudWatch || g.done[cwLogs] && g.done[cwMetrics]) {
		g.done[d] = true
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// call runs a tool and records the outcome; ok is false when the call
// failed (the failure becomes a data gap).
func (g *gatherer) call(ctx context.Context, sp specialist, name string, args any) (any, bool) {
	if !sp.run.Has(name) {
		return nil, false
	}
	out, err := sp.run.Call(ctx, name, args)
	if err != nil {
		if ctx.Err() == nil {
			g.gap(name, err)
		}
		return nil, false
	}
	g.calls++
	return out, true
}

func (g *gatherer) gap(tool string, err error) {
	code := evidence.CodeOf(err)
	if code == evidence.CodeUnavailable && g.unavailable == nil {
		g.unavailable = err
	}
	msg := fmt.Sprintf("%s failed: %v", tool, err)
	if code == evidence.CodeNotConfigured {
		msg = fmt.Sprintf("%s: %v", tool, err)
	}
	if !slices.Contains(g.gaps, msg) && len(g.gaps) < 30 {
		g.gaps = append(g.gaps, msg)
	}
}

// as converts a tool result to T: directly, through a pointer, or by a
// JSON round trip (for results of equivalent shape).
func as[T any](out any) (T, bool) {
	if v, ok := out.(T); ok {
		return v, true
	}
	if p, ok := out.(*T); ok && p != nil {
		return *p, true
	}
	var v T
	if out == nil {
		return v, false
	}
	b, err := json.Marshal(out)
	if err != nil {
		return v, false
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, false
	}
	return v, true
}

func (g *gatherer) window() (since, until string) {
	return g.sc.Window.BaselineStart.Format(time.RFC3339), g.sc.Window.End.Format(time.RFC3339)
}

// podLogStep is the first step of plan that both lists pods and reads
// their logs, with the pods it lists in every namespace; false when no
// step does both or its listing failed.
func (g *gatherer) podLogStep(ctx context.Context, plan []specialist) (specialist, []corev1.Pod, bool) {
	for _, sp := range plan {
		if !sp.run.Has("list_pods") || !sp.run.Has("get_pod_logs") {
			continue
		}
		out, ok := g.call(ctx, sp, "list_pods", map[string]any{})
		if !ok {
			return specialist{}, nil, false
		}
		pods, _ := as[[]corev1.Pod](out)
		return sp, pods, true
	}
	return specialist{}, nil, false
}

func (g *gatherer) gatherKubernetes(ctx context.Context, sp specialist) error {
	ns := g.sc.Namespace
	since, _ := g.window()
	if !g.haveK8s["list_pods"] {
		if out, ok := g.call(ctx, sp, "list_pods", map[string]any{"namespace": ns}); ok {
			g.k8s.Pods, _ = as[[]corev1.Pod](out)
			g.haveK8s["list_pods"] = true
		}
	}
	if !g.haveK8s["jobs"] && g.src != nil && g.src.Kubernetes != nil {
		// Job objects carry their own outcome (condition Failed or
		// Complete) however long ago they ran; no toolkit of the planner's
		// specialists lists them, so they are read from the source.
		g.haveK8s["jobs"] = true
		if jobs, err := evidence.List[batchv1.Job](ctx, g.src.Kubernetes, ns, ""); err == nil {
			g.k8s.Jobs = jobs
		}
		// So do CronJobs: suspended, or what they last scheduled.
		if crons, err := evidence.List[batchv1.CronJob](ctx, g.src.Kubernetes, ns, ""); err == nil {
			g.k8s.CronJobs = crons
		}
		// And ServiceAccounts, of every namespace: the image pull
		// secrets a namespace's pods present, and those of another
		// namespace where the same image pulls.
		if sas, err := evidence.List[corev1.ServiceAccount](ctx, g.src.Kubernetes, "", ""); err == nil {
			g.k8s.ServiceAccounts = sas
		}
		// And RoleBindings, of every namespace: where a ServiceAccount
		// the API server refuses is bound, and where it is not.
		if rbs, err := evidence.List[rbacv1.RoleBinding](ctx, g.src.Kubernetes, "", ""); err == nil {
			g.k8s.RoleBindings = rbs
		}
		if crbs, err := evidence.List[rbacv1.ClusterRoleBinding](ctx, g.src.Kubernetes, "", ""); err == nil {
			g.k8s.ClusterRoleBindings = crbs
		}
		// And Ingresses, whose backends name the Services' ports.
		if ings, err := evidence.List[networkingv1.Ingress](ctx, g.src.Kubernetes, ns, ""); err == nil {
			g.k8s.Ingresses = ings
		}
		// And DaemonSets, whose tolerations decide the nodes they cover.
		if dss, err := evidence.List[appsv1.DaemonSet](ctx, g.src.Kubernetes, ns, ""); err == nil {
			g.k8s.DaemonSets = dss
		}
		// And NetworkPolicies, which decide who may reach the pods (a
		// scrape, a caller).
		if nps, err := evidence.List[networkingv1.NetworkPolicy](ctx, g.src.Kubernetes, ns, ""); err == nil {
			g.k8s.NetworkPolicies = nps
		}
		// And the claims, volumes and storage classes: the zone a pod's
		// volume is in, and whether its class bound it before the pod was
		// scheduled.
		if pvcs, err := evidence.List[corev1.PersistentVolumeClaim](ctx, g.src.Kubernetes, ns, ""); err == nil {
			g.k8s.Claims = pvcs
		}
		if pvs, err := evidence.List[corev1.PersistentVolume](ctx, g.src.Kubernetes, "", ""); err == nil {
			g.k8s.Volumes = pvs
		}
		if scs, err := evidence.List[storagev1.StorageClass](ctx, g.src.Kubernetes, "", ""); err == nil {
			g.k8s.StorageClasses = scs
		}
		// And StatefulSets, whose pod management orders their members.
		if sss, err := evidence.List[appsv1.StatefulSet](ctx, g.src.Kubernetes, ns, ""); err == nil {
			g.k8s.StatefulSets = sss
		}
		// And PodDisruptionBudgets, which say what a drain may take: of
		// every namespace, as a node's drain crosses them (the budget
		// that holds a node group's upgrade is often another team's).
		if pdbs, err := evidence.List[policyv1.PodDisruptionBudget](ctx, g.src.Kubernetes, ns, ""); err == nil {
			g.k8s.PodDisruptionBudgets = pdbs
		}
		if ns != "" {
			if all, err := evidence.List[policyv1.PodDisruptionBudget](ctx, g.src.Kubernetes, "", ""); err == nil {
				for _, b := range all {
					if b.Namespace != ns {
						g.k8s.OtherBudgets = append(g.k8s.OtherBudgets, b)
					}
				}
			}
		}
	}
	if !g.haveK8s["commands"] && g.src != nil && g.src.Kubernetes != nil {
		// Commands handed over with the cluster's state whose output is
		// not read into objects (a drain, an exec): every namespace's, as a
		// drain or a node's trouble crosses them.
		g.haveK8s["commands"] = true
		if r, ok := g.src.Kubernetes.(evidence.CommandOutputReader); ok {
			if outs, err := r.CommandOutputs(ctx, ""); err == nil {
				g.commands = outs
			}
		}
		g.gatherUsage(ctx)
		if r, ok := g.src.Kubernetes.(evidence.GenericObjectReader); ok {
			if objs, err := r.GenericObjects(ctx, ""); err == nil {
				g.k8s.Custom = objs
			}
		}
	}
	if !g.haveK8s["get_events"] {
		if out, ok := g.call(ctx, sp, "get_events", map[string]any{"namespace": ns, "since": since}); ok {
			g.k8s.Events, _ = as[[]corev1.Event](out)
			g.haveK8s["get_events"] = true
		}
		// Node events live outside the namespace.
		if ns != "" && g.haveK8s["get_events"] {
			if out, ok := g.call(ctx, sp, "get_events", map[string]any{"kind": "Node", "since": since}); ok {
				evs, _ := as[[]corev1.Event](out)
				g.k8s.Events = append(g.k8s.Events, evs...)
			}
		}
	}
	if !g.haveK8s["list_deployments"] {
		if out, ok := g.call(ctx, sp, "list_deployments", map[string]any{"namespace": ns}); ok {
			g.k8s.Deployments, _ = as[[]appsv1.Deployment](out)
			g.haveK8s["list_deployments"] = true
		}
	}
	if !g.haveK8s["get_rollout_history"] && g.haveK8s["list_deployments"] && sp.run.Has("get_rollout_history") {
		g.haveK8s["get_rollout_history"] = true
		for _, d := range g.historyTargets() {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if out, ok := g.call(ctx, sp, "get_rollout_history", map[string]any{"namespace": d.Namespace, "deployment": d.Name}); ok {
				rss, _ := as[[]appsv1.ReplicaSet](out)
				g.k8s.ReplicaSets = append(g.k8s.ReplicaSets, rss...)
			}
		}
	}
	if !g.haveK8s["list_services"] {
		if out, ok := g.call(ctx, sp, "list_services", map[string]any{"namespace": ns}); ok {
			g.k8s.Services = serviceStates(out)
			g.haveK8s["list_services"] = true
		}
	}
	if !g.haveK8s["list_nodes"] {
		if out, ok := g.call(ctx, sp, "list_nodes", map[string]any{}); ok {
			g.k8s.Nodes, _ = as[[]corev1.Node](out)
			g.haveK8s["list_nodes"] = true
		}
	}
	if !g.haveK8s["describe_pod"] && g.haveK8s["list_pods"] && sp.run.Has("describe_pod") {
		g.haveK8s["describe_pod"] = true
		g.gatherAutoscalers(ctx, sp)
	}
	if !g.haveK8s["config_sources"] && g.src != nil && g.src.Kubernetes != nil {
		// The Secrets and ConfigMaps of the names pods miss, of every
		// namespace and as metadata only: where the object lives instead
		// and what copies it (a mirroring controller's annotations).
		if names := missingConfigNames(&g.k8s); len(names) > 0 {
			g.haveK8s["config_sources"] = true
			if secs, err := evidence.List[corev1.Secret](ctx, g.src.Kubernetes, "", ""); err == nil {
				for _, s := range secs {
					if names[s.Name] {
						g.k8s.ConfigSources = append(g.k8s.ConfigSources, ConfigSource{Kind: "Secret", Meta: s.ObjectMeta})
					}
				}
			}
			if cms, err := evidence.List[corev1.ConfigMap](ctx, g.src.Kubernetes, "", ""); err == nil {
				for _, c := range cms {
					if names[c.Name] {
						g.k8s.ConfigSources = append(g.k8s.ConfigSources, ConfigSource{Kind: "ConfigMap", Meta: c.ObjectMeta})
					}
				}
			}
		}
	}
	if !g.haveK8s["proxy_allowlists"] && g.src != nil && g.src.Kubernetes != nil {
		// The domain allowlists of egress proxies (a squid's dstdomain
		// ACL file in a ConfigMap), of every namespace: what the proxy
		// lets the workloads reach (proxydenied.go).
		g.haveK8s["proxy_allowlists"] = true
		if cms, err := evidence.List[corev1.ConfigMap](ctx, g.src.Kubernetes, "", ""); err == nil {
			for _, c := range cms {
				if isProxyAllowlist(&c) {
					g.k8s.ProxyAllowlists = append(g.k8s.ProxyAllowlists, c)
				}
			}
		}
	}
	if !g.haveK8s["list_pods"] && !g.haveK8s["get_events"] {
		return errors.New("no kubernetes state")
	}
	return nil
}

// gatherUsage reads the pod usage readings handed over (kubectl top pod),
// of every namespace, and the node of each pod from the pods the source
// knows: what uses a node's memory or CPU when the node is under pressure
// or saturated; and the nodes' readings (kubectl top node).
func (g *gatherer) gatherUsage(ctx context.Context) {
	r, ok := g.src.Kubernetes.(evidence.UsageReader)
	if !ok {
		return
	}
	if ns, err := r.Usage(ctx, "Node", ""); err == nil {
		g.k8s.NodeUsage = ns
	}
	us, err := r.Usage(ctx, "Pod", "")
	if err != nil || len(us) == 0 {
		return
	}
	node := map[string]string{}
	if pods, err := evidence.List[corev1.Pod](ctx, g.src.Kubernetes, "", ""); err == nil {
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				node[p.Namespace+"/"+p.Name] = p.Spec.NodeName
			}
		}
	}
	for _, u := range us {
		if u.Container != "" {
			g.k8s.ContainerUsage = append(g.k8s.ContainerUsage, PodUsage{Usage: u, Node: node[u.Namespace+"/"+u.Name]})
			continue
		}
		g.k8s.Usage = append(g.k8s.Usage, PodUsage{Usage: u, Node: node[u.Namespace+"/"+u.Name]})
	}
}

// maxDescribedWorkloads bounds the describe_pod calls of one investigation.
const maxDescribedWorkloads = 8

// gatherAutoscalers describes one pod of each owning workload (the
// subject's first) and keeps the autoscalers related to them.
func (g *gatherer) gatherAutoscalers(ctx context.Context, sp specialist) {
	var picks []*corev1.Pod
	seen := map[string]bool{}
	for pass := 0; pass < 2; pass++ {
		for i := range g.k8s.Pods {
			p := &g.k8s.Pods[i]
			wl := WorkloadOfPod(p)
			if wl == "" || wl == p.Name || (pass == 0) != (g.sc.Service != "" && wl == g.sc.Service) {
				continue
			}
			key := p.Namespace + "/" + wl
			if seen[key] || len(picks) >= maxDescribedWorkloads {
				continue
			}
			seen[key] = true
			picks = append(picks, p)
		}
	}
	have := map[string]bool{}
	for _, p := range picks {
		if ctx.Err() != nil {
			return
		}
		out, ok := g.call(ctx, sp, "describe_pod", map[string]any{"namespace": p.Namespace, "name": p.Name})
		if !ok {
			continue
		}
		for _, h := range autoscalersOf(out) {
			if k := h.Namespace + "/" + h.Name; !have[k] {
				have[k] = true
				g.k8s.Autoscalers = append(g.k8s.Autoscalers, h)
			}
		}
	}
}

// historyTargets picks deployments whose rollout history matters: the
// service under investigation, degraded ones, and recently updated ones.
func (g *gatherer) historyTargets() []appsv1.Deployment {
	var out []appsv1.Deployment
	add := func(d appsv1.Deployment) {
		if len(out) < g.opts.MaxDeploymentsHistory && !slices.ContainsFunc(out, func(x appsv1.Deployment) bool {
			return x.Name == d.Name && x.Namespace == d.Namespace
		}) {
			out = append(out, d)
		}
	}
	for _, d := range g.k8s.Deployments {
		if strings.EqualFold(d.Name, g.sc.Service) {
			add(d)
		}
	}
	for _, d := range g.k8s.Deployments {
		if d.Status.AvailableReplicas < valueOr(d.Spec.Replicas, 1) || d.Status.UpdatedReplicas < valueOr(d.Spec.Replicas, 1) {
			add(d)
		}
	}
	for _, d := range g.k8s.Deployments {
		for _, c := range d.Status.Conditions {
			if !c.LastUpdateTime.IsZero() && !c.LastUpdateTime.Time.Before(g.sc.Window.BaselineStart) {
				add(d)
			}
		}
	}
	for _, d := range g.k8s.Deployments {
		add(d)
	}
	return out
}

// serviceStates reads list_services results: ServiceStatus values with the
// Service and its ready/not-ready endpoint counts (or address lists), or
// plain Services.
func serviceStates(out any) []ServiceState {
	var raw []map[string]json.RawMessage
	b, err := json.Marshal(out)
	if err != nil || json.Unmarshal(b, &raw) != nil {
		return nil
	}
	var res []ServiceState
	for _, m := range raw {
		get := func(names ...string) (json.RawMessage, bool) {
			for k, v := range m {
				kk := strings.ToLower(strings.ReplaceAll(k, "_", ""))
				for _, n := range names {
					if kk == n {
						return v, true
					}
				}
			}
			return nil, false
		}
		var st ServiceState
		if v, ok := get("service"); ok {
			_ = json.Unmarshal(v, &st.Service)
			r, okR := get("readyendpoints", "ready")
			n, okN := get("notreadyendpoints", "notready")
			st.Known = okR
			if okR {
				st.ReadyEndpoints = countOf(r)
			}
			if okN {
				st.NotReadyEndpoints = countOf(n)
			}
		} else {
			b, _ := json.Marshal(m)
			_ = json.Unmarshal(b, &st.Service)
		}
		res = append(res, st)
	}
	return res
}

func countOf(v json.RawMessage) int {
	var n int
	if json.Unmarshal(v, &n) == nil {
		return n
	}
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil {
		return len(list)
	}
	return 0
}

// podPriority orders pods for log reading: troubled pods first, then the
// service under investigation, then one pod of every other workload.
func (g *gatherer) podsForLogs() []*corev1.Pod {
	type cand struct {
		p     *corev1.Pod
		score int
	}
	var cs []cand
	seenWorkload := map[string]bool{}
	// Pods someone ran commands in (kubectl exec in a transcript) are
	// where they looked.
	execIn := map[string]bool{}
	for _, c := range g.commands {
		if c.Exec && c.Pod != "" {
			execIn[c.Namespace+"/"+c.Pod] = true
		}
	}
	for k := range g.shownLogPods() {
		execIn[k] = true
	}
	for i := range g.k8s.Pods {
		p := &g.k8s.Pods[i]
		if p.Status.Phase == corev1.PodPending && p.Status.StartTime == nil && len(p.Status.InitContainerStatuses) == 0 {
			continue // never started: no logs (an init container that ran has)
		}
		wl := WorkloadOfPod(p)
		s := 0
		if execIn[p.Namespace+"/"+p.Name] || execIn["/"+p.Name] {
			s += 3
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount > 0 {
				s += 3
			}
			if c.State.Waiting != nil || c.State.Terminated != nil {
				s += 3
			}
			if !c.Ready {
				s++
			}
		}
		if g.sc.Service != "" && strings.EqualFold(wl, g.sc.Service) {
			s += 4
		}
		if !seenWorkload[wl] {
			s += 2
			seenWorkload[wl] = true
		} else if s == 0 && !statefulMember(p) {
			continue
		}
		cs = append(cs, cand{p, s})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].score > cs[j].score })
	var out []*corev1.Pod
	for _, c := range cs {
		if len(out) >= g.opts.MaxPodLogs {
			break
		}
		out = append(out, c.p)
	}
	return out
}

// statefulMember reports whether a pod is a member of a StatefulSet (its
// owner, or an ordinal name when the owner is unknown): members are not
// interchangeable (a primary and its replica, brokers with their own
// partitions), so each one's log is read, not one per workload.
func statefulMember(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		return o.Kind == "StatefulSet"
	}
	return matchLine(podOrdinalRE, p.Name) && workloadOfName(p.Name) != p.Name
}

func (g *gatherer) gatherPodLogs(ctx context.Context, sp specialist) error {
	since, until := g.window()
	w := g.sc.Window
	miners := map[string]*analysis.Miner{}
	meta := map[string]LogSet{}
	running := map[string]bool{} // a pod of the workload has not completed
	var order []string
	// Raw lines a question needs (a grouped log search, durations).
	var want *regexp.Regexp
	if p := lineSearch(g.sc); p != "" {
		want = regexp.MustCompile(p)
	}
	kept := map[string][]evidence.LogLine{}
	pods := g.podsForLogs()
	pods = append(pods, g.handedOverPods(ctx, pods, g.opts.MaxPodLogs-len(pods))...)
	for _, p := range pods {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wl := WorkloadOfPod(p)
		key := p.Namespace + "/" + wl
		m := miners[key]
		if m == nil {
			m = analysis.NewMiner(w.BaselineStart, w.Start, w.End)
			miners[key] = m
			meta[key] = LogSet{Source: p.Name, Subject: wl, Namespace: p.Namespace, Origin: SrcLogs}
			order = append(order, key)
		}
		if p.Status.Phase != corev1.PodSucceeded {
			running[key] = true
		}
		out, ok := g.call(ctx, sp, "get_pod_logs", map[string]any{"namespace": p.Namespace, "pod": p.Name, "since": since, "until": until, "limit": g.opts.PodLogLimit})
		if ok {
			if lr, _ := as[*evidence.LogResult](out); lr != nil {
				addLines(m, p.Name, lr.Lines, podLogTime(p, w))
				if want != nil {
					kept[key] = keepQuestionLines(want, lr.Lines, kept[key])
				}
			}
		}
		g.rejectedReloads = append(g.rejectedReloads, g.earlierRejections(ctx, sp, p)...)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount == 0 && cs.LastTerminationState.Terminated == nil && cs.State.Terminated == nil {
				continue
			}
			key := p.Namespace + "/" + p.Name + "/" + cs.Name
			var lines []evidence.LogLine
			if cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil {
				lines = g.containerLog(ctx, sp, p, cs.Name, true)
			}
			if len(lines) == 0 {
				// No log of a previous instance (kubectl cluster-info dump
				// and many captures hold only the current one): the
				// current container's log is the crash's log.
				if lines = g.containerLog(ctx, sp, p, cs.Name, false); len(lines) == 0 {
					continue
				}
				g.k8s.CurrentLogs[key] = true
				g.k8s.PreviousLogs[key] = lines
				continue // already mined with the pod's log
			}
			g.k8s.PreviousLogs[key] = lines
			addLines(m, p.Name, lines, terminatedAt(cs))
		}
		g.initContainerLogs(ctx, sp, p, m)
	}
	for _, k := range order {
		set := meta[k]
		base, inc := miners[k].Lines()
		if base+inc == 0 {
			continue
		}
		set.Templates = miners[k].Templates()
		set.HasBaseline = base >= 10
		set.Completed = !running[k]
		set.Lines = kept[k]
		g.logSets = append(g.logSets, set)
	}
	g.gatherCalledServices(ctx, sp)
	g.gatherDialedServices(ctx, sp)
	return nil
}

// svcHostRE reads a cluster Service's name and namespace from a host a
// log line calls ("kafka-bootstrap.streaming.svc:9092").
var svcHostRE = regexp.MustCompile(`\b([a-z0-9][a-z0-9-]*)\.([a-z0-9][a-z0-9-]*)\.svc\b`)

// gatherCalledServices lists the Services of other namespaces that the
// pods' logs call by their cluster names, for their ports (what a client
// may call): at most three namespaces.
func (g *gatherer) gatherCalledServices(ctx context.Context, sp specialist) {
	if !sp.run.Has("list_services") {
		return
	}
	listed := map[string]bool{g.sc.Namespace: true}
	for _, set := range g.logSets {
		for _, t := range set.Templates {
			for _, m := range findAllSubmatch(svcHostRE, t.Example, -1) {
				ns := m[2]
				if listed[ns] || len(listed) > 3 || ctx.Err() != nil {
					continue
				}
				listed[ns] = true
				if out, ok := g.call(ctx, sp, "list_services", map[string]any{"namespace": ns}); ok {
					g.k8s.CalledServices = append(g.k8s.CalledServices, serviceStates(out)...)
				}
			}
		}
	}
	g.gatherShortNameServices(ctx, sp)
}

// gatherShortNameServices lists the Services of every namespace once when
// a pod's log says a short host name does not resolve ("getaddrinfo
// ENOTFOUND redis") and its own namespace has no Service of that name,
// and keeps those of that name: a short name resolves only in the
// caller's namespace, and the Service it means may live in another
// (dnsfailure.go).
func (g *gatherer) gatherShortNameServices(ctx context.Context, sp specialist) {
	want := map[string]bool{}
	for _, set := range g.logSets {
		ns := orWord(set.Namespace, g.sc.Namespace)
		for _, t := range set.Templates {
			h := unresolvedShortHost(t.Example)
			if h == "" || want[h] {
				continue
			}
			own, listed := false, false
			for _, s := range g.k8s.Services {
				if s.Service.Namespace == ns {
					listed = true
					own = own || s.Service.Name == h
				}
			}
			if listed && !own {
				want[h] = true
			}
		}
	}
	if len(want) == 0 || ctx.Err() != nil {
		return
	}
	out, ok := g.call(ctx, sp, "list_services", map[string]any{"namespace": "all"})
	if !ok {
		return
	}
	for _, s := range serviceStates(out) {
		if want[s.Service.Name] && !slices.ContainsFunc(g.k8s.CalledServices, func(c ServiceState) bool {
			return c.Service.Namespace == s.Service.Namespace && c.Service.Name == s.Service.Name
		}) {
			g.k8s.CalledServices = append(g.k8s.CalledServices, s)
		}
	}
}

// initContainerLogs reads the log of the init container a pod is at when
// it has not got past its init containers: the one running now (what it
// waits for) or crash-looping (why it fails) is the pod's current state,
// and its own log the first place to read. The lines are kept with the
// containers' last lines (CurrentLogs marks a running container's); a
// previous instance's lines are mined with the pod's log, whose own
// lines hold the current instance's.
func (g *gatherer) initContainerLogs(ctx context.Context, sp specialist, p *corev1.Pod, m *analysis.Miner) {
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Ready || cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
			continue // done: the next one is where the pod is
		}
		key := p.Namespace + "/" + p.Name + "/" + cs.Name
		if _, ok := g.k8s.PreviousLogs[key]; ok {
			return
		}
		switch {
		case cs.State.Running != nil:
			if lines := g.containerLog(ctx, sp, p, cs.Name, false); len(lines) > 0 {
				g.k8s.CurrentLogs[key] = true
				g.k8s.PreviousLogs[key] = lines
			}
		case cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil || cs.State.Terminated != nil:
			if lines := g.containerLog(ctx, sp, p, cs.Name, true); len(lines) > 0 {
				g.k8s.PreviousLogs[key] = lines
				addLines(m, p.Name, lines, terminatedAt(cs))
			} else if lines := g.containerLog(ctx, sp, p, cs.Name, false); len(lines) > 0 {
				g.k8s.CurrentLogs[key] = true
				g.k8s.PreviousLogs[key] = lines
			}
		}
		return
	}
}

// containerLog reads the last lines of one container's log: its previous
// instance's, or its current one's.
func (g *gatherer) containerLog(ctx context.Context, sp specialist, p *corev1.Pod, container string, previous bool) []evidence.LogLine {
	args := map[string]any{"namespace": p.Namespace, "pod": p.Name, "container": container, "limit": 50}
	if previous {
		args["previous"] = true
	}
	if !sp.run.Has("get_pod_logs") {
		return nil
	}
	out, err := sp.run.Call(ctx, "get_pod_logs", args)
	if err != nil {
		// A container with no earlier instance has no previous log:
		// that is not a gap in the evidence.
		if ctx.Err() == nil && !(previous && evidence.CodeOf(err) == evidence.CodeNotFound) {
			g.gap("get_pod_logs", err)
		}
		return nil
	}
	g.calls++
	lr, _ := as[*evidence.LogResult](out)
	if lr == nil {
		return nil
	}
	return lr.Lines
}

// addLines feeds log lines to a miner. A line without a timestamp (a
// stack-trace continuation) takes the time of the line before it; lines
// of a log that prints no timestamps take the time the container last
// ran (fallback).
func addLines(m *analysis.Miner, source string, lines []evidence.LogLine, fallback time.Time) {
	last := time.Time{}
	for _, l := range lines {
		t := l.Time
		if t.IsZero() {
			t = last
		} else {
			last = t
		}
		if t.IsZero() {
			t = fallback
		}
		if t.IsZero() {
			continue
		}
		m.Add(t, source, MiningText(l.Text))
	}
}

// terminatedAt is when a container's last instance ended (zero if never).
func terminatedAt(cs corev1.ContainerStatus) time.Time {
	var t time.Time
	if x := cs.LastTerminationState.Terminated; x != nil {
		t = x.FinishedAt.Time
	}
	if x := cs.State.Terminated; x != nil && x.FinishedAt.After(t) {
		t = x.FinishedAt.Time
	}
	return t
}

// podLogTime is the time given to a pod's log lines that carry none: when
// its containers last ran (the latest start or end of a container), else
// the end of the window (the log is read now).
func podLogTime(p *corev1.Pod, w Window) time.Time {
	var t time.Time
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if r := cs.State.Running; r != nil && r.StartedAt.After(t) {
			t = r.StartedAt.Time
		}
		if x := terminatedAt(cs); x.After(t) {
			t = x
		}
	}
	if t.IsZero() || t.After(w.End) {
		t = w.End
	}
	return t
}

func (g *gatherer) gatherChanges(ctx context.Context, sp specialist) error {
	since, until := g.window()
	out, ok := g.call(ctx, sp, "list_changes", map[string]any{"since": since, "until": until})
	if !ok {
		return errors.New("no changes")
	}
	listed, _ := as[[]evidence.Change](out)
	g.changes = append(g.changes, listed...) // after those of a CloudTrail trail, if read
	// The month before: not triggers of what happens now, but how things
	// are wired and set (a client moved its reads to a replica, a
	// database's setting relaxed weeks ago).
	from := g.sc.Window.BaselineStart.Add(-earlierChanges)
	if out, ok := g.call(ctx, sp, "list_changes", map[string]any{"since": from.Format(time.RFC3339), "until": since}); ok {
		older, _ := as[[]evidence.Change](out)
		for _, c := range older {
			if c.Timestamp.Before(g.sc.Window.BaselineStart) {
				g.earlier = append(g.earlier, c)
			}
		}
	}
	return nil
}

// earlierChanges is how far before the window changes are read as the
// state of configuration (Gathered.Earlier).
const earlierChanges = 30 * 24 * time.Hour

func (g *gatherer) gatherHostLogs(ctx context.Context, sp specialist) error {
	var sources []string
	if sp.run.Has("list_log_sources") {
		out, ok := g.call(ctx, sp, "list_log_sources", map[string]any{})
		if !ok {
			return errors.New("no log sources")
		}
		sources, _ = as[[]string](out)
	} else {
		sources = []string{""}
	}
	w := g.sc.Window
	for i, s := range sources {
		if i >= g.opts.MaxLogSources {
			g.gaps = append(g.gaps, fmt.Sprintf("logs: only the first %d of %d sources were mined", g.opts.MaxLogSources, len(sources)))
			break
		}
		out, ok := g.call(ctx, sp, "get_log_signatures", map[string]any{"source": s,
			"since": w.Start.Format(time.RFC3339), "until": w.End.Format(time.RFC3339), "baseline_since": w.BaselineStart.Format(time.RFC3339)})
		if !ok {
			continue
		}
		ts, _ := as[[]analysis.LogTemplate](out)
		base := 0
		for _, t := range ts {
			base += t.Baseline
		}
		g.logSources++
		g.logSets = append(g.logSets, LogSet{Source: s, Subject: subjectOfSource(s), Origin: SrcLogs, Templates: ts, HasBaseline: base >= 10, Host: true,
			Lines: g.searchQuestionLines(ctx, sp, s)})
		g.hostCommands = append(g.hostCommands, g.earlierHostCommands(ctx, sp, s)...)
	}
	return nil
}

// searchQuestionLines reads the raw lines of a host log source that the
// question needs (lineSearch), in the baseline and in the incident window
// separately so that a busy window does not push the baseline out; nil
// when the question needs none or search_logs is not in the toolkit.
func (g *gatherer) searchQuestionLines(ctx context.Context, sp specialist, source string) []evidence.LogLine {
	pattern := lineSearch(g.sc)
	if pattern == "" || !sp.run.Has("search_logs") {
		return nil
	}
	w := g.sc.Window
	var lines []evidence.LogLine
	for _, span := range [][2]time.Time{{w.BaselineStart, w.Start}, {w.Start, w.End}} {
		out, ok := g.call(ctx, sp, "search_logs", map[string]any{"source": source, "pattern": pattern,
			"since": span[0].Format(time.RFC3339), "until": span[1].Format(time.RFC3339), "limit": maxQuestionLines / 2})
		if !ok {
			continue
		}
		if lr, _ := as[*evidence.LogResult](out); lr != nil {
			lines = append(lines, lr.Lines...)
		}
	}
	return lines
}

// subjectOfSource names the service a log file or group belongs to:
// "/var/log/payments-api.log" → "payments-api", "/aws/lambda/orders" →
// "orders".
func subjectOfSource(s string) string {
	b := path.Base(strings.TrimRight(s, "/"))
	for _, ext := range []string{".jsonl", ".log", ".txt", ".out", ".err"} {
		b = strings.TrimSuffix(b, ext)
	}
	if d := ownerDir(s, b); d != "" {
		return d
	}
	if w := podLogOwner(b); w != "" {
		return w
	}
	return trimLogStream(b)
}

// gatherMetrics discovers series, keeps those whose names say something
// about health (errors, latency, saturation, restarts), and reads them
// over the baseline and incident windows.
func (g *gatherer) gatherMetrics(ctx context.Context, sp specialist) error {
	since, until := g.window()
	out, ok := g.call(ctx, sp, "list_metrics", map[string]any{"start": since, "end": until})
	if !ok {
		return errors.New("no metrics")
	}
	labels, _ := as[[]evidence.Labels](out)
	names := map[string]int{}
	for _, l := range labels {
		names[l["__name__"]]++
	}
	type pick struct {
		name, class, unit string
		prio              int
	}
	prio := map[string]int{MetricHPA: 0, MetricCertExpiry: 0, MetricErrors: 0, MetricRequests: 1, MetricLatency: 2, MetricCPUThrottle: 3, MetricRestarts: 3, MetricSaturation: 4, MetricFree: 5, MetricUp: 6, MetricState: 7, MetricCache: 1}
	var picks []pick
	for n := range names {
		class, unit := ClassifyMetric(n)
		if class == "" || n == "" {
			continue
		}
		// Latency from a histogram/summary: use _sum with its _count.
		if strings.HasSuffix(n, "_count") && class == MetricLatency {
			continue
		}
		if strings.HasSuffix(n, "_sum") && names[strings.TrimSuffix(n, "_sum")+"_count"] == 0 {
			continue
		}
		picks = append(picks, pick{n, class, unit, prio[class]})
	}
	sort.Slice(picks, func(i, j int) bool {
		if picks[i].prio != picks[j].prio {
			return picks[i].prio < picks[j].prio
		}
		return picks[i].name < picks[j].name
	})
	if len(picks) > g.opts.MaxMetrics {
		g.gaps = append(g.gaps, fmt.Sprintf("metrics: only %d of %d health-related metrics were analysed", g.opts.MaxMetrics, len(picks)))
		picks = picks[:g.opts.MaxMetrics]
	}
	// A claim that a volume is filling is checked from the volume's own
	// series and the byte-sized series of the pods using it: these come on
	// top of the limit, so they push no other metric out.
	if matchLine(volumeFillRE, g.sc.Message+" "+g.sc.Hint+" "+g.sc.Alert) {
		have := map[string]bool{}
		for _, p := range picks {
			have[p.name] = true
		}
		for _, n := range volumeClaimMetrics(labels, g.sc) {
			if !have[n] {
				_, unit := ClassifyMetric(n)
				picks = append(picks, pick{n, MetricVolume, unit, 0})
			}
		}
	}
	// An in-process cache's size gauge is read on top, as a state: never
	// an anomaly of its own, it says whether a cache grows without bound
	// with the memory of its process (unboundedcache.go).
	for n := range names {
		if IsInProcessCacheSize(n) && !slices.ContainsFunc(picks, func(p pick) bool { return p.name == n }) {
			picks = append(picks, pick{n, MetricState, "", 7})
		}
	}
	// A claim that a host's disk is full is checked against the
	// filesystem's size as well as its free space.
	if matchLine(diskClaimRE, g.sc.Message+" "+g.sc.Hint+" "+g.sc.Alert) {
		for n := range names {
			if matchLine(fsSizeRE, n) && !slices.ContainsFunc(picks, func(p pick) bool { return p.name == n }) {
				picks = append(picks, pick{n, MetricVolume, "bytes", 0})
			}
		}
	}
	// A question about a page that never came reads which alerts fired,
	// as a state (pagemissed.go).
	if matchLine(pageAskRE, g.sc.Message+" "+g.sc.Hint) && names["ALERTS"] > 0 && !slices.ContainsFunc(picks, func(p pick) bool { return p.name == "ALERTS" }) {
		picks = append(picks, pick{"ALERTS", MetricState, "", 7})
	}
	// A question about latency or timeouts reads latency histograms'
	// buckets raw, for quantiles (a caller's deadline against its callee's
	// p99, deadlinecut.go).
	if wantsBuckets(g.sc) {
		var hist []string
		for n := range names {
			if _, unit := ClassifyMetric(n); unit == "s" && strings.HasSuffix(n, "_bucket") {
				hist = append(hist, n)
			}
		}
		slices.Sort(hist)
		for _, n := range hist[:min(len(hist), 3)] {
			picks = append(picks, pick{n, MetricBuckets, "s", 0})
		}
	}
	step := fmt.Sprintf("%ds", int(stepFor(g.sc.Window).Seconds()))
	query := func(q string) []evidence.Series {
		args := map[string]any{"query": q, "start": since, "end": until, "step": step}
		out, ok := g.call(ctx, sp, "prometheus_query_range", args)
		if !ok {
			return nil
		}
		ss, _ := as[[]evidence.Series](out)
		return ss
	}
	for _, p := range picks {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ss := query(p.name)
		if len(ss) == 0 {
			continue
		}
		for i := range ss {
			if ss[i].Labels == nil {
				ss[i].Labels = evidence.Labels{}
			}
			if ss[i].Labels["__name__"] == "" {
				ss[i].Labels["__name__"] = p.name
			}
		}
		set := MetricSet{Name: p.name, Class: p.class, Unit: p.unit, Origin: SrcMetrics}
		switch {
		case p.class == MetricHitRatio:
			// An edge cache's hit counter is read against its other
			// counters (cachebypassed.go).
			set.Series, set.Name = edgeHitRatio(p.name, ss, func(n string) []evidence.Series {
				if names[n] == 0 {
					return nil
				}
				return query(n)
			})
		case strings.HasSuffix(p.name, "_sum") && p.class == MetricLatency:
			counts := query(strings.TrimSuffix(p.name, "_sum") + "_count")
			set.Series = meanSeries(ss, counts)
			set.Requests = analysis.RateSeries(counts)
			set.Unit = "s"
			set.Name = strings.TrimSuffix(p.name, "_sum") + " (mean)"
		case p.class == MetricCPUThrottle && strings.Contains(p.name, "periods") && names["container_cpu_cfs_periods_total"] > 0:
			// The share of CFS periods throttled: throttled / total.
			total := query("container_cpu_cfs_periods_total")
			set.Series = ratioSeries(analysis.RateSeries(ss), analysis.RateSeries(total))
			set.Unit = "%"
			set.Name = p.name + " / container_cpu_cfs_periods_total"
		case p.class == MetricBuckets:
			set.Series = ss
		case analysis.IsCounterName(p.name) || p.class == MetricErrors && !strings.Contains(p.name, "ratio") || p.class == MetricRequests && counterLike(ss):
			set.Series = analysis.RateSeries(ss)
			if p.class == MetricRestarts {
				set.Unit = "/s"
			}
		default:
			set.Series = ss
		}
		if len(set.Series) > 0 {
			g.metricNames++
			g.metricSets = append(g.metricSets, set)
		}
	}
	return nil
}

// counterLike reports whether series only ever grow (a counter whose name
// does not end in _total, such as ingress-nginx's
// nginx_ingress_controller_requests), allowing a reset to near zero.
func counterLike(ss []evidence.Series) bool {
	n := 0
	for _, s := range ss {
		for i := 1; i < len(s.Points); i++ {
			a, b := s.Points[i-1].V, s.Points[i].V
			if b < a && b > a/2 {
				return false
			}
			n++
		}
	}
	return n >= 3
}

// seriesKeyWithoutName identifies a series by its labels other than
// __name__, so that series of two metrics over the same object match.
func seriesKeyWithoutName(l evidence.Labels) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		if k != "__name__" {
			keys = append(keys, k+"="+l[k])
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// ratioSeries divides each series by the series of the same labels
// (without __name__) in den.
func ratioSeries(num, den []evidence.Series) []evidence.Series {
	key := seriesKeyWithoutName
	byKey := map[string]map[time.Time]float64{}
	for _, d := range den {
		m := map[time.Time]float64{}
		for _, p := range d.Points {
			m[p.T] = p.V
		}
		byKey[key(d.Labels)] = m
	}
	var out []evidence.Series
	for _, n := range num {
		d := byKey[key(n.Labels)]
		if d == nil {
			continue
		}
		ns := evidence.Series{Labels: n.Labels}
		for _, p := range n.Points {
			if v := d[p.T]; v > 0 {
				ns.Points = append(ns.Points, evidence.Point{T: p.T, V: min(1, p.V/v)})
			}
		}
		if len(ns.Points) > 0 {
			out = append(out, ns)
		}
	}
	return out
}

func stepFor(w Window) time.Duration {
	s := w.End.Sub(w.BaselineStart) / 240
	if s < 15*time.Second {
		return 15 * time.Second
	}
	return s.Truncate(time.Second)
}

// meanSeries divides the rate of a _sum by the rate of its _count, series
// matched on their labels without __name__.
func meanSeries(sums, counts []evidence.Series) []evidence.Series {
	key := seriesKeyWithoutName
	byKey := map[string][]evidence.Point{}
	win := map[string]time.Duration{}
	for _, c := range counts {
		w := analysis.RateWindow(c.Points)
		byKey[key(c.Labels)] = analysis.WindowRate(c.Points, w)
		win[key(c.Labels)] = w
	}
	var out []evidence.Series
	for _, s := range sums {
		cr := byKey[key(s.Labels)]
		sr := analysis.WindowRate(s.Points, win[key(s.Labels)])
		if len(cr) == 0 {
			continue
		}
		ct := map[time.Time]float64{}
		for _, p := range cr {
			ct[p.T] = p.V
		}
		ns := evidence.Series{Labels: s.Labels}
		for _, p := range sr {
			if c := ct[p.T]; c > 0 {
				ns.Points = append(ns.Points, evidence.Point{T: p.T, V: p.V / c})
			}
		}
		if len(ns.Points) > 0 {
			out = append(out, ns)
		}
	}
	return out
}

// The two halves of the CloudWatch domain, marked done apart.
const (
	cwLogs    = "cloudwatch/logs"
	cwMetrics = "cloudwatch/metrics"
)

// cloudWatchInteresting are CloudWatch metric names worth reading, and the
// statistic to read them with.
func cloudWatchStat(name string) (class, stat string) {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "cachehitrate"):
		// An edge cache's hit ratio (CloudFront): read by
		// cachebypassed.go, never an anomaly of its own.
		return MetricHitRatio, "Average"
	case strings.Contains(n, "5xx"), strings.Contains(n, "error"), strings.Contains(n, "throttl"), strings.Contains(n, "fault"), strings.Contains(n, "dead"):
		return MetricErrors, "Sum"
	case strings.Contains(n, "blocked"):
		// A gauge that a service refuses writes (OpenSearch's
		// ClusterIndexWritesBlocked): its maximum says whether it did.
		return MetricErrors, "Maximum"
	case strings.Contains(n, "latency"), strings.Contains(n, "duration"), strings.Contains(n, "responsetime"):
		return MetricLatency, "Average"
	case strings.HasPrefix(n, "free"), strings.Contains(n, "available"):
		return MetricFree, "Average"
	case strings.Contains(n, "cpu"), strings.Contains(n, "connections"), strings.Contains(n, "memory"), strings.Contains(n, "oldestmessage"),
		strings.Contains(n, "messagesvisible"), strings.Contains(n, "iteratorage"), strings.Contains(n, "concurrent"), strings.Contains(n, "queue"):
		return MetricSaturation, "Average"
	// What a burstable volume or instance has left to spend.
	case strings.Contains(n, "balance"):
		return MetricFree, "Average"
	// The write and read units a table or index consumes a period, and
	// what it is provisioned.
	case strings.HasPrefix(n, "consumed") && strings.Contains(n, "capacityunits"):
		return MetricSaturation, "Sum"
	case strings.HasPrefix(n, "provisioned") && strings.Contains(n, "capacityunits"):
		return MetricSaturation, "Average"
	// What a database's transaction log and replication slots hold.
	case strings.Contains(n, "transactionlogs"), strings.Contains(n, "replicationslot"), strings.Contains(n, "binlogdisk"):
		return MetricSaturation, "Maximum"
	}
	return "", ""
}

func (g *gatherer) gatherCloudWatch(ctx context.Context, sp specialist) error {
	since, until := g.window()
	w := g.sc.Window
	got := g.done[cwLogs] || g.done[cwMetrics]
	if sp.run.Has("get_cloudwatch_logs") && !g.done[cwLogs] {
		g.done[cwLogs] = true
		var groups []string
		if out, ok := g.call(ctx, sp, "list_cloudwatch_log_groups", map[string]any{}); ok {
			groups, _ = as[[]string](out)
		}
		for i, grp := range groups {
			if i >= g.opts.MaxLogSources || ctx.Err() != nil {
				break
			}
			out, ok := g.call(ctx, sp, "get_cloudwatch_logs", map[string]any{"log_group": grp, "start": since, "end": until, "limit": 2000})
			if !ok {
				continue
			}
			lr, _ := as[*evidence.LogResult](out)
			if lr == nil {
				continue
			}
			got = true
			m := analysis.NewMiner(w.BaselineStart, w.Start, w.End)
			for _, l := range lr.Lines {
				m.Add(l.Time, grp, l.Text)
			}
			// A CloudTrail trail's calls that changed something are changes.
			g.changes = append(g.changes, cloudTrailChanges(lr.Lines)...)
			// An API server's audit log: who deleted which Job.
			g.jobDeletes = append(g.jobDeletes, auditJobDeletes(lr.Lines)...)
			// A firewall's log: the requests it blocked, one by one (its
			// records of allowed and blocked requests mine as one template).
			g.wafBlocks = append(g.wafBlocks, wafBlockLines(lr.Lines)...)
			if s, ok := slowlogStream(grp, lr.Lines); ok {
				g.streamed = append(g.streamed, s)
			}
			base, _ := m.Lines()
			g.logSets = append(g.logSets, LogSet{Source: grp, Subject: cloudWatchGroupSubject(grp, lr.Lines), Origin: SrcCloudWatch, Templates: m.Templates(), HasBaseline: base >= 10})
		}
	}
	if sp.run.Has("get_cloudwatch_metrics") && sp.run.Has("list_cloudwatch_metrics") && !g.done[cwMetrics] {
		g.done[cwMetrics] = true
		out, ok := g.call(ctx, sp, "list_cloudwatch_metrics", map[string]any{})
		var ids []evidence.MetricID
		if ok {
			ids, _ = as[[]evidence.MetricID](out)
		}
		n := 0
		for _, id := range ids {
			class, stat := cloudWatchStat(id.Name)
			// A cache node's (ElastiCache, MemoryDB): its evictions and
			// hits a minute, its hit rate and memory use in percent.
			if full := id.Namespace + "/" + id.Name; IsCacheMetric(full) {
				class, stat = MetricCache, "Average"
				if r := cacheRole(full); r == "evictions" || r == "hits" || r == "misses" {
					stat = "Sum"
				}
			}
			if class == "" || ctx.Err() != nil {
				continue
			}
			if n >= g.opts.MaxMetrics {
				break
			}
			n++
			out, ok := g.call(ctx, sp, "get_cloudwatch_metrics", map[string]any{"namespace": id.Namespace, "metric_name": id.Name,
				"dimensions": id.Dimensions, "stat": stat, "period": 60, "start": since, "end": until})
			if !ok {
				continue
			}
			ss, _ := as[[]evidence.Series](out)
			for i := range ss {
				if ss[i].Labels == nil {
					ss[i].Labels = evidence.Labels{}
				}
				ss[i].Labels["__name__"] = id.Name
				for k, v := range id.Dimensions {
					if ss[i].Labels[k] == "" {
						ss[i].Labels[k] = v
					}
				}
			}
			got = true
			unit := ""
			if class == MetricLatency && !strings.Contains(strings.ToLower(id.Name), "seconds") && !strings.Contains(strings.ToLower(id.Name), "responsetime") {
				unit = "ms"
			} else if class == MetricLatency {
				unit = "s"
			}
			g.metricNames++
			g.metricSets = append(g.metricSets, MetricSet{Name: id.Namespace + "/" + id.Name, Class: class, Unit: unit, Origin: SrcCloudWatch, Series: ss})
		}
	}
	if !got {
		return errors.New("no cloudwatch data")
	}
	return nil
}

// detect runs every detector over what was gathered.
func (g *gatherer) detect() []Finding {
	w := g.sc.Window
	var fs []Finding
	fs = append(fs, DetectKubernetes(g.k8s, w)...)
	rollouts := DetectRollouts(g.k8s.Deployments, g.k8s.ReplicaSets, w)
	fs = append(fs, mergeRolloutChanges(DetectChanges(g.changes, w), rollouts)...)
	fs = append(fs, DetectLogs(g.logSets, w)...)
	fs = append(fs, DetectMetrics(g.metricSets, w)...)
	fs = append(fs, detectMechanisms(g.gathered(), fs)...)
	fs = dropServedEndpoints(g.gathered(), fs)
	linkVictims(fs)
	EnrichFromPods(fs, g.k8s.Pods)
	attachCertRenewal(fs, g.k8s.Events)
	g.attachServices(fs)
	attachHosts(fs)
	attachDatabaseInstances(fs, g.gathered())
	return dedupeFindings(fs)
}

// gathered is the evidence as mechanisms see it.
func (g *gatherer) gathered() *Gathered {
	return &Gathered{K8s: g.k8s, Logs: g.logSets, Metrics: g.metricSets, Changes: g.changes, Earlier: g.earlier, Commands: append(slices.Clip(g.commands), g.streamed...), JobDeletes: g.jobDeletes, WAFBlocks: g.wafBlocks, RejectedReloads: g.rejectedReloads, HostCommands: g.hostCommands, Window: g.sc.Window, Scope: g.sc}
}

// attachHosts names a dependency after the host whose own log shows it
// failing: callers' "postgresql" or "redis" becomes pg-primary-01 or
// cache-redis-01 when that host's log reports the failure (a disk full, a
// process killed). A host's own report outweighs a client quoting it.
func attachHosts(fs []Finding) {
	hostOf := map[string]string{}
	for i := range fs {
		f := &fs[i]
		if h := f.fact("host"); h != "" && infoOf(f.Kind).class == classCause {
			for _, r := range f.Related {
				if _, ok := hostOf[r]; !ok && r != h {
					hostOf[r] = h
				}
			}
			f.Weight = min(1, f.Weight+0.05)
		}
	}
	for i := range fs {
		f := &fs[i]
		if f.fact("host") != "" {
			continue
		}
		if h := hostOf[f.Subject]; h != "" {
			f.setFact("role", f.Subject)
			f.Subject = h
			if f.Facts != nil && f.Facts["dependency"] != "" {
				f.Facts["dependency"] = h
			}
		}
	}
}

// dedupeFindings drops findings identical in kind, object and evidence.
func dedupeFindings(fs []Finding) []Finding {
	seen := map[string]bool{}
	out := fs[:0]
	for _, f := range fs {
		k := string(f.Kind) + "|" + f.Object + "|" + strings.Join(f.Evidence, "|")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	return out
}

// attachServices relates findings on workloads to the services selecting
// them (and back), and IP targets to the services or pods owning the IP, so
// that a caller's "connection refused to payments" meets payments' pods.
func (g *gatherer) attachServices(fs []Finding) {
	svcOf := map[string][]string{} // workload → services
	ipName := map[string]string{}
	for _, s := range g.k8s.Services {
		sel := s.Service.Spec.Selector
		if s.Service.Spec.ClusterIP != "" && s.Service.Spec.ClusterIP != "None" {
			ipName[s.Service.Spec.ClusterIP] = s.Service.Name
		}
		if len(sel) == 0 {
			continue
		}
		for i := range g.k8s.Pods {
			p := &g.k8s.Pods[i]
			if p.Namespace != s.Service.Namespace {
				continue
			}
			match := true
			for k, v := range sel {
				if p.Labels[k] != v {
					match = false
					break
				}
			}
			if match {
				wl := WorkloadOfPod(p)
				if !slices.Contains(svcOf[wl], s.Service.Name) {
					svcOf[wl] = append(svcOf[wl], s.Service.Name)
				}
			}
		}
	}
	for i := range g.k8s.Pods {
		p := &g.k8s.Pods[i]
		if p.Status.PodIP != "" {
			ipName[p.Status.PodIP] = WorkloadOfPod(p)
		}
	}
	for i := range fs {
		f := &fs[i]
		if ip := f.Subject; ipName[ip] != "" {
			f.Subject = ipName[ip]
		} else if h := DependencyName(f.Subject); h != f.Subject && ipName[h] != "" {
			f.Subject = ipName[h]
		} else if wk := f.fact("well_known"); wk != "" && net.ParseIP(f.Subject) != nil {
			// An address outside the cluster on a well-known port: name
			// the dependency by what it is (10.0.12.5:6379 → redis).
			f.setFact("address", f.Subject)
			f.Subject = wk
			f.Facts["dependency"] = wk
		}
		for _, s := range svcOf[f.Subject] {
			if s != f.Subject && !slices.Contains(f.Related, s) {
				f.Related = append(f.Related, s)
			}
		}
		// A finding about a service relates to its workloads.
		for wl, svcs := range svcOf {
			if slices.Contains(svcs, f.Subject) && wl != f.Subject && !slices.Contains(f.Related, wl) {
				f.Related = append(f.Related, wl)
			}
		}
	}
}

// dataGaps lists evidence that could not be consulted: integrations not
// configured, tools no consulted agent may call, failed calls.
func (g *gatherer) dataGaps(plan []specialist) []string {
	var out []string
	has := func(tool string) bool {
		for _, sp := range plan {
			if sp.run.Has(tool) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ integration, label string }{
		{tools.IntegrationKubernetes, "kubernetes"}, {tools.IntegrationPrometheus, "metrics: prometheus"},
		{tools.IntegrationLogs, "host logs"}, {tools.IntegrationChanges, "changes"}, {tools.IntegrationCloudWatch, "cloudwatch"},
	} {
		if !configured(g.src, c.integration) {
			out = append(out, c.label+" not configured")
		}
	}
	for _, t := range []struct{ tool, integration string }{
		{"list_pods", tools.IntegrationKubernetes}, {"get_events", tools.IntegrationKubernetes}, {"get_pod_logs", tools.IntegrationKubernetes},
		{"list_metrics", tools.IntegrationPrometheus}, {"prometheus_query_range", tools.IntegrationPrometheus},
		{"get_log_signatures", tools.IntegrationLogs}, {"list_changes", tools.IntegrationChanges},
		{"get_cloudwatch_logs", tools.IntegrationCloudWatch}, {"get_cloudwatch_metrics", tools.IntegrationCloudWatch},
	} {
		if configured(g.src, t.integration) && !has(t.tool) {
			names := make([]string, 0, len(plan))
			for _, sp := range plan {
				names = append(names, sp.name)
			}
			out = append(out, fmt.Sprintf("%s disabled for %s", t.tool, orWord(strings.Join(names, ", "), "the agent")))
		}
	}
	return append(out, g.gaps...)
}

// checked summarises what was examined.
func (g *gatherer) checked() string {
	var parts []string
	add := func(n int, one, many string) {
		if n > 0 {
			parts = append(parts, plural(n, one, many))
		}
	}
	add(len(g.k8s.Pods), "pod", "pods")
	add(len(g.k8s.Events), "event", "events")
	add(len(g.k8s.Deployments), "deployment", "deployments")
	add(len(g.k8s.Nodes), "node", "nodes")
	add(g.metricNames, "metric", "metrics")
	add(len(g.logSets), "log source", "log sources")
	add(len(g.changes), "change", "changes")
	if len(parts) == 0 {
		return "no evidence"
	}
	return strings.Join(parts, ", ")
}

// dnsFailuresSeen reports whether any mined log template reports a DNS
// resolution failure in the incident window: a name that does not
// resolve, or a lookup the resolver did not answer in time ("lookup X on
// 10.96.0.10:53: i/o timeout", read as a timeout).
func (g *gatherer) dnsFailuresSeen() bool {
	for si := range g.logSets {
		set := &g.logSets[si]
		for ti, t := range set.Templates {
			if t.Incident > 0 && (set.classified(ti).kind == KindDNS || matchLine(lookupTimeoutRE, t.Example)) {
				return true
			}
		}
	}
	return false
}

// gatherClusterDNS reads the cluster DNS (CoreDNS/kube-dns pods in
// kube-system, their events and the logs of their crashed containers) when
// callers fail to resolve names: the DNS server may be the cause.
func (g *gatherer) gatherClusterDNS(ctx context.Context, plan []specialist) {
	if g.sc.Namespace == "kube-system" || !g.dnsFailuresSeen() {
		return
	}
	sp, pods, ok := g.kubeSystemPods(ctx, plan)
	if !ok {
		return
	}
	var dns []corev1.Pod
	for i := range pods {
		if isClusterDNS(&pods[i]) {
			dns = append(dns, pods[i])
		} else if isNodeLocalDNS(&pods[i]) {
			g.k8s.NodeDNS = append(g.k8s.NodeDNS, pods[i])
		}
	}
	g.k8s.Pods = append(g.k8s.Pods, dns...)
	if sp.run.Has("get_events") {
		since, _ := g.window()
		if out, ok := g.call(ctx, sp, "get_events", map[string]any{"namespace": "kube-system", "since": since}); ok {
			evs, _ := as[[]corev1.Event](out)
			for _, e := range evs {
				if strings.Contains(e.InvolvedObject.Name, "dns") {
					g.k8s.Events = append(g.k8s.Events, e)
				}
			}
		}
	}
	if sp.run.Has("get_pod_logs") {
		for _, p := range dns {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.RestartCount == 0 && cs.LastTerminationState.Terminated == nil {
					continue
				}
				out, ok := g.call(ctx, sp, "get_pod_logs", map[string]any{"namespace": p.Namespace, "pod": p.Name, "container": cs.Name, "previous": true, "limit": 50})
				if !ok {
					continue
				}
				if lr, _ := as[*evidence.LogResult](out); lr != nil && len(lr.Lines) > 0 {
					g.k8s.PreviousLogs[p.Namespace+"/"+p.Name+"/"+cs.Name] = lr.Lines
				}
			}
		}
	}
}

// kubeSystemPods lists the pods of kube-system through the first
// specialist of the plan that may list pods, for the detectors that look
// at the cluster's own agents (the cluster DNS, the pod network's node
// agents); ok is false when none may or the listing failed.
func (g *gatherer) kubeSystemPods(ctx context.Context, plan []specialist) (specialist, []corev1.Pod, bool) {
	for _, sp := range plan {
		if !sp.run.Has("list_pods") {
			continue
		}
		out, ok := g.call(ctx, sp, "list_pods", map[string]any{"namespace": "kube-system"})
		if !ok {
			return sp, nil, false
		}
		pods, _ := as[[]corev1.Pod](out)
		return sp, pods, true
	}
	return specialist{}, nil, false
}

// certManagerKinds are the objects through which cert-manager renews a
// certificate.
var certManagerKinds = map[string]bool{"Certificate": true, "CertificateRequest": true, "Order": true, "Challenge": true, "Issuer": true, "ClusterIssuer": true}

// attachCertRenewal adds to findings about a certificate close to (or
// past) its expiry the Warning events of its renewal (cert-manager's
// Certificate, CertificateRequest, Order and Challenge named after it): a
// renewal that keeps failing is why it was not renewed.
func attachCertRenewal(fs []Finding, events []corev1.Event) {
	for i := range fs {
		f := &fs[i]
		if f.Kind != KindCertExpiring && f.Kind != KindCertificate || f.fact("certificate") == "" {
			continue
		}
		name := f.fact("certificate")
		n := 0
		for j := range events {
			e := &events[j]
			io := e.InvolvedObject
			if !certManagerKinds[io.Kind] || e.Type != corev1.EventTypeWarning || !strings.HasPrefix(io.Name, name) {
				continue
			}
			first, last := eventTime(e)
			f.setFact("renewal_error", e.Message)
			if n < 2 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("renewal failing: event %s on %s %s/%s: %s (%s, first %s, last %s)", e.Reason, io.Kind, io.Namespace, io.Name,
					quote(e.Message, 240), plural(int(max(e.Count, 1)), "time", "times"), ts(first), ts(last)))
			}
			n++
		}
		if n > 0 {
			f.Weight = min(1, f.Weight+0.08)
			f.Severity = SevCritical
		}
	}
}

// knownNames lists the names of everything the evidence shows: workloads,
// pods, services, deployments, nodes, log sources and their subjects,
// change subjects and metric subjects.
// nodeNames are the nodes the evidence shows (listed, or running pods).
func (g *gatherer) nodeNames() map[string]bool {
	n := map[string]bool{}
	for _, x := range g.k8s.Nodes {
		n[x.Name] = true
	}
	for i := range g.k8s.Pods {
		if s := g.k8s.Pods[i].Spec.NodeName; s != "" {
			n[s] = true
		}
	}
	return n
}

func (g *gatherer) knownNames() map[string]bool {
	k := map[string]bool{}
	add := func(s string) {
		if s != "" {
			k[s] = true
		}
	}
	for i := range g.k8s.Pods {
		add(g.k8s.Pods[i].Name)
		add(WorkloadOfPod(&g.k8s.Pods[i]))
		add(g.k8s.Pods[i].Spec.NodeName)
	}
	for _, d := range g.k8s.Deployments {
		add(d.Name)
	}
	for _, s := range g.k8s.Services {
		add(s.Service.Name)
	}
	// Jobs and the CronJobs that create them are objects of their own:
	// a failed run is their state, not the question's subject's.
	for _, j := range g.k8s.Jobs {
		add(j.Name)
		add(cronJobOf(j.Name))
	}
	for _, c := range g.k8s.CronJobs {
		add(c.Name)
	}
	for _, n := range g.k8s.Nodes {
		add(n.Name)
	}
	for _, e := range g.k8s.Events {
		add(e.InvolvedObject.Name)
		add(e.Source.Host)
	}
	for _, l := range g.logSets {
		add(l.Source)
		add(l.Subject)
	}
	for _, c := range g.changes {
		add(c.Service)
	}
	for _, ms := range g.metricSets {
		for _, s := range ms.Series {
			add(SubjectOfLabels(s.Labels))
		}
	}
	return k
}
