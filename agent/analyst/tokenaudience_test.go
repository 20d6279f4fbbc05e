package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTokenAudience(t *testing.T) {
	at := time.Date(2026, 5, 4, 8, 0, 0, 0, time.UTC)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ledger-7c9d8b6f5-x2k4p", Namespace: "finance"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "vault-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault.example.org", Path: "token"}}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{Name: "vault-agent-init", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	role := evidence.CommandOutput{Command: "vault read auth/kubernetes/role/ledger", Lines: []string{"Key    Value", "---    -----", "audience    https://kubernetes.default.svc", "bound_service_account_names    [ledger]"}}
	cases := []struct {
		name, line, subject string
		want                []string
	}{
		{"vault kubernetes auth", `2026-05-04T08:00:03.101Z [ERROR] auth.kubernetes.auth_kubernetes_1f2e3d4c: login unauthorized: role=ledger err="invalid audience (aud) claim: audience claim does not match any expected audience" remote_address=10.1.2.3`,
			"ledger", []string{"the token carries vault.example.org", "the role expects https://kubernetes.default.svc", "init container vault-agent-init"}},
		{"OIDC verifier without a role", `level=error msg="token rejected" err="oidc: expected audience \"payments\" got [\"orders\"]: invalid aud claim"`,
			"idp-gateway", []string{"every login is rejected"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			verifier := "vault"
			if !strings.Contains(c.line, "role=") {
				verifier = "idp-gateway"
			}
			ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{pod}}, Commands: []evidence.CommandOutput{role},
				Logs: []LogSet{{Subject: verifier, Templates: []analysis.LogTemplate{{Example: c.line, Incident: 5, FirstIncident: at}}}}}
			fs := detectTokenAudience(ev, nil)
			if len(fs) != 1 || fs[0].Subject != c.subject {
				t.Fatalf("want one finding on %s, got %+v", c.subject, fs)
			}
			d := tokenAudience.describe(&Hypothesis{Kind: KindTokenAudience, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
	// A token that expired is not an audience mismatch.
	ev := &Gathered{Logs: []LogSet{{Subject: "vault", Templates: []analysis.LogTemplate{{Example: `[ERROR] auth.kubernetes: login unauthorized: role=ledger err="token is expired"`, Incident: 3}}}}}
	if fs := detectTokenAudience(ev, nil); len(fs) != 0 {
		t.Errorf("expired token read as an audience mismatch: %+v", fs)
	}
}
