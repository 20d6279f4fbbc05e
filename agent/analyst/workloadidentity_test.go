package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestNodeIdentityDenied reads a cloud denial whose caller is a node's
// instance role (the session is an EC2 instance id) as a workload without
// an identity of its own, in the SDKs' words (boto3, the Go SDK v2, the
// Java SDK v2), with the empty Pod Identity associations and the injected
// environment another cluster's pod carries; a role the workload assumed
// itself (IRSA's botocore session, a named session) is a plain denial.
func TestNodeIdentityDenied(t *testing.T) {
	empty := evidence.CommandOutput{Command: "aws eks list-pod-identity-associations --cluster-name prod-b --namespace shop", Lines: []string{"{", `    "associations": []`, "}"}}
	env := evidence.CommandOutput{Command: "kubectl --context prod-a get pod -n shop -l app=api -o jsonpath='{.items[0].spec.containers[0].env[*].name}'", Lines: []string{"PORT AWS_REGION AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"}}
	cases := []struct {
		name, line, role string
		cmds             []evidence.CommandOutput
		assoc            bool
	}{
		{"boto3, empty associations", "botocore.exceptions.ClientError: An error occurred (AccessDeniedException) when calling the GetSecretValue operation: User: arn:aws:sts::111122223333:assumed-role/eksctl-prod-nodegroup-ng-1-NodeInstanceRole-1XYZ/i-0abc12345def67890 is not authorized to perform: secretsmanager:GetSecretValue on resource: arn:aws:secretsmanager:eu-west-1:111122223333:secret:api-db because no identity-based policy allows the secretsmanager:GetSecretValue action",
			"eksctl-prod-nodegroup-ng-1-NodeInstanceRole-1XYZ", []evidence.CommandOutput{empty}, true},
		{"Go SDK v2, env of another cluster", "operation error S3: PutObject, https response error StatusCode: 403, RequestID: 7QH, api error AccessDenied: User: arn:aws:sts::111122223333:assumed-role/prod-node-role/i-0123456789abcdef0 is not authorized to perform: s3:PutObject on resource: \"arn:aws:s3:::exports/x\" because no identity-based policy allows the s3:PutObject action",
			"prod-node-role", []evidence.CommandOutput{env}, false},
		{"Java SDK v2, nothing else read", "software.amazon.awssdk.services.sqs.model.SqsException: User: arn:aws:sts::111122223333:assumed-role/general-nodes/i-0fedcba9876543210 is not authorized to perform: sqs:SendMessage on resource: arn:aws:sqs:eu-west-1:111122223333:jobs because no identity-based policy allows the sqs:SendMessage action (Service: Sqs, Status Code: 403)",
			"general-nodes", nil, false},
		{"IRSA's own role is a plain denial", "botocore.exceptions.ClientError: An error occurred (AccessDeniedException) when calling the GetSecretValue operation: User: arn:aws:sts::111122223333:assumed-role/api-prod/botocore-session-1794790807 is not authorized to perform: secretsmanager:GetSecretValue on resource: arn:aws:secretsmanager:eu-west-1:111122223333:secret:api-db",
			"", []evidence.CommandOutput{empty}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Gathered{Window: win, Commands: c.cmds, Logs: []LogSet{{Source: "api-6d9f-x2", Subject: "api", Templates: []analysis.LogTemplate{{Example: c.line, Incident: 4, FirstIncident: win.Start}}}}}
			f, ok := oneFinding(t, detectCloudDenied(&ev, nil), true)
			if !ok {
				return
			}
			if f.fact("node_role") != c.role || (f.fact("no_association") != "") != c.assoc {
				t.Fatalf("facts %v", f.Facts)
			}
			h := &Hypothesis{Kind: KindCloudDenied, Subject: f.Subject, Primary: []*Finding{&f}}
			d := cloudDenied.describe(h, Scope{})
			r := &recommender{h: h}
			cloudDenied.recommend(h, Scope{}, r)
			if c.role == "" {
				if strings.Contains(d, "instance role") || strings.Contains(r.recs[0].Action, "Pod Identity") {
					t.Errorf("a workload's own role read as the node's: %s", d)
				}
				return
			}
			for _, w := range []string{c.role, "Pod Identity", "instance profile"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if !strings.Contains(r.recs[0].Action, "pod-identity-association") {
				t.Errorf("first recommendation %q", r.recs[0].Action)
			}
		})
	}
}
