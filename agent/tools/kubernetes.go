package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// PodDescription is describe_pod's result: the pod, the events about it,
// and the objects it refers to (see describe_resource).
type PodDescription struct {
	Pod     corev1.Pod      `json:"pod"`
	Events  []corev1.Event  `json:"events"`
	Related []RelatedObject `json:"related"`
}

// ServiceStatus is one service of list_services with its endpoints: the
// pods ("name (ip)") that receive traffic and those that do not (not ready).
type ServiceStatus struct {
	Service           corev1.Service `json:"service"`
	ReadyEndpoints    []string       `json:"ready_endpoints"`
	NotReadyEndpoints []string       `json:"not_ready_endpoints"`
}

// DeploymentWriter is implemented by Kubernetes sources that can change
// deployments (the live client-go backend; never a bundle).
type DeploymentWriter interface {
	RestartDeployment(ctx context.Context, namespace, name string, now time.Time) error
	ScaleDeployment(ctx context.Context, namespace, name string, replicas int32) error
}

// WriteStatus is the result of restart_deployment and scale_deployment.
type WriteStatus struct {
	Action    string `json:"action"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Replicas  *int32 `json:"replicas,omitempty"`
	Message   string `json:"message"`
}

// MaxReplicas bounds scale_deployment.
const MaxReplicas = 1000

const nsProp = `"namespace": {"type": "string", "description": "Kubernetes namespace; omitted: the team's default namespace, or all namespaces when none is set (\"*\" for all)"}`

func kubernetesTools() []Tool {
	k8s, metrics, coding, inv := AgentK8s, AgentMetrics, AgentCoding, AgentInvestigation
	return append([]Tool{
		{Spec: Spec{Name: "list_namespaces", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{k8s, inv},
			Description: "List the names of the cluster's Kubernetes namespaces. Start here to find where a service runs.",
			Parameters:  objectSchema(`{}`)},
			Run: runListNamespaces},
		{Spec: Spec{Name: "list_pods", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{k8s, metrics, inv},
			Description: "List pods with their full status: phase, conditions, container states (waiting reasons such as CrashLoopBackOff, " +
				"last termination reason such as OOMKilled and exit code), restart counts, node and resources. At most 200 pods " +
				"(unhealthy ones kept first); narrow with label_selector.",
			Parameters: objectSchema(`{` + nsProp + `,
				"label_selector": {"type": "string", "description": "Kubernetes label selector, e.g. app=checkout or tier in (web,api)"}}`)},
			Run: runListPods},
		{Spec: Spec{Name: "describe_pod", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{k8s, metrics, inv},
			Description: "Describe one pod like kubectl describe: the pod object (spec, status, container states, restarts, " +
				"last termination), the events about it (scheduling, image pulls, probe failures, OOM kills, back-offs) and the " +
				"objects it refers to (owner chain, PVC → PV → StorageClass, ConfigMaps, Secrets, ServiceAccount, nodes its " +
				"nodeSelector excludes, services), each found, missing or unknown.",
			Parameters: objectSchema(`{`+nsProp+`,
				"name": {"type": "string", "description": "pod name"}}`, "name")},
			Run: runDescribePod},
		{Spec: Spec{Name: "get_pod_logs", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{k8s, metrics, coding, inv},
			Description: "Read a pod's container logs, the last lines first kept (limit, default 200, at most 2000). previous=true reads " +
				"the crashed previous instance (what it logged before an OOM kill or crash). since/until filter lines that start " +
				"with a timestamp (untimed lines follow the line before them); pattern is a regular expression. No window by default.",
			Parameters: objectSchema(`{`+nsProp+`,
				"pod": {"type": "string", "description": "pod name"},
				"container": {"type": "string", "description": "container name; omitted: every container"},
				"previous": {"type": "boolean", "description": "logs of the previous terminated instance"},
				"since": {"type": "string", "description": "RFC 3339 time or duration back from now (30m, 2h)"},
				"until": {"type": "string", "description": "RFC 3339 time or duration back from now"},
				"pattern": {"type": "string", "description": "regular expression lines must match, e.g. (?i)error|exception"},
				"limit": {"type": "integer", "minimum": 0, "maximum": 2000, "description": "max lines returned (the last ones)"}}`, "pod")},
			Run: runGetPodLogs},
		{Spec: Spec{Name: "get_events", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{k8s, metrics, coding, inv},
			Description: "List Kubernetes events (normalised to core/v1: reason, message, type, count, first and last time) seen since " +
				"a time (default the last hour), in time order per namespace, optionally about one kind and name of object or of one " +
				"type (Warning). At most 200, warnings and the latest kept first.",
			Parameters: objectSchema(`{` + nsProp + `,
				"since": {"type": "string", "description": "RFC 3339 time or duration back from now; default 1h"},
				"kind": {"type": "string", "description": "involved object kind, e.g. Pod, Deployment, Node"},
				"name": {"type": "string", "description": "involved object name"},
				"type": {"type": "string", "enum": ["", "Normal", "Warning"], "description": "event type"}}`)},
			Run: runGetEvents},
		{Spec: Spec{Name: "list_deployments", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{k8s, metrics, coding, inv},
			Description: "List deployments with spec (replicas, images, resources, strategy) and status (ready, available, " +
				"unavailable replicas, Progressing/Available conditions, current revision annotation). At most 200.",
			Parameters: objectSchema(`{` + nsProp + `}`)},
			Run: runListDeployments},
		{Spec: Spec{Name: "get_rollout_history", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{k8s, coding, inv},
			Description: "Rollout history of a deployment: its ReplicaSets ordered by revision (oldest first), each with its pod " +
				"template (images, resources), creation time and replica counts. Shows what changed in the last deploy and when.",
			Parameters: objectSchema(`{`+nsProp+`,
				"deployment": {"type": "string", "description": "deployment name"}}`, "deployment")},
			Run: runRolloutHistory},
		{Spec: Spec{Name: "list_services", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{k8s, metrics, inv},
			Description: "List services with their selectors and ports and their endpoints: the ready pods that receive traffic and " +
				"the not-ready ones. A service with no ready endpoint serves nothing. At most 200.",
			Parameters: objectSchema(`{` + nsProp + `}`)},
			Run: runListServices},
		{Spec: Spec{Name: "list_nodes", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{k8s, metrics, inv},
			Description: "List nodes with conditions (Ready, MemoryPressure, DiskPressure, PIDPressure), capacity, allocatable " +
				"resources, taints and versions. At most 200, not-ready ones kept first.",
			Parameters: objectSchema(`{}`)},
			Run: runListNodes},
		{Spec: Spec{Name: "restart_deployment", Integration: IntegrationKubernetes, ReadOnly: false,
			Description: "Restart a deployment's pods with a rolling restart (like kubectl rollout restart). CHANGES THINGS: refused " +
				"unless the team enables write actions; needs a live cluster (incident bundles are read-only).",
			Parameters: objectSchema(`{`+nsProp+`,
				"name": {"type": "string", "description": "deployment name"}}`, "name")},
			Run: runRestartDeployment},
		{Spec: Spec{Name: "scale_deployment", Integration: IntegrationKubernetes, ReadOnly: false,
			Description: "Set a deployment's replica count (like kubectl scale). CHANGES THINGS: refused unless the team enables write " +
				"actions; needs a live cluster (incident bundles are read-only).",
			Parameters: objectSchema(`{`+nsProp+`,
				"name": {"type": "string", "description": "deployment name"},
				"replicas": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "desired replicas"}}`, "name", "replicas")},
			Run: runScaleDeployment},
	}, kindTools()...)
}

func kubeSource(env *Env) (evidence.Kubernetes, error) {
	if env == nil || env.Sources == nil || env.Sources.Kubernetes == nil {
		return nil, notConfigured(IntegrationKubernetes)
	}
	return env.Sources.Kubernetes, nil
}

func runListNamespaces(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{}
	if err := decodeArgs("list_namespaces", raw, &a); err != nil {
		return nil, err
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	out, err := k.Namespaces(ctx)
	if out == nil && err == nil {
		out = []string{}
	}
	return out, err
}

// podHealthy reports a running, ready pod without restarts.
func podHealthy(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if p.Status.Phase != corev1.PodRunning || !evidence.PodReady(p) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount > 0 {
			return false
		}
	}
	return true
}

func runListPods(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace     string `json:"namespace"`
		LabelSelector string `json:"label_selector"`
	}
	if err := decodeArgs("list_pods", raw, &a); err != nil {
		return nil, err
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	// The shared objects are cut to the list's size before they are copied:
	// a cluster's every pod is never copied whole.
	objs, err := k.Objects(ctx, "Pod", namespaceArg(env, a.Namespace), a.LabelSelector)
	if err != nil {
		return nil, err
	}
	kept := capPreferring(objs, MaxListItems, func(o *evidence.KubeObject) bool { return !podHealthy((*o).(*corev1.Pod)) })
	out := make([]corev1.Pod, 0, len(kept))
	for _, o := range kept {
		out = append(out, *o.(*corev1.Pod))
	}
	return out, nil
}

func runDescribePod(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	const tool = "describe_pod"
	ns, err := objectArgs(env, tool, raw, &a, "name", &a.Name, &a.Namespace)
	if err != nil {
		return nil, err
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	pods, err := k.Pods(ctx, ns, "")
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Name == a.Name })
	if i < 0 {
		return nil, evidence.Errorf(IntegrationKubernetes, evidence.CodeNotFound, "pod %s/%s not found", ns, a.Name)
	}
	evs, err := k.Events(ctx, ns)
	if err != nil {
		return nil, err
	}
	d := PodDescription{Pod: pods[i], Events: []corev1.Event{}}
	for _, e := range evs {
		if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == a.Name {
			d.Events = append(d.Events, e)
		}
	}
	if len(d.Events) > MaxListItems {
		d.Events = d.Events[len(d.Events)-MaxListItems:]
	}
	if rd, err := Describe(ctx, k, "Pod", ns, a.Name); err == nil {
		d.Related = rd.Related
	} else {
		d.Related = []RelatedObject{}
	}
	return d, nil
}

func runGetPodLogs(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace string `json:"namespace"`
		Pod       string `json:"pod"`
		Container string `json:"container"`
		Previous  bool   `json:"previous"`
		Since     string `json:"since"`
		Until     string `json:"until"`
		Pattern   string `json:"pattern"`
		Limit     int    `json:"limit"`
	}
	const tool = "get_pod_logs"
	ns, err := objectArgs(env, tool, raw, &a, "pod", &a.Pod, &a.Namespace)
	if err != nil {
		return nil, err
	}
	q := evidence.PodLogQuery{Namespace: ns, Pod: a.Pod, Container: a.Container, Previous: a.Previous, Pattern: a.Pattern}
	if q.Limit, err = limitArg(tool, "limit", a.Limit, DefaultLogLines, MaxLogLines); err != nil {
		return nil, err
	}
	if q.Since, err = ParseTime(env, tool, "since", a.Since, time.Time{}); err != nil {
		return nil, err
	}
	if q.Until, err = ParseTime(env, tool, "until", a.Until, time.Time{}); err != nil {
		return nil, err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Since.After(q.Until) {
		return nil, invalidArg(tool, "since", "is after until")
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	res, err := k.PodLogs(ctx, q)
	if evidence.CodeOf(err) == evidence.CodeInvalid && a.Pattern != "" && strings.Contains(err.Error(), "regexp") {
		return nil, invalidArg(tool, "pattern", "%v", err)
	}
	return res, err
}

func runGetEvents(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace string `json:"namespace"`
		Since     string `json:"since"`
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Type      string `json:"type"`
	}
	const tool = "get_events"
	if err := decodeArgs(tool, raw, &a); err != nil {
		return nil, err
	}
	if a.Type != "" && a.Type != "Normal" && a.Type != "Warning" {
		return nil, invalidArg(tool, "type", "want Normal or Warning, got %q", a.Type)
	}
	since, err := ParseTime(env, tool, "since", a.Since, clock(env).Add(-DefaultWindow))
	if err != nil {
		return nil, err
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	evs, err := k.Events(ctx, namespaceArg(env, a.Namespace))
	if err != nil {
		return nil, err
	}
	out := evs[:0:len(evs)] // filtered in place: events are not copied twice
	for _, e := range evs {
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		if last.Before(since) ||
			a.Kind != "" && !strings.EqualFold(e.InvolvedObject.Kind, a.Kind) ||
			a.Name != "" && e.InvolvedObject.Name != a.Name ||
			a.Type != "" && e.Type != a.Type {
			continue
		}
		out = append(out, e)
	}
	if len(out) > MaxListItems {
		// keep warnings first, then the latest
		warn := capPreferring(out, MaxListItems, func(e *corev1.Event) bool { return e.Type == corev1.EventTypeWarning })
		if len(warn) == MaxListItems {
			out = warn
		} else {
			out = out[len(out)-MaxListItems:]
		}
	}
	// a copy of what is kept, so the result does not hold every event
	return append(make([]corev1.Event, 0, len(out)), out...), nil
}

func runListDeployments(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace string `json:"namespace"`
	}
	if err := decodeArgs("list_deployments", raw, &a); err != nil {
		return nil, err
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	deps, err := k.Deployments(ctx, namespaceArg(env, a.Namespace))
	if err != nil {
		return nil, err
	}
	out := capPreferring(deps, MaxListItems, func(d *appsv1.Deployment) bool { return d.Status.UnavailableReplicas > 0 })
	if out == nil {
		out = []appsv1.Deployment{}
	}
	return out, nil
}

// revision is a ReplicaSet's deployment.kubernetes.io/revision.
func revision(rs *appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
	return n
}

func runRolloutHistory(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace  string `json:"namespace"`
		Deployment string `json:"deployment"`
	}
	const tool = "get_rollout_history"
	ns, err := objectArgs(env, tool, raw, &a, "deployment", &a.Deployment, &a.Namespace)
	if err != nil {
		return nil, err
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	deps, err := k.Deployments(ctx, ns)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(deps, func(d appsv1.Deployment) bool { return d.Name == a.Deployment }) {
		return nil, evidence.Errorf(IntegrationKubernetes, evidence.CodeNotFound, "deployment %s/%s not found", ns, a.Deployment)
	}
	rss, err := k.ReplicaSets(ctx, ns)
	if err != nil {
		return nil, err
	}
	out := []appsv1.ReplicaSet{}
	for _, rs := range rss {
		for _, o := range rs.OwnerReferences {
			if o.Kind == "Deployment" && o.Name == a.Deployment {
				out = append(out, rs)
				break
			}
		}
	}
	slices.SortStableFunc(out, func(x, y appsv1.ReplicaSet) int {
		if c := revision(&x) - revision(&y); c != 0 {
			if c < 0 {
				return -1
			}
			return 1
		}
		return x.CreationTimestamp.Compare(y.CreationTimestamp.Time)
	})
	if len(out) > MaxListItems {
		out = out[len(out)-MaxListItems:]
	}
	return out, nil
}

func runListServices(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace string `json:"namespace"`
	}
	if err := decodeArgs("list_services", raw, &a); err != nil {
		return nil, err
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	ns := namespaceArg(env, a.Namespace)
	svcs, err := k.Services(ctx, ns)
	if err != nil {
		return nil, err
	}
	eps, err := k.Endpoints(ctx, ns)
	if err != nil {
		return nil, err
	}
	byName := map[string]*corev1.Endpoints{}
	for i := range eps {
		byName[eps[i].Namespace+"/"+eps[i].Name] = &eps[i]
	}
	addr := func(a corev1.EndpointAddress) string {
		if a.TargetRef != nil && a.TargetRef.Name != "" {
			return a.TargetRef.Name + " (" + a.IP + ")"
		}
		return a.IP
	}
	out := make([]ServiceStatus, 0, min(len(svcs), MaxListItems))
	for _, s := range svcs {
		st := ServiceStatus{Service: s, ReadyEndpoints: []string{}, NotReadyEndpoints: []string{}}
		if ep := byName[s.Namespace+"/"+s.Name]; ep != nil {
			for _, ss := range ep.Subsets {
				for _, x := range ss.Addresses {
					st.ReadyEndpoints = append(st.ReadyEndpoints, addr(x))
				}
				for _, x := range ss.NotReadyAddresses {
					st.NotReadyEndpoints = append(st.NotReadyEndpoints, addr(x))
				}
			}
		}
		out = append(out, st)
	}
	return capPreferring(out, MaxListItems, func(s *ServiceStatus) bool {
		return len(s.ReadyEndpoints) == 0 && len(s.Service.Spec.Selector) > 0
	}), nil
}

func runListNodes(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{}
	if err := decodeArgs("list_nodes", raw, &a); err != nil {
		return nil, err
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	nodes, err := k.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := capPreferring(nodes, MaxListItems, func(n *corev1.Node) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status != corev1.ConditionTrue
			}
		}
		return true
	})
	if out == nil {
		out = []corev1.Node{}
	}
	return out, nil
}

func deploymentWriter(env *Env, tool string) (DeploymentWriter, error) {
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	w, ok := k.(DeploymentWriter)
	if !ok {
		return nil, evidence.Errorf(IntegrationKubernetes, evidence.CodeInvalid,
			"%s needs a live cluster: this investigation reads an incident bundle, and bundles are read-only", tool)
	}
	return w, nil
}

func runRestartDeployment(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	const tool = "restart_deployment"
	ns, err := objectArgs(env, tool, raw, &a, "name", &a.Name, &a.Namespace)
	if err != nil {
		return nil, err
	}
	w, err := deploymentWriter(env, tool)
	if err != nil {
		return nil, err
	}
	if err := w.RestartDeployment(ctx, ns, a.Name, clock(env)); err != nil {
		return nil, err
	}
	return WriteStatus{Action: "restart", Namespace: ns, Name: a.Name,
		Message: fmt.Sprintf("deployment %s/%s restarted (rolling restart started)", ns, a.Name)}, nil
}

func runScaleDeployment(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		Replicas  *int   `json:"replicas"`
	}
	const tool = "scale_deployment"
	if err := decodeArgs(tool, raw, &a); err != nil {
		return nil, err
	}
	if err := requireArg(tool, "name", a.Name); err != nil {
		return nil, err
	}
	if a.Replicas == nil {
		return nil, invalidArg(tool, "replicas", "is required")
	}
	if *a.Replicas < 0 || *a.Replicas > MaxReplicas {
		return nil, invalidArg(tool, "replicas", "want 0 to %d, got %d", MaxReplicas, *a.Replicas)
	}
	ns, err := namespaceRequired(env, tool, a.Namespace)
	if err != nil {
		return nil, err
	}
	w, err := deploymentWriter(env, tool)
	if err != nil {
		return nil, err
	}
	n := int32(*a.Replicas)
	if err := w.ScaleDeployment(ctx, ns, a.Name, n); err != nil {
		return nil, err
	}
	return WriteStatus{Action: "scale", Namespace: ns, Name: a.Name, Replicas: &n,
		Message: fmt.Sprintf("deployment %s/%s scaled to %d replicas", ns, a.Name, n)}, nil
}
