package evidence

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

func decodeAll(data, hint string) ([]string, error) {
	var got []string
	err := DecodeKubeFile("f", []byte(data), hint, func(it KubeItem) {
		if it.Object == nil {
			got = append(got, fmt.Sprintf("skip:%d:%s", it.Line, it.Skip))
			return
		}
		got = append(got, fmt.Sprintf("%s:%s/%s:%d", it.Kind, it.Namespace, it.Name, it.Line))
	})
	return got, err
}

func TestDecodeKubeFileForms(t *testing.T) {
	cases := []struct {
		name, data, hint string
		want             []string
	}{
		{"one JSON object", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"a"}}`, "", []string{"Pod:a/p:1"}},
		{"typed list, items without kind", "{\"kind\":\"PodList\",\"items\":[\n{\"metadata\":{\"name\":\"p\"}},\n{\"metadata\":{\"name\":\"q\"}}]}", "", []string{"Pod:/p:2", "Pod:/q:3"}},
		{"kind List after its items", `{"apiVersion":"v1","items":[{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"}},{"kind":"Widget","metadata":{"name":"w"}}],"kind":"List"}`, "",
			[]string{"Job:/j:1", "skip:1:kind Widget is not read"}},
		{"dump file without list kind", `{"items":[{"metadata":{"name":"n"}}]}`, "Node", []string{"Node:/n:1"}},
		{"JSON objects one after another", "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}\n{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\"}}\n", "", []string{"ConfigMap:/a:1", "ConfigMap:/b:2"}},
		{"multi-document YAML", "# comment\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\n---\napiVersion: v1\nkind: List\nitems:\n- kind: PersistentVolumeClaim\n  metadata: {name: c, namespace: x}\n", "",
			[]string{"Service:/s:1", "PersistentVolumeClaim:x/c:8"}},
		{"YAML that is no object", "replicas: 3\nimage: x\n", "", []string{"skip:1:not a Kubernetes object (no kind)"}},
		{"empty", "\n\n", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeAll(tc.data, tc.hint)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodeKubeFileErrors(t *testing.T) {
	cases := []struct {
		name, data string
		line       int
	}{
		{"JSON syntax", "{\"kind\":\"PodList\",\"items\":[\n{\"metadata\":{\"name\":\"a\"}}\n{]}", 3},
		{"wrong type", "{\"kind\":\"PodList\",\"items\":[\n{\"metadata\":{\"name\":\"a\"}},\n{\"metadata\":{\"name\":5}}]}", 3},
		{"object without name", "{\"kind\":\"Pod\"}", 1},
		{"YAML syntax", "kind: Pod\nmetadata:\n  name: p\n---\nkind: Pod\nmetadata: [\n", 6},
		{"not an object", "[1, 2]", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeAll(tc.data, "")
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeMalformed || e.File != "f" || e.Line != tc.line {
				t.Errorf("error %v (line %d), want malformed at line %d", err, lineOf(e), tc.line)
			}
		})
	}
}

func lineOf(e *Error) int {
	if e == nil {
		return 0
	}
	return e.Line
}

func TestDecodeKubeObjectConversions(t *testing.T) {
	o, err := DecodeKubeObject("Secret", "v1", []byte(`{"metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"k\":\"c2VjcmV0\"}}","team":"a"},
		"managedFields":[{"manager":"kubectl"}]},"data":{"k":"c2VjcmV0"},"stringData":{"plain":"secret"}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := o.(*corev1.Secret)
	if len(s.Data) != 2 || s.Data["k"] != nil || s.Data["plain"] != nil || s.StringData != nil || len(s.ManagedFields) != 0 ||
		s.Annotations[LastAppliedAnnotation] != "" || s.Annotations["team"] != "a" {
		t.Errorf("secret not reduced to its key names: %+v", s)
	}
	o, err = DecodeKubeObject("HorizontalPodAutoscaler", "autoscaling/v1", []byte(`{"metadata":{"name":"h"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"d"},"maxReplicas":4,"targetCPUUtilizationPercentage":80}}`))
	if err != nil {
		t.Fatal(err)
	}
	if h := o.(*autoscalingv2.HorizontalPodAutoscaler); h.Spec.MaxReplicas != 4 || *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 || KindOf(h) != "HorizontalPodAutoscaler" {
		t.Errorf("HPA v1 not converted: %+v", h)
	}
	o, err = DecodeKubeObject("Event", "events.k8s.io/v1", []byte(`{"metadata":{"name":"e"},"regarding":{"kind":"Pod","name":"p"},"note":"boom","eventTime":"2026-01-01T00:00:00.000000Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e := o.(*corev1.Event); e.Message != "boom" || e.InvolvedObject.Name != "p" || e.Count != 1 || e.LastTimestamp.IsZero() {
		t.Errorf("events.k8s.io event not mapped: %+v", e)
	}
}

func TestLookupKind(t *testing.T) {
	for in, want := range map[string]string{"pvc": "PersistentVolumeClaim", "Pods": "Pod", "deploy": "Deployment", "jobs.batch": "Job",
		"hpa": "HorizontalPodAutoscaler", "ingress": "Ingress", "endpoints": "Endpoints", "networkpolicy": "NetworkPolicy", "sc": "StorageClass"} {
		if k, ok := LookupKind(in); !ok || k.Kind != want {
			t.Errorf("LookupKind(%q) = %q, want %q", in, k.Kind, want)
		}
	}
	for _, bad := range []string{"widgets", "jobs.apps", ""} {
		if _, ok := LookupKind(bad); ok {
			t.Errorf("LookupKind(%q) found a kind", bad)
		}
	}
}

func FuzzDecodeKubeFile(f *testing.F) {
	for _, s := range []string{`{"kind":"PodList","items":[{"metadata":{"name":"p"}}]}`, "kind: Pod\nmetadata:\n  name: p\n---\nkind: List\nitems: []\n",
		`{"kind":"List","items":[{"kind":"Secret","metadata":{"name":"s"},"data":{"a":"b"}}]}`, "{\"items\": null}", "---\n...\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		_ = DecodeKubeFile("f", []byte(data), "Pod", func(it KubeItem) {
			if it.Object != nil && it.Object.GetName() == "" {
				t.Errorf("object without a name served: %+v", it)
			}
			if s, ok := it.Object.(*corev1.Secret); ok {
				for k, v := range s.Data {
					if v != nil {
						t.Errorf("secret value of %s kept", k)
					}
				}
			}
		})
	})
}
