package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

const denyAll = `$ kubectl describe networkpolicy default-deny-ingress -n payments
Name:         default-deny-ingress
Namespace:    payments
Created on:   2026-02-17 10:36:09 +0000 UTC
Labels:       <none>
Annotations:  <none>
Spec:
  PodSelector:     <none> (Allowing the specific traffic to all pods in this namespace)
  Allowing ingress traffic:
    <none> (Selected pods are isolated for ingress connectivity)
  Not affecting egress traffic
  Policy Types: Ingress
`

const allowIngressNginx = `$ kubectl describe networkpolicy allow-from-ingress-nginx -n payments
Name:         allow-from-ingress-nginx
Namespace:    payments
Created on:   2026-02-17 10:36:09 +0000 UTC
Labels:       <none>
Annotations:  <none>
Spec:
  PodSelector:     app.kubernetes.io/name=payments-gateway
  Allowing ingress traffic:
    To Port: 8080/TCP
    From:
      NamespaceSelector: kubernetes.io/metadata.name=ingress-nginx
  Not affecting egress traffic
  Policy Types: Ingress
`

const allowMonitoring = `$ kubectl describe networkpolicy allow-prometheus -n payments
Name:         allow-prometheus
Namespace:    payments
Created on:   2026-02-17 10:36:09 +0000 UTC
Labels:       <none>
Annotations:  <none>
Spec:
  PodSelector:     <none> (Allowing the specific traffic to all pods in this namespace)
  Allowing ingress traffic:
    To Port: 9102/TCP
    From:
      NamespaceSelector: kubernetes.io/metadata.name=monitoring
  Not affecting egress traffic
  Policy Types: Ingress
`

const allowAnyToMetrics = `$ kubectl describe netpol allow-metrics -n payments
Name:         allow-metrics
Namespace:    payments
Created on:   2026-02-17 10:36:09 +0000 UTC
Labels:       <none>
Annotations:  <none>
Spec:
  PodSelector:     app=payments-gateway
  Allowing ingress traffic:
    To Port: 9100-9200/TCP
    From: <any> (traffic not restricted by source)
  Policy Types: Ingress
`

// A scrape target down whose pods a default-deny policy isolates and no
// policy lets the scraper's namespace reach on the metrics port: the
// policy is named, with what it lets in; a policy that admits the port
// (from the monitoring namespace, from anywhere, by a range) clears it.
func TestDetectScrapeBlocked(t *testing.T) {
	now := time.Date(2026, 2, 17, 10, 58, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	down := Finding{Kind: KindTargetDown, Subject: "payments-gateway", Namespace: "payments", Time: now.Add(-21 * time.Minute),
		Evidence: []string{`up{endpoint="metrics",instance="10.52.7.14:9102",job="payments-gateway",namespace="payments",pod="payments-gateway-7f9b6c5d8-5xkq2"} fell from 1 to 0`}}
	downNoInstance := down
	downNoInstance.Evidence = []string{"scrape target (up) of payments-gateway fell from 1 to 0"}
	wget := evidence.CommandOutput{Command: "kubectl exec -n monitoring prometheus-kps-prometheus-0 -c prometheus -- wget -qO- -T 5 http://10.52.7.14:9102/metrics",
		Exec: true, Namespace: "monitoring", Pod: "prometheus-kps-prometheus-0", Container: "prometheus", Run: "wget -qO- -T 5 http://10.52.7.14:9102/metrics",
		Lines: []string{"wget: download timed out"}, ExitCode: 1}
	targets := evidence.CommandOutput{Command: "curl -s http://prometheus:9090/api/v1/targets", Run: "curl -s http://prometheus:9090/api/v1/targets",
		Lines: []string{`{"status":"success","data":{"activeTargets":[{"scrapeUrl":"http://10.52.7.14:9102/metrics","lastError":"Get \"http://10.52.7.14:9102/metrics\": context deadline exceeded","health":"down"}]}}`}}
	pod := corev1.Pod{}
	pod.Name, pod.Namespace = "payments-gateway-7f9b6c5d8-5xkq2", "payments"
	pod.Status.Phase = corev1.PodRunning
	cases := []struct {
		name     string
		policies string
		down     Finding
		cmds     []evidence.CommandOutput
		want     []string // nil: no finding
	}{
		{"default-deny with only the ingress controller allowed", denyAll + allowIngressNginx, down, []evidence.CommandOutput{wget},
			[]string{"not down", "port 9102", "default-deny-ingress", "8080/TCP from namespace ingress-nginx", "download timed out"}},
		{"port read from the targets API", denyAll + allowIngressNginx, downNoInstance, []evidence.CommandOutput{targets},
			[]string{"port 9102", "context deadline exceeded"}},
		{"monitoring namespace allowed on the metrics port", denyAll + allowIngressNginx + allowMonitoring, down, []evidence.CommandOutput{wget}, nil},
		{"metrics port range open to any source", denyAll + allowAnyToMetrics, down, []evidence.CommandOutput{wget}, nil},
		{"no policy at all", "", down, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Window: w, Commands: c.cmds, K8s: K8sEvidence{Pods: []corev1.Pod{pod}}}
			res := kubetext.Parse([]byte(c.policies), now)
			for _, o := range res.Objects {
				if np, ok := o.(*networkingv1.NetworkPolicy); ok {
					ev.K8s.NetworkPolicies = append(ev.K8s.NetworkPolicies, *np)
				}
			}
			fs := detectScrapeBlocked(ev, []Finding{c.down})
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("finding %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %+v (policies %d)", fs, len(ev.K8s.NetworkPolicies))
			}
			h := &Hypothesis{Kind: KindScrapeBlocked, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "port 9102") {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
