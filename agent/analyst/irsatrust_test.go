package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// STS refusing a pod's web identity, as the AWS SDKs log it (botocore,
// the Go SDK v2, the Java SDK v2), with the role's trust policy printed by
// aws iam get-role (JSON, or the text of --output text) naming another
// namespace's ServiceAccount, or not printed at all. A trust policy that
// accepts the pod's subject (exactly or by a StringLike wildcard) is not
// this cause, nor is another refusal.
func TestIRSATrust(t *testing.T) {
	now := time.Date(2026, 11, 24, 11, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-2 * time.Hour), End: now}
	pods := []corev1.Pod{pod("exporter-6f4c8b7d95-hz9lw", func(p *corev1.Pod) {
		p.Namespace = "shop-core"
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "exporter-6f4c8b7d95"}}
		p.Spec.ServiceAccountName = "exporter"
	})}
	sas := []corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Name: "exporter", Namespace: "shop-core",
		Annotations: map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/exporter-irsa"}}}}
	trustJSON := func(sub string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "aws iam get-role --role-name exporter-irsa --query Role.AssumeRolePolicyDocument", Lines: []string{
			`{`, `    "Statement": [{`, `        "Effect": "Allow",`, `        "Action": "sts:AssumeRoleWithWebIdentity",`,
			`        "Condition": {"StringEquals": {`,
			`            "oidc.eks.eu-west-1.amazonaws.com/id/0A1B2C3D4E5F:sub": "` + sub + `",`,
			`            "oidc.eks.eu-west-1.amazonaws.com/id/0A1B2C3D4E5F:aud": "sts.amazonaws.com"`, `        }}`, `    }]`, `}`}}
	}
	trustText := evidence.CommandOutput{Command: "aws iam get-role --role-name exporter-irsa --output text", Lines: []string{
		"ROLE\tarn:aws:iam::111122223333:role/exporter-irsa\t2026-03-01T10:00:00Z\t/\tAROAEXAMPLE\texporter-irsa",
		"STATEMENT\tsts:AssumeRoleWithWebIdentity\tAllow",
		"STRINGEQUALS\tsts.amazonaws.com\tsystem:serviceaccount:shop:exporter",
		"CONDITION\toidc.eks.eu-west-1.amazonaws.com/id/0A1B2C3D4E5F:sub system:serviceaccount:shop:exporter",
	}}
	botocore := `2026-11-24T10:30:46.417Z ERROR exporter.upload upload failed: botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the AssumeRoleWithWebIdentity operation: Not authorized to perform sts:AssumeRoleWithWebIdentity`
	goSDK := `{"level":"error","ts":"2026-11-24T10:30:46Z","msg":"put object","error":"operation error S3: PutObject, get identity: get credentials: failed to refresh cached credentials, failed to retrieve credentials, operation error STS: AssumeRoleWithWebIdentity, https response error StatusCode: 403, RequestID: 5b3c1f0e-1111-4a2b-9c3d-0e1f2a3b4c5d, api error AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity"}`
	javaSDK := `2026-11-24 10:30:46.417 ERROR 1 --- [main] c.e.Exporter : software.amazon.awssdk.services.sts.model.StsException: Not authorized to perform sts:AssumeRoleWithWebIdentity (Service: Sts, Status Code: 403, Request ID: 7e1d0c4b-2222-4d5e-8f90-1a2b3c4d5e6f)`
	for _, tc := range []struct {
		name string
		line string
		cmds []evidence.CommandOutput
		want []string // nil: no finding
	}{
		{"botocore, trust policy JSON names the old namespace", botocore, []evidence.CommandOutput{trustJSON("system:serviceaccount:shop:exporter")},
			[]string{"cannot assume exporter-irsa", "whose subject is system:serviceaccount:shop-core:exporter", "names only system:serviceaccount:shop:exporter", "now runs in namespace shop-core"}},
		{"go sdk, trust policy as text", goSDK, []evidence.CommandOutput{trustText},
			[]string{"STS refuses AssumeRoleWithWebIdentity", "names only system:serviceaccount:shop:exporter"}},
		{"java sdk, no trust policy read", javaSDK, nil,
			[]string{"whose subject is system:serviceaccount:shop-core:exporter", "its sub condition names another namespace or ServiceAccount"}},
		{"a trust policy that accepts the subject", botocore, []evidence.CommandOutput{trustJSON("system:serviceaccount:shop-core:exporter")}, nil},
		{"a wildcard that accepts it", botocore, []evidence.CommandOutput{trustJSON("system:serviceaccount:shop-*:*")}, nil},
		{"another refusal", `botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the PutObject operation: Access Denied`, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := LogSet{Source: "exporter-6f4c8b7d95-hz9lw", Subject: "exporter", Namespace: "shop-core", Templates: []analysis.LogTemplate{{Example: tc.line, Incident: 8, FirstIncident: now.Add(-70 * time.Minute)}}}
			fs := detectIRSATrust(&Gathered{Window: w, Logs: []LogSet{set}, Commands: tc.cmds, K8s: K8sEvidence{Pods: pods, ServiceAccounts: sas}}, nil)
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			f := onlyFinding(t, fs, "exporter")
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := irsaTrust.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
		})
	}
}
