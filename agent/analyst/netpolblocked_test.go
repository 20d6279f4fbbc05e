package analyst

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rootcause/rootcause/agent/analysis"
)

// A failed Job whose calls to a Service time out, while a NetworkPolicy
// selecting the Service's pods admits other clients but not the Job's pods:
// curl's and Go's timeouts, a URL in the command or an environment
// variable, a Service's port mapped to its pods' port; a Job with the
// client label, a policy admitting the whole namespace, a refusal rather
// than a timeout, or no policy on the Service is none.
func TestNetpolBlocked(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	job := func(name string, jobLabels map[string]string, cmd []string, env []corev1.EnvVar) batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ledger", CreationTimestamp: metav1.NewTime(t0),
			Annotations: map[string]string{"helm.sh/hook": "post-upgrade"}},
			Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}}}
		j.Spec.Template.Labels = jobLabels
		j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "check", Command: cmd, Env: env}}
		return j
	}
	curl := []string{"sh", "-c", "curl -fsS --max-time 10 http://ledger-api.ledger.svc.cluster.local:8080/healthz"}
	envURL := []corev1.EnvVar{{Name: "TARGET_URL", Value: "http://ledger-api:80/internal/selftest"}}
	curlLog := []LogSet{logSet("ledger-api-check", false, "curl: (28) Connection timed out after 10001 milliseconds")}
	goLog := []LogSet{logSet("ledger-api-check", false, `2026/11/26 09:01:12 selftest failed: Get "http://ledger-api:80/internal/selftest": dial tcp 10.96.4.12:80: i/o timeout`)}
	refused := []LogSet{logSet("ledger-api-check", false, "curl: (7) Failed to connect to ledger-api.ledger.svc.cluster.local port 8080: Connection refused")}
	appPod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ledger-api-7d9f8c6b5-x2k4m", Namespace: "ledger", Labels: map[string]string{"app": "ledger-api"}}}
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt(8080)
	allowList := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "ledger-api-allow", Namespace: "ledger"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "ledger-api"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
				From: []networkingv1.NetworkPolicyPeer{
					{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}}},
					{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ledger.example.com/client": "true"}}}}}}}}
	sameNS := allowList
	sameNS.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}
	deny := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default-deny", Namespace: "ledger"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	svc := ServiceState{Service: corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ledger-api", Namespace: "ledger"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt(8080)}}}}}
	plain := map[string]string{"app.kubernetes.io/component": "check"}
	client := map[string]string{"app.kubernetes.io/component": "check", "ledger.example.com/client": "true"}
	cases := []struct {
		name    string
		job     batchv1.Job
		logs    []LogSet
		nps     []networkingv1.NetworkPolicy
		subject string
		want    []string
	}{
		{"curl timeout, URL in the command, allow list and a default deny", job("ledger-api-check", plain, curl, nil), curlLog,
			[]networkingv1.NetworkPolicy{deny, allowList}, "ledger-api",
			[]string{"NetworkPolicy ledger-api-allow", "pods ledger.example.com/client=true", "Job ledger-api-check", "port 8080", "Helm hook (post-upgrade)"}},
		{"Go i/o timeout, URL in the environment, Service port 80 to 8080", job("ledger-api-check", plain, nil, envURL), goLog,
			[]networkingv1.NetworkPolicy{allowList}, "ledger-api", []string{"port 8080", "time out"}},
		{"the Job carries the client label: none", job("ledger-api-check", client, curl, nil), curlLog, []networkingv1.NetworkPolicy{deny, allowList}, "", nil},
		{"a policy admitting the whole namespace: none", job("ledger-api-check", plain, curl, nil), curlLog, []networkingv1.NetworkPolicy{deny, sameNS}, "", nil},
		{"refused, not timed out: none", job("ledger-api-check", plain, curl, nil), refused, []networkingv1.NetworkPolicy{allowList}, "", nil},
		{"no policy: none", job("ledger-api-check", plain, curl, nil), curlLog, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Window: win, Scope: Scope{Service: "ledger-api", Namespace: "ledger"}}
			jobPod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ledger-api-check-r4hzt", Namespace: "ledger", Labels: map[string]string{"job-name": "ledger-api-check"}}}
			for k, v := range c.job.Spec.Template.Labels {
				jobPod.Labels[k] = v
			}
			ev.K8s.Pods = []corev1.Pod{appPod, jobPod}
			ev.K8s.Jobs = []batchv1.Job{c.job}
			ev.K8s.NetworkPolicies = c.nps
			ev.K8s.Services = []ServiceState{svc}
			f := onlyFinding(t, detectNetpolBlocked(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindNetpolBlocked, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if strings.Contains(describe(h, Scope{}), "job-name") {
				t.Error("the job controller's labels are not the Job's own")
			}
		})
	}
}

// TestWorkloadsBlocked: a running workload whose calls to a Service (by
// its cluster name, as Go's net/http and Spring's RestTemplate print
// them) time out while the Service's ingress policy admits other clients
// by a label the caller's pods do not carry is the policy's; a caller the
// policy admits, a refusal (not a timeout) and a caller whose labels are
// unknown are not.
func TestWorkloadsBlocked(t *testing.T) {
	tcp := corev1.ProtocolTCP
	p8080 := intstr.FromInt32(8080)
	np := networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "stock-svc"}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p8080}}}}}}
	np.Name, np.Namespace = "stock-svc-allow", "store"
	pod := func(name string, labels map[string]string) corev1.Pod {
		p := corev1.Pod{}
		p.Name, p.Namespace, p.Labels = name, "store", labels
		return p
	}
	target := pod("stock-svc-5d8c9-abcde", map[string]string{"app": "stock-svc"})
	relabelled := map[string]string{"app.kubernetes.io/name": "cart", "app.kubernetes.io/instance": "cart"}
	goLine := `{"level":"error","ts":"2026-03-02T10:01:02.003Z","msg":"reserve failed","error":"Post \"http://stock-svc.store.svc.cluster.local:8080/v1/hold\": dial tcp 10.100.3.4:8080: i/o timeout"}`
	javaLine := `2026-03-02 10:01:02.003 ERROR 1 --- [nio-8080-exec-3] c.e.cart.StockClient : I/O error on POST request for "http://stock-svc:8080/v1/hold": Connect timed out; nested exception is java.net.SocketTimeoutException: Connect timed out`
	refused := `{"level":"error","msg":"reserve failed","error":"Post \"http://stock-svc:8080/v1/hold\": dial tcp 10.100.3.4:8080: connect: connection refused"}`
	cases := []struct {
		name   string
		labels map[string]string
		line   string
		want   bool
	}{
		{"go, relabelled caller", relabelled, goLine, true},
		{"spring, relabelled caller", relabelled, javaLine, true},
		{"admitted caller", map[string]string{"app": "cart"}, goLine, false},
		{"refused, not dropped", relabelled, refused, false},
		{"labels unknown", nil, goLine, false},
	}
	for _, c := range cases {
		caller := pod("cart-7f9b8-xk2lp", c.labels)
		caller.OwnerReferences = nil
		ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{target, caller}, NetworkPolicies: []networkingv1.NetworkPolicy{np}},
			Logs: []LogSet{{Source: caller.Name, Subject: "cart", Namespace: "store", Templates: []analysis.LogTemplate{{Template: c.line, Example: c.line, Count: 4, Incident: 4}}}}}
		out := workloadsBlocked(ev)
		if (len(out) > 0) != c.want {
			t.Errorf("%s: found %d, want %v", c.name, len(out), c.want)
			continue
		}
		if c.want {
			d := netpolBlocked.describe(&Hypothesis{Kind: KindNetpolBlocked, Subject: out[0].Subject, Primary: []*Finding{&out[0]}}, Scope{})
			if out[0].Subject != "stock-svc" || !strings.Contains(d, "stock-svc-allow") || !strings.Contains(d, "cart") || strings.Contains(d, "Job") {
				t.Errorf("%s: %s described %q", c.name, out[0].Subject, d)
			}
		}
	}
}
