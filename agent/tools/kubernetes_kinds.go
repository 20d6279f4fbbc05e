package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// ResourceDescription is describe_resource's result: one object, the events
// about it, and the objects it refers to or that refer to it.
type ResourceDescription struct {
	Kind    string              `json:"kind"`
	Object  evidence.KubeObject `json:"object"`
	Events  []corev1.Event      `json:"events"`
	Related []RelatedObject     `json:"related"`
}

// Relation statuses of a RelatedObject.
const (
	RelFound   = "found"   // the object is in the evidence
	RelMissing = "missing" // the evidence holds that kind, but not this object
	RelUnknown = "unknown" // the evidence holds nothing of that kind (never guessed)
)

// RelatedObject is one object reached from a described object.
type RelatedObject struct {
	// Relation says how it is reached: owner, owned, pod, node,
	// volume_claim, volume, storage_class, config_map, secret,
	// service_account, image_pull_secret, service, endpoints,
	// endpoint_slice, ingress, scale_target, autoscaler,
	// disruption_budget, network_policy, role, subject, job.
	Relation  string `json:"relation"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	// Detail is what the reference says about it (a missing key, a
	// nodeSelector no node matches, a claim's phase...).
	Detail string              `json:"detail,omitempty"`
	Object evidence.KubeObject `json:"object,omitempty"`
}

// MaxRelated bounds the related objects of one description.
const MaxRelated = 100

func kindTools() []Tool {
	// The specialists' default toolkits are fixed (spec 2.6): these tools
	// are in investigation_agent's, and others enable them as extra tools.
	inv := AgentInvestigation
	kinds := strings.Join(evidence.KindNames(), ", ")
	kindProp := `"kind": {"type": "string", "description": "kind, plural or short name: ` + kinds + ` (also pvc, hpa, cm, sa, svc, deploy, sts...)"}`
	return []Tool{
		{Spec: Spec{Name: "list_resources", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{inv},
			Description: "List Kubernetes objects of any kind read (" + kinds + ") with their full spec and status, like kubectl get -o yaml. " +
				"Secrets show metadata and key names only, never values. At most 200; narrow with label_selector.",
			Parameters: objectSchema(`{`+kindProp+`, `+nsProp+`,
				"label_selector": {"type": "string", "description": "Kubernetes label selector, e.g. app=checkout"}}`, "kind")},
			Run: runListResources},
		{Spec: Spec{Name: "describe_resource", Integration: IntegrationKubernetes, ReadOnly: true, Agents: []string{inv},
			Description: "Describe one Kubernetes object of any kind read and walk its references: the owner chain (pod → ReplicaSet → " +
				"Deployment, Job → CronJob), pod → PVC → PV and StorageClass, pod → ConfigMaps, Secrets (key names only) and " +
				"ServiceAccount (missing objects and keys flagged; the keys of one known only from a `kubectl get` table row are \"not shown\", never missing), pod nodeSelector against node labels, Service → endpoints → pods, " +
				"Ingress → Services, HPA → scale target, and the events about it. Related objects are found, missing (the evidence " +
				"holds that kind but not the object) or unknown (the evidence holds nothing of that kind).",
			Parameters: objectSchema(`{`+kindProp+`, `+nsProp+`,
				"name": {"type": "string", "description": "object name"}}`, "kind", "name")},
			Run: runDescribeResource},
	}
}

func kindArg(tool, kind string) (evidence.KindInfo, error) {
	if strings.TrimSpace(kind) == "" {
		return evidence.KindInfo{}, invalidArg(tool, "kind", "is required")
	}
	ki, ok := evidence.LookupKind(kind)
	if !ok {
		return evidence.KindInfo{}, invalidArg(tool, "kind", "unknown kind %q (kinds read: %s)", kind, strings.Join(evidence.KindNames(), ", "))
	}
	return ki, nil
}

func runListResources(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Kind          string `json:"kind"`
		Namespace     string `json:"namespace"`
		LabelSelector string `json:"label_selector"`
	}
	const tool = "list_resources"
	if err := decodeArgs(tool, raw, &a); err != nil {
		return nil, err
	}
	ki, err := kindArg(tool, a.Kind)
	if err != nil {
		return nil, err
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	objs, err := k.Objects(ctx, ki.Kind, namespaceArg(env, a.Namespace), a.LabelSelector)
	if err != nil {
		return nil, err
	}
	if objs == nil {
		objs = []evidence.KubeObject{}
	}
	return capPreferring(objs, MaxListItems, func(o *evidence.KubeObject) bool { return unhealthy(*o) }), nil
}

// unhealthy is a cheap test of objects worth keeping first in a cut list.
func unhealthy(o evidence.KubeObject) bool {
	switch x := o.(type) {
	case *corev1.Pod:
		return !podHealthy(x)
	case *corev1.Event:
		return x.Type == corev1.EventTypeWarning
	case *batchv1.Job:
		return x.Status.Failed > 0
	case *corev1.PersistentVolumeClaim:
		return x.Status.Phase != corev1.ClaimBound
	case *appsv1.Deployment:
		return x.Status.UnavailableReplicas > 0
	case *appsv1.StatefulSet:
		return x.Status.ReadyReplicas < x.Status.Replicas
	}
	return false
}

func runDescribeResource(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	const tool = "describe_resource"
	if err := decodeArgs(tool, raw, &a); err != nil {
		return nil, err
	}
	ki, err := kindArg(tool, a.Kind)
	if err != nil {
		return nil, err
	}
	if err := requireArg(tool, "name", a.Name); err != nil {
		return nil, err
	}
	ns := ""
	if ki.Namespaced {
		if ns, err = namespaceRequired(env, tool, a.Namespace); err != nil {
			return nil, err
		}
	}
	k, err := kubeSource(env)
	if err != nil {
		return nil, err
	}
	return Describe(ctx, k, ki.Kind, ns, a.Name)
}

// Describe finds one object and walks its references (describe_resource).
func Describe(ctx context.Context, k evidence.Kubernetes, kind, namespace, name string) (*ResourceDescription, error) {
	obj, err := evidence.GetObject(ctx, k, kind, namespace, name)
	if err != nil {
		return nil, err
	}
	ki, _ := evidence.LookupKind(kind)
	w := &walker{ctx: ctx, k: k, cache: map[string][]evidence.KubeObject{}, held: map[string]bool{}}
	d := &ResourceDescription{Kind: ki.Kind, Object: obj, Events: []corev1.Event{}, Related: []RelatedObject{}}
	if ki.Kind != "Event" {
		evs, err := k.Events(ctx, obj.GetNamespace())
		if err != nil && evidence.CodeOf(err) != evidence.CodeNotFound {
			return nil, err
		}
		for _, e := range evs {
			if strings.EqualFold(e.InvolvedObject.Kind, ki.Kind) && e.InvolvedObject.Name == name &&
				(e.InvolvedObject.Namespace == "" || e.InvolvedObject.Namespace == obj.GetNamespace()) {
				d.Events = append(d.Events, e)
			}
		}
		if len(d.Events) > MaxListItems {
			d.Events = d.Events[len(d.Events)-MaxListItems:]
		}
	}
	if err := w.walk(obj); err != nil {
		return nil, err
	}
	d.Related = w.out
	if len(d.Related) > MaxRelated {
		d.Related = d.Related[:MaxRelated]
	}
	return d, nil
}

// walker follows references, reading each kind once.
type walker struct {
	ctx    context.Context
	k      evidence.Kubernetes
	cache  map[string][]evidence.KubeObject // "Kind/namespace"
	held   map[string]bool
	seen   map[string]bool
	out    []RelatedObject
	err    error
	failed map[string]error // kinds that could not be listed
}

func (w *walker) list(kind, ns string) []evidence.KubeObject {
	key := kind + "/" + ns
	if objs, ok := w.cache[key]; ok {
		return objs
	}
	objs, err := w.k.Objects(w.ctx, kind, ns, "")
	switch {
	case err != nil && w.ctx.Err() != nil:
		w.err = err
	case err != nil:
		// A kind that cannot be read (credentials that may not list
		// Secrets): its references are unknown, the rest is described.
		if w.failed == nil {
			w.failed = map[string]error{}
		}
		w.failed[kind] = err
	}
	w.cache[key] = objs
	return objs
}

// holds reports whether the evidence holds kind at all (live: always).
func (w *walker) holds(kind string) bool {
	h, ok := w.k.(evidence.KindHolder)
	if !ok {
		return true
	}
	v, seen := w.held[kind]
	if !seen {
		v = h.HoldsKind(w.ctx, kind)
		w.held[kind] = v
	}
	return v
}

func (w *walker) find(kind, ns, name string) evidence.KubeObject {
	for _, o := range w.list(kind, ns) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

// ref records a reference by name; withObject includes the object found.
func (w *walker) ref(rel, kind, ns, name, detail string, withObject bool) evidence.KubeObject {
	if name == "" {
		return nil
	}
	if ki, ok := evidence.LookupKind(kind); ok && !ki.Namespaced {
		ns = ""
	}
	key := rel + "/" + kind + "/" + ns + "/" + name
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	o := w.find(kind, ns, name)
	if w.seen[key] {
		return o
	}
	w.seen[key] = true
	r := RelatedObject{Relation: rel, Kind: kind, Namespace: ns, Name: name, Detail: detail}
	switch {
	case o != nil:
		r.Status = RelFound
		if withObject {
			r.Object = o
		}
	case w.failed[kind] != nil:
		r.Status = RelUnknown
		r.Detail = strings.TrimPrefix(r.Detail+"; "+kind+" could not be read: "+w.failed[kind].Error(), "; ")
	case w.holds(kind):
		r.Status = RelMissing
	default:
		r.Status = RelUnknown
	}
	w.out = append(w.out, r)
	return o
}

// add records an object found by a search (owned pods, selecting services).
func (w *walker) add(rel string, o evidence.KubeObject, detail string, withObject bool) {
	r := RelatedObject{Relation: rel, Kind: evidence.KindOf(o), Namespace: o.GetNamespace(), Name: o.GetName(), Status: RelFound, Detail: detail}
	key := rel + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	if withObject {
		r.Object = o
	}
	w.out = append(w.out, r)
}

func (w *walker) walk(obj evidence.KubeObject) error {
	ns := obj.GetNamespace()
	chain := w.owners(obj)
	switch x := obj.(type) {
	case *corev1.Pod:
		w.podSpec(ns, &x.Spec, x.Spec.NodeName == "")
		w.selecting(x)
		// The autoscaler of the workload that owns the pod decides how
		// many of its siblings there may be.
		for _, o := range chain {
			switch o.(type) {
			case *appsv1.Deployment, *appsv1.StatefulSet, *appsv1.ReplicaSet:
				w.autoscalers(o)
			}
		}
		if len(x.OwnerReferences) == 0 {
			w.autoscalersByName(x)
		}
	case *appsv1.Deployment:
		w.podSpec(ns, &x.Spec.Template.Spec, false)
		w.owned(obj, "ReplicaSet")
		w.autoscalers(obj)
	case *appsv1.ReplicaSet:
		w.podSpec(ns, &x.Spec.Template.Spec, false)
		w.owned(obj, "Pod")
	case *appsv1.StatefulSet:
		w.podSpec(ns, &x.Spec.Template.Spec, false)
		w.ref("service", "Service", ns, x.Spec.ServiceName, "governing service", false)
		w.owned(obj, "Pod")
		w.autoscalers(obj)
	case *appsv1.DaemonSet:
		w.podSpec(ns, &x.Spec.Template.Spec, false)
		w.owned(obj, "Pod")
	case *batchv1.Job:
		w.podSpec(ns, &x.Spec.Template.Spec, false)
		w.owned(obj, "Pod")
	case *batchv1.CronJob:
		w.podSpec(ns, &x.Spec.JobTemplate.Spec.Template.Spec, false)
		w.owned(obj, "Job")
	case *corev1.Service:
		w.service(x)
	case *corev1.Endpoints:
		w.ref("service", "Service", ns, x.Name, "", true)
	case *networkingv1.Ingress:
		w.ingress(x)
	case *autoscalingv2.HorizontalPodAutoscaler:
		detail := fmt.Sprintf("replicas %d current, %d desired, min %d max %d", x.Status.CurrentReplicas, x.Status.DesiredReplicas, ptrOr(x.Spec.MinReplicas, 1), x.Spec.MaxReplicas)
		w.ref("scale_target", x.Spec.ScaleTargetRef.Kind, ns, x.Spec.ScaleTargetRef.Name, detail, true)
	case *corev1.PersistentVolumeClaim:
		w.claim(ns, x)
		for _, o := range w.list("Pod", ns) {
			p := o.(*corev1.Pod)
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == x.Name {
					w.add("pod", p, string(p.Status.Phase), false)
				}
			}
		}
	case *corev1.PersistentVolume:
		if c := x.Spec.ClaimRef; c != nil {
			w.ref("volume_claim", "PersistentVolumeClaim", c.Namespace, c.Name, "", true)
		}
		w.ref("storage_class", "StorageClass", "", x.Spec.StorageClassName, "", true)
	case *corev1.ServiceAccount:
		for _, s := range x.Secrets {
			w.ref("secret", "Secret", ns, s.Name, "", true)
		}
		for _, s := range x.ImagePullSecrets {
			w.ref("image_pull_secret", "Secret", ns, s.Name, "", true)
		}
	case *rbacv1.RoleBinding:
		w.ref("role", x.RoleRef.Kind, ns, x.RoleRef.Name, "", true)
		w.subjects(ns, x.Subjects)
	case *rbacv1.ClusterRoleBinding:
		w.ref("role", x.RoleRef.Kind, "", x.RoleRef.Name, "", true)
		w.subjects("", x.Subjects)
	case *policyv1.PodDisruptionBudget:
		w.selectedPods(ns, x.Spec.Selector, fmt.Sprintf("disruptions allowed %d", x.Status.DisruptionsAllowed))
	case *networkingv1.NetworkPolicy:
		w.selectedPods(ns, &x.Spec.PodSelector, "")
	case *corev1.Node:
		n := 0
		for _, o := range w.list("Pod", "") {
			if p := o.(*corev1.Pod); p.Spec.NodeName == x.Name && n < 50 {
				w.add("pod", p, string(p.Status.Phase), false)
				n++
			}
		}
	case *corev1.Event:
		io := x.InvolvedObject
		w.ref("involved_object", io.Kind, cmp.Or(io.Namespace, ns), io.Name, "", true)
	}
	return w.err
}

func ptrOr(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

// owners walks the controller owner chain upwards and returns the owners
// found, nearest first.
func (w *walker) owners(obj evidence.KubeObject) []evidence.KubeObject {
	var chain []evidence.KubeObject
	cur := obj
	for depth := 0; depth < 5 && cur != nil; depth++ {
		var next evidence.KubeObject
		for _, o := range cur.GetOwnerReferences() {
			if o.Controller != nil && !*o.Controller && len(cur.GetOwnerReferences()) > 1 {
				continue
			}
			if _, ok := evidence.LookupKind(o.Kind); !ok {
				w.out = append(w.out, RelatedObject{Relation: "owner", Kind: o.Kind, Namespace: cur.GetNamespace(), Name: o.Name, Status: RelUnknown,
					Detail: "a kind rootcause does not read"})
				continue
			}
			next = w.ref("owner", o.Kind, cur.GetNamespace(), o.Name, "", true)
			break
		}
		if next != nil {
			chain = append(chain, next)
		}
		cur = next
	}
	return chain
}

// owned lists the objects of kind whose controller is obj.
func (w *walker) owned(obj evidence.KubeObject, kind string) {
	n := 0
	for _, o := range w.list(kind, obj.GetNamespace()) {
		for _, r := range o.GetOwnerReferences() {
			if r.Name == obj.GetName() && strings.EqualFold(r.Kind, evidence.KindOf(obj)) && n < 50 {
				detail := ""
				if p, ok := o.(*corev1.Pod); ok {
					detail = podSummary(p)
				}
				w.add("owned", o, detail, false)
				n++
			}
		}
	}
}

func podSummary(p *corev1.Pod) string {
	parts := []string{string(p.Status.Phase)}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			parts = append(parts, cs.Name+" "+cs.State.Waiting.Reason)
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("%s last terminated %s (exit %d)", cs.Name, t.Reason, t.ExitCode))
		}
		if cs.RestartCount > 0 {
			parts = append(parts, fmt.Sprintf("%s restarts %d", cs.Name, cs.RestartCount))
		}
	}
	if evidence.PodReady(p) {
		parts = append(parts, "ready")
	}
	return strings.Join(parts, ", ")
}

// podSpec follows a pod (template) spec's references. unscheduled adds the
// nodes its nodeSelector and required node affinity exclude.
func (w *walker) podSpec(ns string, s *corev1.PodSpec, unscheduled bool) {
	if s.NodeName != "" {
		w.ref("node", "Node", "", s.NodeName, "", true)
	} else if unscheduled {
		w.placement(s)
	}
	w.ref("service_account", "ServiceAccount", ns, cmp.Or(s.ServiceAccountName, s.DeprecatedServiceAccount, "default"), "", true)
	for _, ps := range s.ImagePullSecrets {
		w.ref("image_pull_secret", "Secret", ns, ps.Name, "", true)
	}
	for _, v := range s.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			if pvc := w.ref("volume_claim", "PersistentVolumeClaim", ns, v.PersistentVolumeClaim.ClaimName, "volume "+v.Name, true); pvc != nil {
				w.claim(ns, pvc.(*corev1.PersistentVolumeClaim))
			}
		case v.ConfigMap != nil:
			w.keyRefs("config_map", "ConfigMap", ns, v.ConfigMap.Name, "volume "+v.Name, v.ConfigMap.Optional, itemKeys(v.ConfigMap.Items))
		case v.Secret != nil:
			w.keyRefs("secret", "Secret", ns, v.Secret.SecretName, "volume "+v.Name, v.Secret.Optional, itemKeys(v.Secret.Items))
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					w.keyRefs("config_map", "ConfigMap", ns, src.ConfigMap.Name, "volume "+v.Name, src.ConfigMap.Optional, itemKeys(src.ConfigMap.Items))
				}
				if src.Secret != nil {
					w.keyRefs("secret", "Secret", ns, src.Secret.Name, "volume "+v.Name, src.Secret.Optional, itemKeys(src.Secret.Items))
				}
			}
		}
	}
	containers := append(slices.Clone(s.InitContainers), s.Containers...)
	for _, c := range containers {
		for _, ef := range c.EnvFrom {
			if ef.ConfigMapRef != nil {
				w.keyRefs("config_map", "ConfigMap", ns, ef.ConfigMapRef.Name, "envFrom of container "+c.Name, ef.ConfigMapRef.Optional, nil)
			}
			if ef.SecretRef != nil {
				w.keyRefs("secret", "Secret", ns, ef.SecretRef.Name, "envFrom of container "+c.Name, ef.SecretRef.Optional, nil)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				w.keyRefs("config_map", "ConfigMap", ns, r.Name, "env "+e.Name+" of container "+c.Name, r.Optional, []string{r.Key})
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				w.keyRefs("secret", "Secret", ns, r.Name, "env "+e.Name+" of container "+c.Name, r.Optional, []string{r.Key})
			}
		}
	}
}

func itemKeys(items []corev1.KeyToPath) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

// keyRefs records a ConfigMap or Secret reference and the keys it needs
// that the object lacks.
func (w *walker) keyRefs(rel, kind, ns, name, use string, optional *bool, keys []string) {
	o := w.find(kind, ns, name)
	detail := use
	if optional != nil && *optional {
		detail += " (optional)"
	}
	if o != nil && len(keys) > 0 && keysUnknown(o) {
		// a kubectl get table row: it counts the keys but does not name them
		detail += "; keys not shown (a kubectl get row: " + o.GetAnnotations()[kubetext.DataCountAnnotation] + " keys)"
	} else if o != nil && len(keys) > 0 {
		have := map[string]bool{}
		switch x := o.(type) {
		case *corev1.ConfigMap:
			for k := range x.Data {
				have[k] = true
			}
			for k := range x.BinaryData {
				have[k] = true
			}
		case *corev1.Secret:
			for k := range x.Data {
				have[k] = true
			}
		}
		var missing []string
		for _, k := range keys {
			if !have[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			detail += "; key " + strings.Join(missing, ", ") + " not found in " + kind + " " + name
		}
	}
	w.ref(rel, kind, ns, name, detail, true)
}

// keysUnknown reports a ConfigMap or Secret read from a kubectl get table
// row, whose keys the evidence does not show (never reported missing).
func keysUnknown(o evidence.KubeObject) bool {
	if _, ok := o.GetAnnotations()[kubetext.DataCountAnnotation]; !ok {
		return false
	}
	switch x := o.(type) {
	case *corev1.ConfigMap:
		return len(x.Data)+len(x.BinaryData) == 0
	case *corev1.Secret:
		return len(x.Data) == 0
	}
	return false
}

// claim follows a PVC to its volume and StorageClass (the default class
// when the claim names none).
func (w *walker) claim(ns string, pvc *corev1.PersistentVolumeClaim) {
	if pvc.Spec.VolumeName != "" {
		w.ref("volume", "PersistentVolume", "", pvc.Spec.VolumeName, "bound to claim "+pvc.Name, true)
	}
	sc := ""
	if pvc.Spec.StorageClassName != nil {
		sc = *pvc.Spec.StorageClassName
	}
	if sc == "" && pvc.Spec.StorageClassName == nil {
		for _, o := range w.list("StorageClass", "") {
			if o.GetAnnotations()["storageclass.kubernetes.io/is-default-class"] == "true" {
				sc = o.GetName()
			}
		}
	}
	if sc != "" {
		w.ref("storage_class", "StorageClass", "", sc, fmt.Sprintf("class of claim %s (%s)", pvc.Name, pvc.Status.Phase), true)
	}
}

// placement reports the nodes a pending pod's nodeSelector and required
// node affinity exclude.
func (w *walker) placement(s *corev1.PodSpec) {
	nodes := w.list("Node", "")
	if len(nodes) == 0 {
		return
	}
	sel := labels.SelectorFromSet(s.NodeSelector)
	for _, o := range nodes {
		n := o.(*corev1.Node)
		var why []string
		if len(s.NodeSelector) > 0 && !sel.Matches(labels.Set(n.Labels)) {
			var miss []string
			for k, v := range s.NodeSelector {
				if n.Labels[k] != v {
					got := n.Labels[k]
					if got == "" {
						got = "(absent)"
					}
					miss = append(miss, fmt.Sprintf("%s=%s (node has %s)", k, v, got))
				}
			}
			slices.Sort(miss)
			why = append(why, "nodeSelector "+strings.Join(miss, ", "))
		}
		if a := s.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			if !affinityMatches(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, n.Labels) {
				why = append(why, "required node affinity does not match")
			}
		}
		for _, t := range n.Spec.Taints {
			if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !tolerated(s.Tolerations, t) {
				why = append(why, fmt.Sprintf("untolerated taint %s=%s:%s", t.Key, t.Value, t.Effect))
			}
		}
		if len(why) > 0 {
			w.add("node", n, "excluded: "+strings.Join(why, "; "), false)
		} else {
			w.add("node", n, "eligible", false)
		}
	}
}

func affinityMatches(sel *corev1.NodeSelector, lbls map[string]string) bool {
	for _, term := range sel.NodeSelectorTerms {
		ok := true
		for _, e := range term.MatchExpressions {
			v, has := lbls[e.Key]
			switch e.Operator {
			case corev1.NodeSelectorOpIn:
				ok = ok && has && slices.Contains(e.Values, v)
			case corev1.NodeSelectorOpNotIn:
				ok = ok && !slices.Contains(e.Values, v)
			case corev1.NodeSelectorOpExists:
				ok = ok && has
			case corev1.NodeSelectorOpDoesNotExist:
				ok = ok && !has
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func tolerated(ts []corev1.Toleration, t corev1.Taint) bool {
	for _, tol := range ts {
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		if tol.Key == "" && tol.Operator == corev1.TolerationOpExists ||
			tol.Key == t.Key && (tol.Operator == corev1.TolerationOpExists || tol.Value == t.Value) {
			return true
		}
	}
	return false
}

// selecting lists the services, PDBs, network policies and autoscalers
// that apply to a pod.
func (w *walker) selecting(p *corev1.Pod) {
	set := labels.Set(p.Labels)
	for _, o := range w.list("Service", p.Namespace) {
		s := o.(*corev1.Service)
		if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(set) {
			w.add("service", s, "", false)
		}
	}
	for _, o := range w.list("PodDisruptionBudget", p.Namespace) {
		b := o.(*policyv1.PodDisruptionBudget)
		if sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(set) {
			w.add("disruption_budget", b, fmt.Sprintf("disruptions allowed %d", b.Status.DisruptionsAllowed), false)
		}
	}
	for _, o := range w.list("NetworkPolicy", p.Namespace) {
		np := o.(*networkingv1.NetworkPolicy)
		if sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err == nil && sel.Matches(set) {
			w.add("network_policy", np, "policy types "+fmt.Sprint(np.Spec.PolicyTypes), true)
		}
	}
}

// autoscalers lists the HPAs whose scale target is obj.
func (w *walker) autoscalers(obj evidence.KubeObject) {
	for _, o := range w.list("HorizontalPodAutoscaler", obj.GetNamespace()) {
		h := o.(*autoscalingv2.HorizontalPodAutoscaler)
		if h.Spec.ScaleTargetRef.Name == obj.GetName() && strings.EqualFold(h.Spec.ScaleTargetRef.Kind, evidence.KindOf(obj)) {
			w.add("autoscaler", h, autoscalerDetail(h), true)
		}
	}
}

// Pod names the controllers give: a Deployment's pods are
// <deployment>-<pod-template-hash>-<suffix>, a StatefulSet's <name>-<ordinal>.
var (
	deploymentPodRE  = regexp.MustCompile(`^(.+)-[a-z0-9]{6,10}-[a-z0-9]{5}$`)
	statefulSetPodRE = regexp.MustCompile(`^(.+)-[0-9]+$`)
)

// autoscalersByName relates a pod whose owner references the evidence
// lacks (a row of a kubectl get table) to the HPA of the Deployment or
// StatefulSet its name says it belongs to.
func (w *walker) autoscalersByName(p *corev1.Pod) {
	for _, o := range w.list("HorizontalPodAutoscaler", p.Namespace) {
		h := o.(*autoscalingv2.HorizontalPodAutoscaler)
		var re *regexp.Regexp
		switch h.Spec.ScaleTargetRef.Kind {
		case "Deployment":
			re = deploymentPodRE
		case "StatefulSet":
			re = statefulSetPodRE
		default:
			continue
		}
		if m := re.FindStringSubmatch(p.Name); m != nil && m[1] == h.Spec.ScaleTargetRef.Name {
			w.add("autoscaler", h, autoscalerDetail(h)+"; owner "+h.Spec.ScaleTargetRef.Kind+" "+m[1]+" inferred from the pod name", true)
		}
	}
}

// autoscalerDetail summarises an HPA: its replicas against its bounds, its
// metrics (current/target) and a ScalingLimited condition that is true.
func autoscalerDetail(h *autoscalingv2.HorizontalPodAutoscaler) string {
	d := fmt.Sprintf("replicas %d current, %d desired, max %d", h.Status.CurrentReplicas, h.Status.DesiredReplicas, h.Spec.MaxReplicas)
	var ms []string
	for _, m := range h.Spec.Metrics {
		name, target := metricTarget(m)
		cur := "?"
		for _, c := range h.Status.CurrentMetrics {
			if cn, cv := metricCurrent(c); cn == name && c.Type == m.Type {
				cur = cv
				break
			}
		}
		if name != "" {
			ms = append(ms, name+" "+cur+"/"+target)
		}
	}
	if len(ms) > 0 {
		d += "; metrics " + strings.Join(ms, ", ")
	}
	for _, c := range h.Status.Conditions {
		if c.Type == autoscalingv2.ScalingLimited && c.Status == corev1.ConditionTrue {
			d += "; ScalingLimited (" + c.Reason + ")"
		}
	}
	return d
}

// metricTarget names an HPA metric and renders its target.
func metricTarget(m autoscalingv2.MetricSpec) (name, target string) {
	var t autoscalingv2.MetricTarget
	switch {
	case m.Resource != nil:
		name, t = m.Resource.Name.String(), m.Resource.Target
	case m.ContainerResource != nil:
		name, t = m.ContainerResource.Name.String(), m.ContainerResource.Target
	case m.Pods != nil:
		name, t = m.Pods.Metric.Name, m.Pods.Target
	case m.Object != nil:
		name, t = m.Object.Metric.Name, m.Object.Target
	case m.External != nil:
		name, t = m.External.Metric.Name, m.External.Target
	default:
		return "", ""
	}
	switch {
	case t.AverageUtilization != nil:
		return name, fmt.Sprintf("%d%%", *t.AverageUtilization)
	case t.AverageValue != nil:
		return name, t.AverageValue.String()
	case t.Value != nil:
		return name, t.Value.String()
	}
	return name, "?"
}

// metricCurrent names an HPA metric status and renders its current value.
func metricCurrent(m autoscalingv2.MetricStatus) (name, cur string) {
	var v autoscalingv2.MetricValueStatus
	switch {
	case m.Resource != nil:
		name, v = m.Resource.Name.String(), m.Resource.Current
	case m.ContainerResource != nil:
		name, v = m.ContainerResource.Name.String(), m.ContainerResource.Current
	case m.Pods != nil:
		name, v = m.Pods.Metric.Name, m.Pods.Current
	case m.Object != nil:
		name, v = m.Object.Metric.Name, m.Object.Current
	case m.External != nil:
		name, v = m.External.Metric.Name, m.External.Current
	default:
		return "", ""
	}
	switch {
	case v.AverageUtilization != nil:
		return name, fmt.Sprintf("%d%%", *v.AverageUtilization)
	case v.AverageValue != nil:
		return name, v.AverageValue.String()
	case v.Value != nil:
		return name, v.Value.String()
	}
	return name, "?"
}

// service follows a Service to its endpoints, slices, pods and ingresses.
func (w *walker) service(s *corev1.Service) {
	ns := s.Namespace
	eps, err := w.k.Endpoints(w.ctx, ns)
	if err != nil && w.err == nil {
		w.err = err
	}
	for i := range eps {
		if eps[i].Name == s.Name {
			ready, notReady := 0, 0
			for _, ss := range eps[i].Subsets {
				ready += len(ss.Addresses)
				notReady += len(ss.NotReadyAddresses)
			}
			w.add("endpoints", &eps[i], fmt.Sprintf("%d ready, %d not ready addresses", ready, notReady), true)
		}
	}
	for _, o := range w.list("EndpointSlice", ns) {
		if o.GetLabels()["kubernetes.io/service-name"] == s.Name {
			w.add("endpoint_slice", o, "", true)
		}
	}
	if len(s.Spec.Selector) > 0 {
		sel := labels.SelectorFromSet(s.Spec.Selector)
		n := 0
		for _, o := range w.list("Pod", ns) {
			if p := o.(*corev1.Pod); sel.Matches(labels.Set(p.Labels)) && n < 50 {
				w.add("pod", p, podSummary(p), false)
				n++
			}
		}
	}
	for _, o := range w.list("Ingress", ns) {
		ing := o.(*networkingv1.Ingress)
		if slices.Contains(ingressServices(ing), s.Name) {
			w.add("ingress", ing, "", false)
		}
	}
}

func ingressServices(ing *networkingv1.Ingress) []string {
	var out []string
	if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
		out = append(out, b.Service.Name)
	}
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if p.Backend.Service != nil {
				out = append(out, p.Backend.Service.Name)
			}
		}
	}
	return out
}

func (w *walker) ingress(ing *networkingv1.Ingress) {
	for _, name := range ingressServices(ing) {
		w.ref("service", "Service", ing.Namespace, name, "", true)
	}
	for _, t := range ing.Spec.TLS {
		w.ref("secret", "Secret", ing.Namespace, t.SecretName, "TLS certificate", true)
	}
	if c := ing.Spec.IngressClassName; c != nil {
		w.out = append(w.out, RelatedObject{Relation: "ingress_class", Kind: "IngressClass", Name: *c, Status: RelUnknown, Detail: "a kind rootcause does not read"})
	}
}

func (w *walker) subjects(ns string, subs []rbacv1.Subject) {
	for _, s := range subs {
		if s.Kind == "ServiceAccount" {
			w.ref("subject", "ServiceAccount", cmp.Or(s.Namespace, ns), s.Name, "", true)
		}
	}
}

func (w *walker) selectedPods(ns string, ls *metav1.LabelSelector, detail string) {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return
	}
	n := 0
	for _, o := range w.list("Pod", ns) {
		if p := o.(*corev1.Pod); sel.Matches(labels.Set(p.Labels)) && n < 50 {
			w.add("pod", p, cmp.Or(detail, podSummary(p)), false)
			n++
		}
	}
}
