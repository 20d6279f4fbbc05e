package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file reads Kubernetes objects of any kind generically: the kinds
// rootcause has no Go type for (custom resources of Gateway API,
// cert-manager, Argo CD, Flux, External Secrets, KEDA, Karpenter, Istio,
// Crossplane...) and built-in kinds it does not read into typed objects
// (RuntimeClass). What every object says the same way is kept: its
// metadata, the objects its spec names, and above all its status
// conditions, which say whether the object works and since when.

// GenericObject is one object of a kind without a typed reader.
type GenericObject struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`

	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Owners      []ObjectRef       `json:"owners,omitempty"`
	Finalizers  []string          `json:"finalizers,omitempty"`
	Created     time.Time         `json:"created,omitzero"`
	Deleting    time.Time         `json:"deleting,omitzero"` // metadata.deletionTimestamp

	Generation         int64 `json:"generation,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"` // status.observedGeneration

	// Phase, Message and Reason are status.phase, status.message and
	// status.reason, as many controllers write them.
	Phase   string `json:"phase,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`

	Conditions []ObjectCondition `json:"conditions,omitempty"`
	// Refs are the objects the spec names (a route's backends and
	// parents, a certificate's Secret and issuer, a scaler's target) and
	// the resources a GitOps object reports it manages.
	Refs []ObjectRef `json:"refs,omitempty"`

	// Source is the file (and line) the object was read from.
	Source string `json:"source,omitempty"`
}

// ObjectCondition is one condition of an object's status:
// status.conditions, a Gateway API route's status.parents[].conditions
// (Parent names the parent), a Gateway's status.listeners[].conditions,
// or what an Argo CD Application's health, sync and operation state say,
// as conditions Healthy, Synced and OperationSucceeded.
type ObjectCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
	Parent             string    `json:"parent,omitempty"`
}

// ObjectRef names another object. Kind is "" when the spec does not say.
type ObjectRef struct {
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Field is where the reference was read (spec.rules.backendRefs).
	Field string `json:"field,omitempty"`
	// Health is what a GitOps object reports of a resource it manages
	// (Argo CD's status.resources[].health.status).
	Health string `json:"health,omitempty"`
}

// GenericObjectReader is implemented by Kubernetes sources that hold
// objects of kinds without a typed reader (a bundle's -o yaml|json files
// and transcripts). GenericObjects lists those of namespace (empty: all),
// cluster-scoped ones always.
type GenericObjectReader interface {
	GenericObjects(ctx context.Context, namespace string) ([]GenericObject, error)
}

// ReadGenericObject reads one object from its JSON. It reports false when
// the JSON is not an object with a kind and a name.
func ReadGenericObject(raw []byte) (GenericObject, bool) {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return GenericObject{}, false
	}
	return GenericFromMap(m)
}

// GenericFromMap reads one object from its decoded JSON.
func GenericFromMap(m map[string]any) (GenericObject, bool) {
	meta, _ := m["metadata"].(map[string]any)
	o := GenericObject{Kind: str(m["kind"]), APIVersion: str(m["apiVersion"]), Name: str(meta["name"]), Namespace: str(meta["namespace"])}
	if o.Kind == "" || o.Name == "" || strings.HasSuffix(o.Kind, "List") && m["items"] != nil {
		return GenericObject{}, false
	}
	o.Labels = strMap(meta["labels"])
	o.Annotations = strMap(meta["annotations"])
	delete(o.Annotations, LastAppliedAnnotation)
	if len(o.Annotations) == 0 {
		o.Annotations = nil
	}
	for _, x := range list(meta["ownerReferences"]) {
		if r, ok := x.(map[string]any); ok && str(r["name"]) != "" {
			o.Owners = append(o.Owners, ObjectRef{Kind: str(r["kind"]), Name: str(r["name"]), Namespace: o.Namespace})
		}
	}
	for _, x := range list(meta["finalizers"]) {
		if s := str(x); s != "" {
			o.Finalizers = append(o.Finalizers, s)
		}
	}
	o.Created = parseTime(meta["creationTimestamp"])
	o.Deleting = parseTime(meta["deletionTimestamp"])
	o.Generation = num(meta["generation"])
	status, _ := m["status"].(map[string]any)
	o.ObservedGeneration = num(status["observedGeneration"])
	o.Phase, o.Message, o.Reason = str(status["phase"]), str(status["message"]), str(status["reason"])
	o.Conditions = conditionsOf(status["conditions"], "")
	for _, key := range []string{"parents", "listeners"} {
		for _, x := range list(status[key]) {
			p, ok := x.(map[string]any)
			if !ok {
				continue
			}
			parent := str(p["name"])
			if pr, ok := p["parentRef"].(map[string]any); ok {
				parent = str(pr["name"])
				if ns := str(pr["namespace"]); ns != "" {
					parent = ns + "/" + parent
				}
			}
			o.Conditions = append(o.Conditions, conditionsOf(p["conditions"], parent)...)
		}
	}
	o.Conditions = append(o.Conditions, argoConditions(status)...)
	if len(o.Conditions) > maxGenericConditions {
		o.Conditions = o.Conditions[:maxGenericConditions]
	}
	if spec, ok := m["spec"].(map[string]any); ok {
		o.Refs = specRefs(spec, "spec", o.Namespace, 0, nil)
	}
	// A GitOps object's managed resources (Argo CD).
	for _, x := range list(status["resources"]) {
		r, ok := x.(map[string]any)
		if !ok || str(r["name"]) == "" || len(o.Refs) >= maxGenericRefs {
			continue
		}
		h, _ := r["health"].(map[string]any)
		o.Refs = append(o.Refs, ObjectRef{Kind: str(r["kind"]), Namespace: str(r["namespace"]), Name: str(r["name"]), Field: "status.resources", Health: str(h["status"])})
	}
	return o, true
}

const (
	maxGenericConditions = 64
	maxGenericRefs       = 64
)

func conditionsOf(v any, parent string) []ObjectCondition {
	var out []ObjectCondition
	for _, x := range list(v) {
		c, ok := x.(map[string]any)
		if !ok || str(c["type"]) == "" {
			continue
		}
		out = append(out, ObjectCondition{Type: str(c["type"]), Status: str(c["status"]), Reason: str(c["reason"]), Message: str(c["message"]),
			LastTransitionTime: parseTime(c["lastTransitionTime"]), ObservedGeneration: num(c["observedGeneration"]), Parent: parent})
	}
	return out
}

// argoConditions reads an Argo CD Application's status.health,
// status.sync and status.operationState as conditions.
func argoConditions(status map[string]any) []ObjectCondition {
	var out []ObjectCondition
	if h, ok := status["health"].(map[string]any); ok && str(h["status"]) != "" {
		c := ObjectCondition{Type: "Healthy", Status: "True", Reason: str(h["status"]), Message: str(h["message"]), LastTransitionTime: parseTime(h["lastTransitionTime"])}
		switch c.Reason {
		case "Degraded", "Missing":
			c.Status = "False"
		case "Healthy":
		default:
			c.Status = "Unknown"
		}
		out = append(out, c)
	}
	if s, ok := status["sync"].(map[string]any); ok && str(s["status"]) != "" {
		c := ObjectCondition{Type: "Synced", Status: "True", Reason: str(s["status"])}
		if c.Reason != "Synced" {
			c.Status = "Unknown" // OutOfSync: a diff, not a failure
		}
		out = append(out, c)
	}
	if op, ok := status["operationState"].(map[string]any); ok && str(op["phase"]) != "" {
		c := ObjectCondition{Type: "OperationSucceeded", Status: "Unknown", Reason: str(op["phase"]), Message: str(op["message"]),
			LastTransitionTime: parseTime(op["finishedAt"])}
		switch c.Reason {
		case "Failed", "Error":
			c.Status = "False"
		case "Succeeded":
			c.Status = "True"
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = parseTime(op["startedAt"])
		}
		out = append(out, c)
	}
	// Health without its own time (Argo CD before 2.x): the operation's.
	for i := range out {
		if out[i].LastTransitionTime.IsZero() && out[i].Type == "Healthy" {
			for _, c := range out {
				if c.Type == "OperationSucceeded" {
					out[i].LastTransitionTime = c.LastTransitionTime
				}
			}
		}
	}
	return out
}

// refKinds are the kinds a reference field names when it does not say.
var refKinds = map[string]string{
	"backendRef": "Service", "backendRefs": "Service", "parentRef": "Gateway", "parentRefs": "Gateway", "secretRef": "Secret", "secretKeyRef": "Secret",
	"configMapRef": "ConfigMap", "configMapKeyRef": "ConfigMap", "scaleTargetRef": "Deployment",
	"issuerRef": "Issuer", "serviceAccountRef": "ServiceAccount", "secretName": "Secret",
	"serviceName": "Service", "tlsSecretRef": "Secret", "credentialsRef": "Secret",
}

// specSkip are the spec fields whose names are not references to other
// objects (a pod template's containers, volumes and variables).
var specSkip = map[string]bool{"template": true, "containers": true, "initContainers": true, "volumes": true, "env": true,
	"ports": true, "matches": true, "headers": true, "filters": true, "metadata": true, "jobTemplate": true, "values": true}

// specRefs collects the references a spec holds: a map with a name and a
// kind, a map under a field ending in Ref or Refs, a secretName or
// serviceName string, an Istio destination's host.
func specRefs(v any, field, ns string, depth int, out []ObjectRef) []ObjectRef {
	if depth > 12 || len(out) >= maxGenericRefs {
		return out
	}
	key := field[strings.LastIndex(field, ".")+1:]
	switch x := v.(type) {
	case map[string]any:
		name, kind := str(x["name"]), str(x["kind"])
		isRef := strings.HasSuffix(key, "Ref") || strings.HasSuffix(key, "Refs")
		if name != "" && (kind != "" || isRef) {
			if kind == "" {
				kind = refKinds[key]
			}
			rns := str(x["namespace"])
			if rns == "" {
				rns = ns
			}
			out = appendRef(out, ObjectRef{Kind: kind, Namespace: rns, Name: name, Field: field})
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if specSkip[k] {
				continue
			}
			switch s := x[k].(type) {
			case string:
				switch {
				case refKinds[k] != "" && !strings.HasSuffix(k, "Ref") && s != "":
					out = appendRef(out, ObjectRef{Kind: refKinds[k], Namespace: ns, Name: s, Field: field + "." + k})
				case k == "host" && strings.Contains(field, "destination") && s != "" && !strings.Contains(s, "*"):
					// Istio: a Service by its short or cluster name.
					parts := strings.Split(s, ".")
					rns := ns
					if len(parts) > 1 && (len(parts) == 2 || strings.HasSuffix(s, ".svc.cluster.local") || strings.HasSuffix(s, ".svc")) {
						rns = parts[1]
					}
					if len(parts) == 1 || rns != ns || strings.Contains(s, ".svc") {
						out = appendRef(out, ObjectRef{Kind: "Service", Namespace: rns, Name: parts[0], Field: field + "." + k})
					}
				}
			default:
				out = specRefs(s, field+"."+k, ns, depth+1, out)
			}
		}
	case []any:
		for _, e := range x {
			out = specRefs(e, field, ns, depth+1, out)
		}
	}
	return out
}

func appendRef(out []ObjectRef, r ObjectRef) []ObjectRef {
	if len(out) >= maxGenericRefs {
		return out
	}
	for _, o := range out {
		if o.Kind == r.Kind && o.Namespace == r.Namespace && o.Name == r.Name {
			return out
		}
	}
	return append(out, r)
}

// Failing reports whether a condition says its object does not work: a
// condition of a working state (Ready, Accepted, ResolvedRefs, Synced,
// Healthy, Available, Programmed, Reconciled...) that is False, or one of
// a broken state (Degraded, Stalled, Failed, ...Error) that is True
// (KEDA's Active False only says no trigger is active: not a failure). A
// condition whose reason says the controller is still at work
// (Progressing, Reconciling, Pending) is not a failure yet.
func (c ObjectCondition) Failing() bool {
	switch c.Reason {
	case "Progressing", "Reconciling", "Pending", "ProgressingWithRetry", "Upgrading", "Installing", "Waiting", "ReconciliationInProgress":
		return false
	}
	t := c.Type
	switch {
	case negativeCondition(t):
		return c.Status == "True"
	case positiveCondition(t):
		return c.Status == "False"
	}
	return false
}

func negativeCondition(t string) bool {
	switch t {
	case "Degraded", "Stalled", "Failed", "Failure", "Disrupted", "Suspended", "Conflicted", "OutOfSync":
		return true
	}
	return strings.HasSuffix(t, "Error") || strings.HasSuffix(t, "Failed") || strings.HasSuffix(t, "Failure")
}

func positiveCondition(t string) bool {
	switch t {
	case "Ready", "Accepted", "ResolvedRefs", "Synced", "Healthy", "Available", "Programmed", "Reconciled", "Released",
		"Established", "Valid", "OperationSucceeded", "Admitted", "Resolved", "Bound", "Launched", "Registered",
		"Initialized", "Scheduled", "Connected", "Issued", "Validated", "Succeeded":
		return true
	}
	return strings.HasSuffix(t, "Ready") || strings.HasSuffix(t, "Available") || strings.HasSuffix(t, "Synced") || strings.HasSuffix(t, "Healthy")
}

// FailingConditions are the object's conditions that say it does not work.
func (o *GenericObject) FailingConditions() []ObjectCondition {
	var out []ObjectCondition
	for _, c := range o.Conditions {
		if c.Failing() {
			out = append(out, c)
		}
	}
	return out
}

// Stale reports whether the controller has not yet seen the object's
// latest spec (status.observedGeneration behind metadata.generation).
func (o *GenericObject) Stale() bool {
	return o.ObservedGeneration > 0 && o.Generation > o.ObservedGeneration
}

// Ref is "Kind namespace/name" of the object.
func (o *GenericObject) Ref() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace, o.Name)
}

func str(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case bool:
		if s {
			return "True"
		}
		return "False"
	}
	return ""
}

func num(v any) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case json.Number:
		i, _ := n.Int64()
		return i
	case int64:
		return n
	case int:
		return int64(n)
	}
	return 0
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func strMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		out[k] = str(x)
	}
	return out
}

func parseTime(v any) time.Time {
	s := str(v)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
