package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A caller refused by Envoy's RBAC filter at the server's sidecar: the
// caller's log quoting the 403 body "RBAC: access denied" (Spring Boot,
// Go zap JSON, Python requests), alone or with the server sidecar's access
// log (Istio's default text format, and its JSON format) naming
// rbac_access_denied_matched_policy, and the server namespace's
// AuthorizationPolicy. A 403 of the application itself is not it.
func TestMeshAuthzDenied(t *testing.T) {
	now := time.Date(2026, 11, 22, 14, 20, 0, 0, time.UTC)
	pods := []corev1.Pod{pod("invoicer-8c7f6d5b9-2nvxq", func(p *corev1.Pod) {
		p.Namespace = "billing"
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "invoicer-8c7f6d5b9"}}
		p.Spec.ServiceAccountName = "invoicer"
	})}
	policy := evidence.GenericObject{Kind: "AuthorizationPolicy", Namespace: "finance", Name: "books-allow-callers"}
	sidecarText := `[2026-11-22T14:16:08.409Z] "POST /v1/entries HTTP/1.1" 403 - rbac_access_denied_matched_policy[none] - "-" 0 19 0 - "-" "okhttp/4.12.0" "4e1b7d92-0c3a" "books.finance.svc.cluster.local:8080" "-" inbound|8080|| - 10.60.3.41:8080 10.60.1.187:52814 outbound_.8080_._.books.finance.svc.cluster.local default`
	sidecarJSON := `{"start_time":"2026-11-22T14:16:08.409Z","method":"POST","path":"/v1/entries","response_code":403,"response_code_details":"rbac_access_denied_matched_policy[ns[finance]-policy[books-deny-legacy]-rule[0]]","upstream_cluster":"inbound|8080||"}`
	for _, tc := range []struct {
		name    string
		caller  string
		sidecar string
		want    []string // nil: no finding
	}{
		{"spring boot caller, istio text access log", `2026-11-22T14:16:08.412Z ERROR 1 --- [invoicer] [nio-8080-exec-6] c.a.billing.BooksClient : POST /v1/entries failed status=403 body="RBAC: access denied"`, sidecarText,
			[]string{"invoicer is refused by books's service-mesh authorization", "rbac_access_denied_matched_policy[none]", "AuthorizationPolicy finance/books-allow-callers", "(cluster.local/ns/billing/sa/invoicer)"}},
		{"go zap caller, istio JSON access log", `{"level":"error","ts":"2026-11-22T14:16:08.412Z","msg":"book entry","status":403,"error":"unexpected status 403: RBAC: access denied"}`, sidecarJSON,
			[]string{"rbac_access_denied_matched_policy[ns[finance]-policy[books-deny-legacy]-rule[0]]: a DENY rule matched", "principal of the ServiceAccount invoicer"}},
		{"python caller alone", `requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: http://books.finance:8080/v1/entries (body: RBAC: access denied)`, "",
			[]string{"invoicer is refused by the service it calls's service-mesh authorization", "403 RBAC: access denied"}},
		{"the application's own 403", `2026-11-22T14:16:08.412Z ERROR 1 --- [invoicer] c.a.billing.BooksClient : POST /v1/entries failed status=403 body="{\"error\":\"insufficient_scope\"}"`, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, _ := ClassifyLine(tc.caller)
			found := []Finding{{Kind: orKind(kind), Subject: "invoicer", Namespace: "billing", Time: now.Add(-5 * time.Minute), Weight: 0.7, Facts: map[string]string{"line": tc.caller}}}
			if tc.sidecar != "" {
				found = append(found, Finding{Kind: KindAuth, Subject: "books", Namespace: "finance", Time: now.Add(-5 * time.Minute), Weight: 0.6, Facts: map[string]string{"line": tc.sidecar}})
			}
			fs := detectMeshAuthzDenied(&Gathered{K8s: K8sEvidence{Pods: pods, Custom: []evidence.GenericObject{policy}}}, found)
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			f := onlyFinding(t, fs, "invoicer")
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := meshAuthzDenied.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
		})
	}
}

// orKind is a caller's log finding's kind: what its line classifies as,
// else new errors.
func orKind(k Kind) Kind {
	if k == "" {
		return KindLogErrors
	}
	return k
}
