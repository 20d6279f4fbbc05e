package kubetext

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// kubectl get -o custom-columns tables, as kubectl prints them (columns
// padded with three spaces, <none> for a missing field), read into
// objects of the kind asked with the fields their JSONPaths name.
func TestCustomColumns(t *testing.T) {
	ref := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	cases := []struct {
		name, text string
		check      func(t *testing.T, r *Result)
	}{
		{"pods: node, start, image and image ID", `$ kubectl get pods -n pricing -o custom-columns='NAME:.metadata.name,NODE:.spec.nodeName,STARTED:.status.startTime,IMAGE:.spec.containers[0].image,IMAGEID:.status.containerStatuses[0].imageID'
NAME                          NODE                                         STARTED                IMAGE                                         IMAGEID
tax-api-6c8d9f7b5-2xrvn       ip-10-1-4-73.eu-west-1.compute.internal      2026-11-19T16:40:05Z   registry.example.com/pricing/tax-api:latest   registry.example.com/pricing/tax-api@sha256:3e9b1f04
tax-api-6c8d9f7b5-m7jtf       ip-10-1-8-142.eu-west-1.compute.internal     2026-11-23T12:08:44Z   registry.example.com/pricing/tax-api:latest   registry.example.com/pricing/tax-api@sha256:b71c5e2d
`, func(t *testing.T, r *Result) {
			pods := podsOf(r)
			if len(pods) != 2 {
				t.Fatalf("%d pods", len(pods))
			}
			p := pods[1]
			if p.Namespace != "pricing" || p.Spec.NodeName != "ip-10-1-8-142.eu-west-1.compute.internal" || p.Status.StartTime == nil ||
				!p.Status.StartTime.Time.Equal(time.Date(2026, 11, 23, 12, 8, 44, 0, time.UTC)) {
				t.Errorf("pod %+v", p)
			}
			if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != "registry.example.com/pricing/tax-api:latest" ||
				len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ImageID != "registry.example.com/pricing/tax-api@sha256:b71c5e2d" {
				t.Errorf("containers %+v statuses %+v", p.Spec.Containers, p.Status.ContainerStatuses)
			}
		}},
		{"pods: phase, restarts of every container, last exit code, <none>", `$ kubectl get po -n shop -o=custom-columns=NAME:.metadata.name,PHASE:.status.phase,RESTARTS:.status.containerStatuses[*].restartCount,REASON:.status.containerStatuses[*].lastState.terminated.reason,EXIT:.status.containerStatuses[0].lastState.terminated.exitCode,CONTAINERS:.spec.containers[*].name
NAME                        PHASE     RESTARTS   REASON            EXIT     CONTAINERS
checkout-6d8f9c7b5-x2x9k    Running   7,0        OOMKilled         137      app,istio-proxy
checkout-6d8f9c7b5-q8r2t    Running   0,0        <none>            <none>   app,istio-proxy
`, func(t *testing.T, r *Result) {
			pods := podsOf(r)
			if len(pods) != 2 {
				t.Fatalf("%d pods", len(pods))
			}
			p := pods[0]
			if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 2 || p.Status.ContainerStatuses[0].RestartCount != 7 {
				t.Fatalf("pod %+v", p.Status)
			}
			st := p.Status.ContainerStatuses[0]
			if st.Name != "app" || st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.Reason != "OOMKilled" || st.LastTerminationState.Terminated.ExitCode != 137 {
				t.Errorf("status %+v", st)
			}
			if pods[1].Status.ContainerStatuses[0].LastTerminationState.Terminated != nil {
				t.Errorf("<none> read as a value")
			}
		}},
		{"events, header filtered out by grep", `$ kubectl get events -n pricing --sort-by=.lastTimestamp -o custom-columns='TIME:.lastTimestamp,TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message' | grep -E 'tax-api|ScaleDown'
2026-11-23T12:07:58Z   Normal   ScaleDown           tax-api-6c8d9f7b5-hx2kd   deleting pod for node scale down
2026-11-23T12:08:45Z   Normal   Pulled              tax-api-6c8d9f7b5-m7jtf   Successfully pulled image "registry.example.com/pricing/tax-api:latest" in 1.244s (1.244s including waiting). Image size: 48210733 bytes.
`, func(t *testing.T, r *Result) {
			if len(r.Events) != 2 {
				t.Fatalf("%d events", len(r.Events))
			}
			e := r.Events[1]
			if e.Reason != "Pulled" || e.InvolvedObject.Name != "tax-api-6c8d9f7b5-m7jtf" || e.Namespace != "pricing" ||
				!strings.HasPrefix(e.Message, `Successfully pulled image "registry.example.com/pricing/tax-api:latest" in 1.244s`) ||
				!e.LastTimestamp.Time.Equal(time.Date(2026, 11, 23, 12, 8, 45, 0, time.UTC)) {
				t.Errorf("event %+v", e)
			}
		}},
		{"custom-columns-file: the headers say the fields", `$ kubectl get pods -n web -o custom-columns-file=cols.txt
NAME                     NODE            IMAGE
web-7b8c9d6f5-9qwxz      node-a          registry.example.com/web:9.1.0
`, func(t *testing.T, r *Result) {
			pods := podsOf(r)
			if len(pods) != 1 || pods[0].Spec.NodeName != "node-a" || len(pods[0].Spec.Containers) != 1 || pods[0].Spec.Containers[0].Image != "registry.example.com/web:9.1.0" {
				t.Errorf("pods %+v", pods)
			}
		}},
		{"deployments: replicas and image", `$ kubectl get deploy -n shop -o custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas,READY:.status.readyReplicas,IMAGE:.spec.template.spec.containers[0].image
NAME       REPLICAS   READY    IMAGE
checkout   3          <none>   registry.example.com/shop/checkout:2.4.1
`, func(t *testing.T, r *Result) {
			if len(r.Objects) != 1 {
				t.Fatalf("%d objects", len(r.Objects))
			}
			if !strings.Contains(toJSON(r.Objects[0]), `"replicas":3`) || !strings.Contains(toJSON(r.Objects[0]), `checkout:2.4.1`) {
				t.Errorf("deployment %s", toJSON(r.Objects[0]))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Parse([]byte(c.text), ref)
			c.check(t, r)
			if len(r.Outputs) == 0 {
				t.Error("the table's text is no longer kept")
			}
		})
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func podsOf(r *Result) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range r.Objects {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out
}

func FuzzCustomColumns(f *testing.F) {
	f.Add("NAME:.metadata.name,NODE:.spec.nodeName,IMAGE:.spec.containers[*].image", "NAME   NODE   IMAGE\na   n1   x:1,y:2\n")
	f.Add("TIME:.lastTimestamp,REASON:.reason,MESSAGE:.message", "2026-11-23T12:07:58Z   Pulled   a b c\n")
	f.Add("X:{.status.containerStatuses[3].lastState.terminated.exitCode},L:.metadata.labels.app", "X L\n1 web\n")
	f.Fuzz(func(t *testing.T, spec, out string) {
		for _, kind := range []string{"pods", "events", "deploy"} {
			_ = Parse([]byte("$ kubectl get "+kind+" -n ns -o custom-columns='"+strings.ReplaceAll(spec, "'", "")+"'\n"+out), time.Time{})
		}
	})
}
