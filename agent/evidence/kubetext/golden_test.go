package kubetext_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	"github.com/rootcause/rootcause/agent/evidence/live/kube/kubetest"
)

// The transcript goldens were printed by real kubectl (see kubectl_test.go)
// from the objects in testdata/cluster. Parsing them must give back those
// objects: every field the parser sets equals the source object's (nothing
// guessed), and the fields that matter for diagnosis are all there.

var decoder = serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()

// fixtures returns the source objects moved to a capture time, by kind.
func fixtures(t *testing.T, capturedAt time.Time) map[string][]map[string]any {
	t.Helper()
	s, err := kubetest.Load("testdata/cluster", capturedAt.Sub(anchor))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]any{}
	for _, r := range kubetest.Resources {
		if _, ok := out[r.Kind]; !ok {
			out[r.Kind] = s.Objects(r.Kind)
		}
	}
	return out
}

func find(objs []map[string]any, ns, name string) map[string]any {
	for _, o := range objs {
		m, _ := o["metadata"].(map[string]any)
		if m["name"] == name && (ns == "" || m["namespace"] == ns) {
			return o
		}
	}
	return nil
}

// flatten turns a JSON value into path -> scalar. List items are keyed by
// their "name" (or "type", "key", "mountPath", "ip") when they have one, so
// that order does not matter.
func flatten(prefix string, v any, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(prefix+"."+k, e, out)
		}
	case []any:
		for i, e := range x {
			key := fmt.Sprint(i)
			if m, ok := e.(map[string]any); ok {
				for _, id := range []string{"name", "type", "mountPath", "key", "ip"} {
					if s, ok := m[id].(string); ok && s != "" {
						key = id + "=" + s
						if e, ok := m["effect"].(string); ok {
							key += "/" + e // taints of one key, one per effect
						}
						break
					}
				}
			} else if s, ok := e.(string); ok {
				key = s
			}
			flatten(prefix+"["+key+"]", e, out)
		}
	case nil:
	default:
		out[prefix] = x
	}
}

func toJSONMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// canonical decodes a fixture object into its typed form and back, so that
// quantities and times print alike on both sides.
func canonical(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(o)
	obj, _, err := decoder.Decode(b, nil, nil)
	if err != nil {
		return o
	}
	return toJSONMap(t, obj)
}

// slack is how long kubectl ran after the capture time (TestKubectlMatchesGoldens
// sets it: on a busy machine printing the transcript takes seconds).
var slack time.Duration

// tolerance is how far a time derived from a relative age may be off: the
// age is printed rounded (kubectl's HumanDuration), and kubectl ran a few
// seconds after the capture time.
func tolerance(age time.Duration) time.Duration {
	switch {
	case age < 10*time.Minute:
		return 5 * time.Second
	case age < 8*time.Hour:
		return time.Minute + 5*time.Second
	case age < 8*24*time.Hour:
		return time.Hour + 5*time.Second
	default:
		return 24*time.Hour + 5*time.Second
	}
}

func sameValue(a, b any, capturedAt time.Time) bool {
	if fmt.Sprint(a) == fmt.Sprint(b) {
		return true
	}
	sa, ok1 := a.(string)
	sb, ok2 := b.(string)
	if ok1 && ok2 && strings.TrimRight(sa, "\n") == strings.TrimRight(sb, "\n") {
		return true // describe does not show a config value's trailing newlines
	}
	if ok1 && ok2 {
		ta, err1 := time.Parse(time.RFC3339, sa)
		tb, err2 := time.Parse(time.RFC3339, sb)
		if err1 == nil && err2 == nil {
			d := ta.Sub(tb).Abs()
			return d <= tolerance(capturedAt.Sub(tb))+slack
		}
		qa, err1 := resource.ParseQuantity(sa)
		qb, err2 := resource.ParseQuantity(sb)
		if err1 == nil && err2 == nil {
			return qa.Cmp(qb) == 0
		}
	}
	return false
}

// ignored are paths a text form fills that the source does not hold in
// the same shape: the text-form annotation, and "Optional: false" that
// kubectl prints for an unset optional flag.
func ignored(path string, v any) bool {
	return strings.Contains(path, kubetext.SourceAnnotation) ||
		strings.Contains(path, kubetext.DataCountAnnotation) || strings.Contains(path, kubetext.RolloutAnnotation) ||
		(strings.HasSuffix(path, ".optional") && v == false) ||
		(strings.HasSuffix(path, ".controller") && v == true) ||
		strings.HasSuffix(path, ".started") && v == true
}

// checkSound reports every field of got that differs from want.
func checkSound(t *testing.T, what string, got, want map[string]any, capturedAt time.Time) {
	t.Helper()
	fg, fw := map[string]any{}, map[string]any{}
	flatten("", got, fg)
	flatten("", want, fw)
	for p, v := range fg {
		if ignored(p, v) {
			continue
		}
		if s, ok := v.(string); ok && s == "" {
			continue
		}
		// A zero count or false flag may be a field the text does not
		// show (Go structs cannot tell): checked only where required.
		if (v == false || v == 0.0) && !isRequired(what, p) {
			continue
		}
		w, ok := fw[p]
		if !ok {
			t.Errorf("%s: %s = %v, not in the source object", what, p, v)
			continue
		}
		if !sameValue(v, w, capturedAt) {
			t.Errorf("%s: %s = %v, want %v", what, p, v, w)
		}
	}
}

// required lists, per kind, fields every kubectl version shows and the
// parser must read (flattened paths, prefix match).
var required = map[string][]string{
	"Pod/checkout-6d8f9c7b5-x2x9k": {
		".status.phase", ".spec.nodeName", ".status.podIP", ".status.startTime",
		".status.containerStatuses[name=app].state.waiting.reason",
		".status.containerStatuses[name=app].lastState.terminated.exitCode",
		".status.containerStatuses[name=app].lastState.terminated.reason",
		".status.containerStatuses[name=app].restartCount",
		".status.containerStatuses[name=app].ready",
		".status.containerStatuses[name=proxy].state.running.startedAt",
		".spec.containers[name=app].image",
		".spec.containers[name=app].resources.limits.memory",
		".spec.containers[name=app].resources.requests.cpu",
		".spec.containers[name=app].env[name=DATABASE_URL].valueFrom.secretKeyRef.name",
		".spec.containers[name=app].env[name=FEATURE_FLAGS].valueFrom.configMapKeyRef.key",
		".spec.containers[name=app].env[name=LOG_LEVEL].value",
		".spec.containers[name=app].envFrom[0].configMapRef.name",
		".spec.containers[name=app].volumeMounts[name=config].readOnly",
		".spec.volumes[name=data].persistentVolumeClaim.claimName",
		".spec.volumes[name=config].configMap.name",
		".status.conditions[type=Ready].status",
		".spec.nodeSelector.kubernetes.io/os",
		".spec.tolerations[key=node.kubernetes.io/not-ready/NoExecute].tolerationSeconds",
		".status.qosClass", ".metadata.labels.app", ".metadata.ownerReferences[name=checkout-6d8f9c7b5].kind",
	},
	"Pod/worker-0": {
		".status.containerStatuses[name=worker].lastState.terminated.reason",
		".status.containerStatuses[name=worker].lastState.terminated.exitCode",
		".status.containerStatuses[name=worker].restartCount",
	},
	"Pod/node-exporter-7x9kq": {".spec.initContainers[name=wait-config].command", ".status.initContainerStatuses[name=wait-config].state.running",
		".status.containerStatuses[name=exporter].state.waiting.reason", ".spec.containers[name=exporter].livenessProbe.periodSeconds",
		".spec.containers[name=exporter].livenessProbe.httpGet.path", ".spec.containers[name=exporter].env[name=NODE_NAME].valueFrom.fieldRef.fieldPath",
		".spec.containers[name=exporter].env[name=TLS_KEY].valueFrom.secretKeyRef.optional", ".spec.volumes[name=tls].secret.secretName",
		".spec.containers[name=exporter].ports[0].hostPort", ".spec.containers[name=exporter].args"},
	"DaemonSet/node-exporter":    {".status.desiredNumberScheduled", ".status.numberUnavailable", ".spec.template.spec.containers[name=exporter].image"},
	"ResourceQuota/shop-compute": {".status.hard.limits.memory", ".status.used.limits.memory", ".status.used.requests.cpu", ".status.hard.pods"},
	"LimitRange/shop-defaults": {".spec.limits[type=Container].default.memory", ".spec.limits[type=Container].defaultRequest.cpu",
		".spec.limits[type=Container].max.memory", ".spec.limits[type=Pod].max.cpu"},
	"Node/node-2":                    {".spec.unschedulable", ".spec.taints[key=node.kubernetes.io/unreachable/NoExecute].effect", ".status.conditions[type=Ready].status", ".status.conditions[type=Ready].reason"},
	"Service/gateway":                {".spec.type", ".spec.ports[name=https].nodePort", ".spec.ports[name=http].targetPort"},
	"Job/migrate-schema":             {".status.failed", ".spec.completions"},
	"HorizontalPodAutoscaler/search": {".spec.metrics[type=Resource].resource.target.averageUtilization", ".status.conditions[type=ScalingActive].reason", ".status.conditions[type=ScalingActive].message"},
	"ConfigMap/checkout-config":      {".data.flags", ".data.app.yaml"},
	"Secret/checkout-db":             {".type"},
	"Pod/report-28511430-7xk2p":      {".status.phase", ".status.conditions[type=PodScheduled].status", ".spec.volumes[name=scratch].persistentVolumeClaim.claimName"},
	"Deployment/checkout": {".spec.replicas", ".status.updatedReplicas", ".status.availableReplicas", ".status.unavailableReplicas",
		".spec.selector.matchLabels.app", ".status.conditions[type=Progressing].reason", ".spec.template.spec.containers[name=app].image",
		".spec.strategy.rollingUpdate.maxSurge"},
	"ReplicaSet/checkout-6d8f9c7b5":        {".spec.replicas", ".status.replicas", ".spec.template.spec.containers[name=app].image"},
	"StatefulSet/worker":                   {".spec.replicas", ".status.replicas"},
	"Job/report-28511430":                  {".spec.parallelism", ".spec.completions", ".status.active", ".status.startTime"},
	"CronJob/report":                       {".spec.schedule", ".spec.suspend", ".status.lastScheduleTime", ".status.active[name=report-28511430]"},
	"Node/node-1":                          {".spec.taints[key=node.kubernetes.io/memory-pressure/NoSchedule].effect", ".status.conditions[type=MemoryPressure].status", ".status.conditions[type=Ready].reason", ".status.capacity.memory", ".status.allocatable.cpu", ".status.nodeInfo.kubeletVersion", ".status.addresses[type=InternalIP].address"},
	"PersistentVolumeClaim/report-scratch": {".status.phase", ".spec.storageClassName"},
	"PersistentVolumeClaim/checkout-data":  {".status.phase", ".spec.volumeName", ".status.capacity.storage", ".status.accessModes"},
	"PersistentVolume/pv-checkout-data":    {".status.phase", ".spec.claimRef.name", ".spec.capacity.storage", ".spec.persistentVolumeReclaimPolicy"},
	"Service/checkout":                     {".spec.selector.app", ".spec.type", ".spec.clusterIP", ".spec.ports[name=http].port", ".spec.ports[name=http].targetPort"},
	"Ingress/shop":                         {".spec.rules[0].host", ".spec.rules[0].http.paths[0].backend.service.name", ".spec.tls[0].secretName"},
	"HorizontalPodAutoscaler/checkout":     {".spec.maxReplicas", ".spec.minReplicas", ".spec.scaleTargetRef.name", ".status.currentMetrics[type=Resource].resource.current.averageUtilization", ".status.conditions[type=ScalingActive].status"},
}

func isRequired(what, path string) bool {
	for _, r := range required[what] {
		if strings.HasPrefix(path, r) {
			return true
		}
	}
	return false
}

func checkRequired(t *testing.T, what string, got map[string]any) {
	t.Helper()
	fg := map[string]any{}
	flatten("", got, fg)
	for _, r := range required[what] {
		found := false
		for p := range fg {
			if strings.HasPrefix(p, r) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: %s not read", what, r)
		}
	}
}

func readCapturedAt(t *testing.T, dir string) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		CapturedAt time.Time `json:"captured_at"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.CapturedAt
}

// checkTranscript parses a transcript of the cluster fixtures and checks
// the result against them.
func checkTranscript(t *testing.T, text []byte, capturedAt time.Time, wantEventsTable bool) {
	t.Helper()
	fix := fixtures(t, capturedAt)
	res := kubetext.Parse(text, capturedAt)
	noSkipped(t, res)
	seen := checkObjectsSound(t, res.Objects, func(kind string) []map[string]any { return fix[kind] }, capturedAt, func(what string, got map[string]any) {
		checkRequired(t, what, got)
	})
	for what := range required {
		if !seen[what] {
			t.Errorf("%s: not read", what)
		}
	}
	// Events: each one read matches a source event; all source events of
	// the described objects are read.
	for _, e := range res.Events {
		what := "event " + e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name + " " + e.Reason
		var src map[string]any
		for _, o := range fix["Event"] {
			io, _ := o["involvedObject"].(map[string]any)
			if io["kind"] == e.InvolvedObject.Kind && io["name"] == e.InvolvedObject.Name && o["reason"] == e.Reason {
				src = o
			}
		}
		if src == nil {
			t.Errorf("%s: not in the source events", what)
			continue
		}
		got := toJSONMap(t, e)
		delete(got, "metadata")
		checkSound(t, what, got, canonical(t, src), capturedAt)
		if e.LastTimestamp.IsZero() || e.FirstTimestamp.IsZero() || e.Count == 0 {
			t.Errorf("%s: times or count not read: %+v", what, e)
		}
	}
	if len(res.Events) != len(fix["Event"]) {
		t.Errorf("read %d events, want %d", len(res.Events), len(fix["Event"]))
	}
	// Logs: the lines kubectl printed are the fixture's.
	wantLogs := map[string]int{"checkout-6d8f9c7b5-x2x9k/app/true": 3, "worker-0//false": 2}
	for _, l := range res.Logs {
		k := fmt.Sprintf("%s/%s/%v", l.Pod, l.Container, l.Previous)
		if l.Namespace != "shop" || wantLogs[k] != len(l.Lines) {
			t.Errorf("log %s in %q: %d lines, want %d", k, l.Namespace, len(l.Lines), wantLogs[k])
		}
		delete(wantLogs, k)
	}
	if len(wantLogs) > 0 {
		t.Errorf("logs not read: %v", wantLogs)
	}
	checkUsage(t, res.Usage, fix)
	checkTableCounts(t, res, fix)
	checkAbsent(t, res.Absent, fix)
	checkRollout(t, res)
}

// checkTableCounts compares the DATA column of config map and secret rows
// with the keys of the objects served.
func checkTableCounts(t *testing.T, res *kubetext.Result, fix map[string][]map[string]any) {
	t.Helper()
	n := 0
	for _, o := range res.Objects {
		m := o.(metav1.Object)
		count, ok := m.GetAnnotations()[kubetext.DataCountAnnotation]
		if !ok {
			continue
		}
		n++
		kind := o.GetObjectKind().GroupVersionKind().Kind
		src := find(fix[kind], m.GetNamespace(), m.GetName())
		if src == nil {
			t.Errorf("%s %s: not in the source objects", kind, m.GetName())
			continue
		}
		data, _ := src["data"].(map[string]any)
		bin, _ := src["binaryData"].(map[string]any)
		if count != fmt.Sprint(len(data)+len(bin)) {
			t.Errorf("%s %s: DATA %s, want %d", kind, m.GetName(), count, len(data)+len(bin))
		}
	}
	if n != 2 {
		t.Errorf("%d config map and secret rows read, want 2", n)
	}
}

// checkAbsent checks kubectl's NotFound answers: each names an object the
// server does not have, and all of them are read.
func checkAbsent(t *testing.T, absent []kubetext.Absence, fix map[string][]map[string]any) {
	t.Helper()
	var got []string
	for _, a := range absent {
		got = append(got, a.Kind+" "+a.Namespace+"/"+a.Name)
		if find(fix[a.Kind], a.Namespace, a.Name) != nil {
			t.Errorf("%s %s/%s read as absent, but the server has it", a.Kind, a.Namespace, a.Name)
		}
	}
	want := "Secret shop/checkout-db-old, Pod shop/worker-9, Pod shop/checkout-6d8f9c7b5-gone"
	if strings.Join(got, ", ") != want {
		t.Errorf("absent: %s, want %s", strings.Join(got, ", "), want)
	}
}

// checkRollout checks what kubectl rollout status stated (kept on a text
// copy of the workload; a structured copy of it wins as it is).
func checkRollout(t *testing.T, res *kubetext.Result) {
	t.Helper()
	want := map[string]string{
		"Deployment/checkout": `deployment "checkout" exceeded its progress deadline`,
		"StatefulSet/worker":  "Waiting for statefulset spec update to be observed...",
	}
	for _, o := range res.Objects {
		m := o.(metav1.Object)
		what := o.GetObjectKind().GroupVersionKind().Kind + "/" + m.GetName()
		if _, text := m.GetAnnotations()[kubetext.SourceAnnotation]; !text {
			delete(want, what) // a structured copy (get -o json) wins whole
			continue
		}
		if v, ok := m.GetAnnotations()[kubetext.RolloutAnnotation]; ok {
			if v != want[what] {
				t.Errorf("%s: rollout status %q, want %q", what, v, want[what])
			}
			delete(want, what)
		}
	}
	if len(want) > 0 {
		t.Errorf("rollout status not read: %v", want)
	}
	if len(res.Rollouts) != 2 {
		t.Errorf("rollouts %+v, want 2", res.Rollouts)
	}
}

// checkUsage compares kubectl top rows with the metrics served.
func checkUsage(t *testing.T, usage []kubetext.Usage, fix map[string][]map[string]any) {
	t.Helper()
	if len(usage) == 0 {
		t.Error("no kubectl top rows read")
	}
	for _, u := range usage {
		var cpu, mem resource.Quantity
		switch u.Kind {
		case "Node":
			m := find(fix["NodeMetrics"], "", u.Name)
			if m == nil {
				t.Errorf("top node %s: no such node", u.Name)
				continue
			}
			us := m["usage"].(map[string]any)
			cpu, mem = resource.MustParse(us["cpu"].(string)), resource.MustParse(us["memory"].(string))
			if u.CPUPercent < 0 || u.MemoryPercent < 0 {
				t.Errorf("top node %s: percentages not read", u.Name)
			}
		case "Pod":
			m := find(fix["PodMetrics"], u.Namespace, u.Name)
			if m == nil {
				t.Errorf("top pod %s/%s: no such pod", u.Namespace, u.Name)
				continue
			}
			for _, c := range m["containers"].([]any) {
				cm := c.(map[string]any)
				if u.Container != "" && cm["name"] != u.Container {
					continue
				}
				us := cm["usage"].(map[string]any)
				cpu.Add(resource.MustParse(us["cpu"].(string)))
				mem.Add(resource.MustParse(us["memory"].(string)))
			}
		}
		if u.CPU.MilliValue() != cpu.MilliValue() || u.Memory.Value()>>20 != mem.Value()>>20 {
			t.Errorf("top %s %s/%s: cpu %s memory %s, want %s %s", u.Kind, u.Name, u.Container, u.CPU.String(), u.Memory.String(), cpu.String(), mem.String())
		}
	}
}

// TestTranscriptGoldens parses every committed kubectl golden.
func TestTranscriptGoldens(t *testing.T) {
	checkGoldens(t, "transcripts", 2, func(t *testing.T, text []byte, capturedAt time.Time) {
		checkTranscript(t, text, capturedAt, true)
	})
}

// TestKubectlMatchesGoldens runs the transcript commands with the kubectl
// installed and checks that what it prints today parses to the same
// objects: a change of kubectl's output shows here.
func TestKubectlMatchesGoldens(t *testing.T) {
	kubectl := kubectlPath(t)
	_, minor := kubectlMinor(t, kubectl)
	matchKubectl(t, kubectl, "testdata/cluster", commandsFor(minor), func(t *testing.T, text []byte, capturedAt time.Time) {
		checkTranscript(t, text, capturedAt, minor >= 26)
	})
}

var _ runtime.Object = (*corev1.Pod)(nil)
