package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// This file declares the Kubernetes kinds both backends read (contract
// section 6.1), their Go types, and the one decoder both use, so a bundle
// file and an API server answer decode alike.

// KubeObject is one typed Kubernetes object: a pointer to the kind's Go
// type (*corev1.Pod, *batchv1.Job, *autoscalingv2.HorizontalPodAutoscaler...).
type KubeObject interface {
	metav1.Object
	runtime.Object
}

// KindHolder is implemented by Kubernetes sources that may lack whole
// kinds (bundles hold what was captured). HoldsKind reports whether the
// source holds any evidence of kind, so that a reference to an absent
// object reads as missing only when its kind was captured. Live clusters
// hold every kind and do not implement it.
type KindHolder interface {
	HoldsKind(ctx context.Context, kind string) bool
}

// KindInfo describes one kind read from bundles and live clusters.
type KindInfo struct {
	Kind       string   `json:"kind"`     // e.g. PersistentVolumeClaim
	Group      string   `json:"group"`    // API group served live; "" for core
	Version    string   `json:"version"`  // API version served live
	Resource   string   `json:"resource"` // plural resource name, e.g. persistentvolumeclaims
	Namespaced bool     `json:"namespaced"`
	Short      []string `json:"short,omitempty"` // kubectl short names, e.g. pvc

	typ reflect.Type // the Go struct type
}

// APIVersion is the kind's group/version as in apiVersion fields.
func (k KindInfo) APIVersion() string {
	if k.Group == "" {
		return k.Version
	}
	return k.Group + "/" + k.Version
}

// New returns a new empty object of the kind.
func (k KindInfo) New() KubeObject { return reflect.New(k.typ).Interface().(KubeObject) }

func kind[T any](name, group, version, resource string, namespaced bool, short ...string) KindInfo {
	return KindInfo{Kind: name, Group: group, Version: version, Resource: resource, Namespaced: namespaced, Short: short, typ: reflect.TypeFor[T]()}
}

// KubeKinds are the kinds read, in bundles and from live clusters alike.
// Events of both APIs are served as core/v1 Event.
var KubeKinds = []KindInfo{
	kind[corev1.Namespace]("Namespace", "", "v1", "namespaces", false, "ns"),
	kind[corev1.Node]("Node", "", "v1", "nodes", false, "no"),
	kind[corev1.Pod]("Pod", "", "v1", "pods", true, "po"),
	kind[appsv1.Deployment]("Deployment", "apps", "v1", "deployments", true, "deploy"),
	kind[appsv1.ReplicaSet]("ReplicaSet", "apps", "v1", "replicasets", true, "rs"),
	kind[appsv1.StatefulSet]("StatefulSet", "apps", "v1", "statefulsets", true, "sts"),
	kind[appsv1.DaemonSet]("DaemonSet", "apps", "v1", "daemonsets", true, "ds"),
	kind[batchv1.Job]("Job", "batch", "v1", "jobs", true),
	kind[batchv1.CronJob]("CronJob", "batch", "v1", "cronjobs", true, "cj"),
	kind[corev1.Service]("Service", "", "v1", "services", true, "svc"),
	kind[corev1.Endpoints]("Endpoints", "", "v1", "endpoints", true, "ep"),
	kind[discoveryv1.EndpointSlice]("EndpointSlice", "discovery.k8s.io", "v1", "endpointslices", true),
	kind[networkingv1.Ingress]("Ingress", "networking.k8s.io", "v1", "ingresses", true, "ing"),
	kind[corev1.Event]("Event", "", "v1", "events", true, "ev"),
	kind[corev1.PersistentVolumeClaim]("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", true, "pvc"),
	kind[corev1.PersistentVolume]("PersistentVolume", "", "v1", "persistentvolumes", false, "pv"),
	kind[storagev1.StorageClass]("StorageClass", "storage.k8s.io", "v1", "storageclasses", false, "sc"),
	kind[corev1.ConfigMap]("ConfigMap", "", "v1", "configmaps", true, "cm"),
	kind[corev1.Secret]("Secret", "", "v1", "secrets", true),
	kind[corev1.ServiceAccount]("ServiceAccount", "", "v1", "serviceaccounts", true, "sa"),
	kind[rbacv1.Role]("Role", "rbac.authorization.k8s.io", "v1", "roles", true),
	kind[rbacv1.RoleBinding]("RoleBinding", "rbac.authorization.k8s.io", "v1", "rolebindings", true),
	kind[rbacv1.ClusterRole]("ClusterRole", "rbac.authorization.k8s.io", "v1", "clusterroles", false),
	kind[rbacv1.ClusterRoleBinding]("ClusterRoleBinding", "rbac.authorization.k8s.io", "v1", "clusterrolebindings", false),
	kind[networkingv1.NetworkPolicy]("NetworkPolicy", "networking.k8s.io", "v1", "networkpolicies", true, "netpol"),
	kind[autoscalingv2.HorizontalPodAutoscaler]("HorizontalPodAutoscaler", "autoscaling", "v2", "horizontalpodautoscalers", true, "hpa"),
	kind[policyv1.PodDisruptionBudget]("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", true, "pdb"),
	kind[corev1.ResourceQuota]("ResourceQuota", "", "v1", "resourcequotas", true, "quota"),
	kind[corev1.LimitRange]("LimitRange", "", "v1", "limitranges", true, "limits"),
}

var (
	kindByName = map[string]KindInfo{}
	kindByType = map[reflect.Type]KindInfo{}
)

func init() {
	for _, k := range KubeKinds {
		for _, n := range append([]string{k.Kind, k.Resource, strings.TrimSuffix(k.Resource, "s")}, k.Short...) {
			kindByName[strings.ToLower(n)] = k
		}
		kindByType[k.typ] = k
	}
	kindByName["endpoint"] = kindByName["endpoints"]
	kindByName["ingresse"] = kindByName["ingresses"]
	kindByName["ingress"] = kindByName["ingresses"]
	kindByName["networkpolicie"] = kindByName["networkpolicies"]
	kindByName["networkpolicy"] = kindByName["networkpolicies"]
	kindByName["storageclasse"] = kindByName["storageclasses"]
	kindByName["storageclass"] = kindByName["storageclasses"]
	kindByName["poddisruptionbudget"] = kindByName["poddisruptionbudgets"]
	kindByName["horizontalpodautoscaler"] = kindByName["horizontalpodautoscalers"]
}

// LookupKind finds a kind by its name (Pod), plural resource (pods),
// singular (pod) or kubectl short name (po), case-insensitively; a
// resource with its group (jobs.batch, deployments.apps) is accepted too.
func LookupKind(name string) (KindInfo, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	k, ok := kindByName[n]
	if !ok {
		if res, group, cut := strings.Cut(n, "."); cut {
			if k, ok = kindByName[res]; ok && k.Group != group && !strings.HasPrefix(k.Group, group+".") {
				return KindInfo{}, false
			}
		}
	}
	return k, ok
}

// KindNames lists the kinds read, in KubeKinds order.
func KindNames() []string {
	out := make([]string, len(KubeKinds))
	for i, k := range KubeKinds {
		out[i] = k.Kind
	}
	return out
}

// kindFor returns the kind of Go type T.
func kindFor[T any]() KindInfo {
	k, ok := kindByType[reflect.TypeFor[T]()]
	if !ok {
		panic(fmt.Sprintf("evidence: %s is not a Kubernetes kind read by rootcause", reflect.TypeFor[T]()))
	}
	return k
}

// List returns the objects of T's kind in namespace (empty: all) matching
// labelSelector, e.g. List[batchv1.Job](ctx, k, "shop", "").
func List[T any, P interface {
	*T
	KubeObject
}](ctx context.Context, k Kubernetes, namespace, labelSelector string) ([]T, error) {
	objs, err := k.Objects(ctx, kindFor[T]().Kind, namespace, labelSelector)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(P); ok {
			out = append(out, *p)
		}
	}
	return out, nil
}

// Get returns one object of T's kind, or a not_found *Error.
func Get[T any, P interface {
	*T
	KubeObject
}](ctx context.Context, k Kubernetes, namespace, name string) (*T, error) {
	o, err := GetObject(ctx, k, kindFor[T]().Kind, namespace, name)
	if err != nil {
		return nil, err
	}
	p, ok := o.(P)
	if !ok {
		return nil, Errorf("kubernetes", CodeMalformed, "%s %s: unexpected type %T", kindFor[T]().Kind, name, o)
	}
	return (*T)(p), nil
}

// GetObject returns one object of kind, or a not_found *Error.
func GetObject(ctx context.Context, k Kubernetes, kind, namespace, name string) (KubeObject, error) {
	ki, ok := LookupKind(kind)
	if !ok {
		return nil, Errorf("kubernetes", CodeInvalid, "unknown kind %q", kind)
	}
	if !ki.Namespaced {
		namespace = ""
	}
	objs, err := k.Objects(ctx, ki.Kind, namespace, "")
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetName() == name && (!ki.Namespaced || namespace == "" || o.GetNamespace() == namespace) {
			return o, nil
		}
	}
	where := name
	if namespace != "" {
		where = namespace + "/" + name
	}
	return nil, Errorf("kubernetes", CodeNotFound, "%s %s not found", ki.Kind, where)
}

// KindOf names the kind of a typed object ("" when it is not one of KubeKinds).
func KindOf(o KubeObject) string {
	t := reflect.TypeOf(o)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return kindByType[t].Kind
}

// DecodeKubeObject decodes one object of kind (a KubeKinds name) from its
// JSON as a bundle file or an API server holds it: apiVersion selects the
// conversions (events.k8s.io events become core/v1, autoscaling/v1 HPAs
// become autoscaling/v2). Managed fields and the last-applied annotation
// (a second copy of the spec, and of a Secret's values) are dropped, events
// normalised, and Secret values removed (see RedactSecret).
func DecodeKubeObject(kind, apiVersion string, raw []byte) (KubeObject, error) {
	ki, ok := LookupKind(kind)
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	var obj KubeObject
	switch {
	case ki.Kind == "Event" && strings.HasPrefix(apiVersion, "events.k8s.io/"):
		var ev eventsv1.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		e := EventFromV1(&ev)
		obj = &e
	case ki.Kind == "HorizontalPodAutoscaler" && apiVersion == "autoscaling/v1":
		var h autoscalingv1.HorizontalPodAutoscaler
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, err
		}
		obj = hpaFromV1(&h)
	case ki.Kind == "Secret":
		s, err := decodeSecret(raw)
		if err != nil {
			return nil, err
		}
		obj = s
	default:
		obj = ki.New()
		if err := json.Unmarshal(raw, obj); err != nil {
			return nil, err
		}
	}
	obj.SetManagedFields(nil)
	if a := obj.GetAnnotations(); a[LastAppliedAnnotation] != "" {
		delete(a, LastAppliedAnnotation)
	}
	if e, ok := obj.(*corev1.Event); ok {
		NormalizeEvent(e)
	}
	gvk := obj.GetObjectKind()
	gvk.SetGroupVersionKind(gvk.GroupVersionKind().GroupVersion().WithKind(ki.Kind))
	return obj, nil
}

// secretJSON decodes a Secret keeping only the key names of data and
// stringData: the values are skipped by the decoder, never copied.
type secretJSON struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Immutable         *bool             `json:"immutable,omitempty"`
	Data              keysOnly          `json:"data,omitempty"`
	StringData        keysOnly          `json:"stringData,omitempty"`
	Type              corev1.SecretType `json:"type,omitempty"`
}

type keysOnly []string

func (k *keysOnly) UnmarshalJSON(b []byte) error {
	var m map[string]skipValue
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for key := range m {
		*k = append(*k, key)
	}
	return nil
}

// skipValue accepts any JSON value and keeps nothing of it.
type skipValue struct{}

func (skipValue) UnmarshalJSON([]byte) error { return nil }

func decodeSecret(raw []byte) (*corev1.Secret, error) {
	var s secretJSON
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	out := &corev1.Secret{TypeMeta: s.TypeMeta, ObjectMeta: s.ObjectMeta, Immutable: s.Immutable, Type: s.Type}
	if len(s.Data)+len(s.StringData) > 0 {
		out.Data = map[string][]byte{}
		for _, k := range append(s.Data, s.StringData...) {
			out.Data[k] = nil
		}
	}
	RedactSecret(out)
	return out, nil
}

// LastAppliedAnnotation is where kubectl apply keeps the object it applied:
// for a Secret it holds the values, so it is always dropped from Secrets.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// RedactSecret removes every value of a Secret, keeping its metadata and
// key names: data values become empty, stringData is emptied into data's
// key names, and the last-applied annotation (which embeds the values) is
// dropped.
func RedactSecret(s *corev1.Secret) {
	for k := range s.Data {
		s.Data[k] = nil
	}
	for k := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = nil
	}
	s.StringData = nil
	delete(s.Annotations, LastAppliedAnnotation)
}

// hpaFromV1 converts an autoscaling/v1 HPA (CPU target only) to v2.
func hpaFromV1(h *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: h.ObjectMeta,
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: h.Spec.ScaleTargetRef.Kind, Name: h.Spec.ScaleTargetRef.Name, APIVersion: h.Spec.ScaleTargetRef.APIVersion},
			MinReplicas:    h.Spec.MinReplicas,
			MaxReplicas:    h.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: h.Status.ObservedGeneration,
			LastScaleTime:      h.Status.LastScaleTime,
			CurrentReplicas:    h.Status.CurrentReplicas,
			DesiredReplicas:    h.Status.DesiredReplicas,
		},
	}
	if h.Spec.TargetCPUUtilizationPercentage != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: h.Spec.TargetCPUUtilizationPercentage}}}}
	}
	if h.Status.CurrentCPUUtilizationPercentage != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: h.Status.CurrentCPUUtilizationPercentage}}}}
	}
	return out
}
