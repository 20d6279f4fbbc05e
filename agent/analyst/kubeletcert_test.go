package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestKubeletCertLines: the kubelet stating its client certificate is
// gone or expired (client-go's transport, the bootstrap check, the
// certificate manager); rotation news and a registry's expired
// certificate are not it.
func TestKubeletCertLines(t *testing.T) {
	for line, want := range map[string]bool{
		`E1126 08:03:12.118023    1187 transport.go:123] "No valid client certificate is found but the server is not responsive. A restart may be necessary to retrieve new initial credentials." lastCertificateAvailabilityTime="2026-11-26 08:03:12 +0000 UTC"`: true,
		`E1126 08:08:22.776115   40217 bootstrap.go:266] part of the existing bootstrap client certificate in /etc/kubernetes/kubelet.conf is expired: 2026-11-26 08:03:12 +0000 UTC`:                                                                              true,
		`E0412 03:00:01.000000    911 certificate_manager.go:488] kubernetes.io/kube-apiserver-client-kubelet: current certificate has expired, no valid certificate to rotate`:                                                                                    true,
		`I0412 03:00:01.000000    911 certificate_manager.go:356] kubernetes.io/kube-apiserver-client-kubelet: Certificate rotation is enabled`:                                                                                                                    false,
		`E0412 03:00:01.000000    911 remote_image.go:180] "PullImage from image service failed" err="x509: certificate has expired or is not yet valid" image="registry.local/app:1"`:                                                                             false,
	} {
		if got := kubeletCertLineRE.MatchString(line); got != want {
			t.Errorf("%.70q: %v, want %v", line, got, want)
		}
	}
}

// TestDetectKubeletCert: the kubelet's journal stating its certificate
// expired, or openssl showing the node's client certificate past its end
// while the node is NotReady, names the node; its pods' workloads and the
// logs read are related. A certificate still valid, or expired on a Ready
// node that nothing refuses, is no finding.
func TestDetectKubeletCert(t *testing.T) {
	now := time.Date(2026, 4, 12, 3, 30, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	at := now.Add(-30 * time.Minute)
	node := func(ready corev1.ConditionStatus) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b3"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: ready, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(at.Add(time.Minute))}}}}
	}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "billing-api-6f9c8d7b5-4jx2k", Namespace: "billing"}, Spec: corev1.PodSpec{NodeName: "node-b3"}}
	journal := LogSet{Source: "node-b3-journal", Subject: "node-b3-journal", Host: true, Templates: []analysis.LogTemplate{
		{Example: `Apr 12 03:00:01 node-b3 kubelet[911]: E0412 03:00:01.118023     911 transport.go:123] "No valid client certificate is found and the server is responsive, exiting." lastCertificateAvailabilityTime="2026-04-12 03:00:00 +0000 UTC"`, Incident: 1, FirstIncident: at, FirstSeen: at},
		{Example: `Apr 12 03:00:02 node-b3 kubelet[911]: E0412 03:00:02.662091     911 kubelet_node_status.go:540] "Error updating node status, will retry" err="error getting node \"node-b3\": Unauthorized"`, Incident: 9, FirstIncident: at, FirstSeen: at},
	}}
	unauthorizedOnly := LogSet{Source: "node-b3-kubelet", Subject: "node-b3-kubelet", Host: true, Templates: journal.Templates[1:]}
	apiserver := LogSet{Source: "cp-1-kube-apiserver", Subject: "cp-1-kube-apiserver", Templates: []analysis.LogTemplate{
		{Example: `E0412 03:00:02.660114       1 authentication.go:73] "Unable to authenticate the request" err="[x509: certificate has expired or is not yet valid: current time 2026-04-12T03:00:02Z is after 2026-04-12T03:00:00Z]"`, Incident: 40, FirstIncident: at},
	}}
	openssl := func(notAfter string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "ssh node-b3 'sudo openssl x509 -in /var/lib/kubelet/pki/kubelet-client-current.pem -noout -subject -enddate; grep rotate /var/lib/kubelet/config.yaml'", Host: "node-b3", Lines: []string{
			"subject=O = system:nodes, CN = system:node:node-b3", "notAfter=" + notAfter, "rotateCertificates: false"}}
	}
	cases := []struct {
		name string
		ev   Gathered
		n    int
		want []string
	}{
		{"journal", Gathered{K8s: K8sEvidence{Nodes: []corev1.Node{node(corev1.ConditionUnknown)}, Pods: []corev1.Pod{pod}}, Logs: []LogSet{journal, apiserver}, Window: w}, 1,
			[]string{"kubelet client certificate of node node-b3 expired", "Unauthorized", "billing-api (billing-api-6f9c8d7b5-4jx2k)"}},
		{"openssl on a NotReady node", Gathered{K8s: K8sEvidence{Nodes: []corev1.Node{node(corev1.ConditionUnknown)}, Pods: []corev1.Pod{pod}}, Logs: []LogSet{unauthorizedOnly}, Commands: []evidence.CommandOutput{openssl("Apr 12 03:00:00 2026 GMT")}, Window: w}, 1,
			[]string{"notAfter 2026-04-12T03:00:00Z", "rotation disabled"}},
		{"certificate still valid", Gathered{K8s: K8sEvidence{Nodes: []corev1.Node{node(corev1.ConditionUnknown)}}, Logs: []LogSet{unauthorizedOnly}, Commands: []evidence.CommandOutput{openssl("Apr 12 03:00:00 2027 GMT")}, Window: w}, 0, nil},
		{"expired on a Ready node, nothing refused", Gathered{K8s: K8sEvidence{Nodes: []corev1.Node{node(corev1.ConditionTrue)}}, Commands: []evidence.CommandOutput{openssl("Apr 12 03:00:00 2026 GMT")}, Window: w}, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := oneFinding(t, detectKubeletCert(&c.ev, nil), c.n > 0)
			if !ok {
				return
			}
			if f.Subject != "node-b3" || f.Weight != 0.95 || f.fact("workloads") != "billing-api" {
				t.Errorf("subject %q weight %v workloads %q", f.Subject, f.Weight, f.fact("workloads"))
			}
			h := &Hypothesis{Kind: KindKubeletCert, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			if !kubeletCert.related(h, &Finding{Kind: KindUnschedulable, Subject: "billing-api"}) || kubeletCert.related(h, &Finding{Kind: KindUnschedulable, Subject: "web"}) {
				t.Error("related: billing-api should be, web should not")
			}
			if len(c.ev.Logs) > 1 && !kubeletCert.related(h, &Finding{Kind: KindCertificate, Subject: "c2", Object: "logs cp-1-kube-apiserver"}) {
				t.Error("the API server's certificate lines are related")
			}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
