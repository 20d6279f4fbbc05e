package analyst

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// servedLines repeats a request line n times with its client's address
// and request id varied, as an access log does.
func servedLines(format string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf(format, 10+i, i))
	}
	return out
}

// TestServesClients reads the requests a workload's pods answered from
// real access-log forms (Envoy's default, nginx's combined, logfmt, a
// JSON request log); probes, scrapers and failed requests do not count.
func TestServesClients(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		want  bool
	}{
		{"Envoy access log, clients answered 200", servedLines(`[2026-03-14T10:12:%02d.000Z] "GET /v2/orders HTTP/2" 200 - via_upstream - "-" 1326 2126 41 80 "185.171.44.%d" "okhttp/4.12.0" "5619355c-9159-7bc0-977a-0bd813f1c149" "api.example.com" "10.70.19.99:8080"`, 8), true},
		{"nginx combined, clients answered 201", servedLines(`10.1.2.3 - - [14/Mar/2026:10:12:%02d +0000] "POST /api/cart/items HTTP/1.1" 201 512 "-" "Mozilla/5.0 (X11; Linux x86_64)" %d`, 8), true},
		{"logfmt request log", servedLines(`ts=2026-03-14T10:12:%02dZ level=info msg="request" method=GET path=/v1/stock status=200 duration_ms=%d`, 8), true},
		{"JSON request log", servedLines(`{"level":30,"time":"2026-03-14T10:12:%02dZ","req":{"method":"GET","url":"/api/products"},"statusCode":200,"responseTime":%d}`, 8), true},
		{"kubelet probes only", servedLines(`10.70.19.1 - - [14/Mar/2026:10:12:%02d +0000] "GET /ready HTTP/1.1" 200 2 "-" "kube-probe/1.30" %d`, 8), false},
		{"health path without an agent", servedLines(`ts=2026-03-14T10:12:%02dZ method=GET path=/healthz status=200 duration_ms=%d`, 8), false},
		{"clients answered 503", servedLines(`[2026-03-14T10:12:%02d.000Z] "GET /v2/orders HTTP/1.1" 503 UF upstream_reset_before_response_started - "-" 0 91 3 - "185.171.44.%d" "curl/8.9.1" "-" "api.example.com" "-"`, 8), false},
		{"a few requests only", servedLines(`[2026-03-14T10:12:%02d.000Z] "GET /v2/orders HTTP/2" 200 - via_upstream - "-" 1326 2126 41 80 "185.171.44.%d" "okhttp/4.12.0" "-" "api.example.com" "10.70.19.99:8080"`, 3), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := minedSet("api-gateway", false, 10*time.Minute, c.lines...)
			set.Namespace = "edge"
			ev := &Gathered{Logs: []LogSet{set}, Window: win}
			s, ok := servesClients(ev, "api-gateway", "edge", win.Start.Add(5*time.Minute))
			if ok != c.want {
				t.Fatalf("served %+v, want %v", s, c.want)
			}
			if _, later := servesClients(ev, "api-gateway", "edge", win.End.Add(time.Minute)); later {
				t.Errorf("requests before the moment asked about counted")
			}
			if _, other := servesClients(ev, "api-gateway", "shop", time.Time{}); other {
				t.Errorf("another namespace's workload counted")
			}
		})
	}
}

// TestServedTrafficOverridesPortReading checks that a Service whose named
// targetPort its pods' listing does not carry is not blamed, and its
// derived endpoints are not read as none, while its ready pods answer
// clients after the release; without those answers both readings stand.
func TestServedTrafficOverridesPortReading(t *testing.T) {
	var svc corev1.Service
	if err := json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"api-gateway","namespace":"edge"},
  "spec":{"type":"LoadBalancer","ports":[{"name":"https","port":443,"targetPort":"https","protocol":"TCP"}],"selector":{"app.kubernetes.io/name":"api-gateway"}}}`), &svc); err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api-gateway","namespace":"edge"},
  "spec":{"selector":{"matchLabels":{"app.kubernetes.io/name":"api-gateway"}},"template":{"metadata":{"labels":{"app.kubernetes.io/name":"api-gateway"}},
    "spec":{"containers":[{"name":"api-gateway","image":"envoyproxy/envoy:v1.31.4","ports":[{"containerPort":8443,"name":"http","protocol":"TCP"}]}]}}}}`), &dep); err != nil {
		t.Fatal(err)
	}
	pod := corev1.Pod{}
	pod.Name, pod.Namespace = "api-gateway-4j5bqx96gw-2997j", "edge"
	pod.Labels = map[string]string{"app.kubernetes.io/name": "api-gateway"}
	pod.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "api-gateway-4j5bqx96gw"}}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pod.Spec = dep.Spec.Template.Spec
	release := Finding{Kind: KindDeploy, Subject: "api-gateway", Time: win.Start.Add(5 * time.Minute)}
	access := servedLines(`[2026-03-14T10:12:%02d.000Z] "GET /v2/orders HTTP/2" 200 - via_upstream - "-" 1326 2126 41 80 "185.171.44.%d" "okhttp/4.12.0" "-" "api.example.com" "10.70.19.99:8080"`, 12)
	refused := servedLines(`[2026-03-14T10:12:%02d.000Z] "GET /v2/orders HTTP/2" 503 UF - "-" 0 91 3 - "185.171.44.%d" "okhttp/4.12.0" "-" "api.example.com" "-"`, 12)
	noEP := Finding{Kind: KindNoEndpoints, Subject: "api-gateway", Object: "service edge/api-gateway", Namespace: "edge"}
	for _, c := range []struct {
		name  string
		lines []string
		blame bool
	}{
		{"pods answer clients after the release", access, false},
		{"pods answer nothing", nil, true},
		{"pods answer with errors", refused, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := minedSet("api-gateway", false, 10*time.Minute, c.lines...)
			set.Namespace = "edge"
			ev := &Gathered{K8s: K8sEvidence{Services: []ServiceState{{Service: svc, Known: true}}, Deployments: []appsv1.Deployment{dep}, Pods: []corev1.Pod{pod}},
				Logs: []LogSet{set}, Window: win}
			if fs := targetPortMismatch(ev, []Finding{release}); (len(fs) == 1) != c.blame {
				t.Errorf("port mismatch findings %+v, want one: %v", fs, c.blame)
			}
			if fs := dropServedEndpoints(ev, []Finding{noEP}); (len(fs) == 1) != c.blame {
				t.Errorf("no-endpoints findings kept %d, want one: %v", len(fs), c.blame)
			}
		})
	}
}
