package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestTaskSecretsUnavailable: ECS's stoppedReason for tasks whose secrets
// could not be fetched (describe-tasks as JSON and as a --query'd table),
// its inner error (KMS decrypt refused, access to an SSM parameter
// denied), CloudTrail's refusal and the change that moved the secret to
// a customer-managed key. A task stopped for another reason is not this.
func TestTaskSecretsUnavailable(t *testing.T) {
	w := testWindow()
	jsonTasks := evidence.CommandOutput{Command: "aws ecs describe-tasks --cluster prod --tasks 0e353a92 bf1df428", Lines: []string{
		`            "group": "service:billing-worker",`,
		`            "stopCode": "TaskFailedToStart",`,
		`            "stoppedAt": "` + w.Start.Add(5*time.Minute).Format(time.RFC3339) + `",`,
		`            "stoppedReason": "ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval failed: unable to retrieve secret from asm: service call has been retried 1 time(s): failed to fetch secret arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/billing/db-Ab12Cd from secrets manager: AccessDeniedException: Access to KMS is not allowed",`,
		`            "taskDefinitionArn": "arn:aws:ecs:us-east-1:123456789012:task-definition/billing-worker:17",`,
	}}
	trail := evidence.CommandOutput{Command: "aws cloudtrail lookup-events --lookup-attributes AttributeKey=EventName,AttributeValue=Decrypt", Lines: []string{
		`{"eventTime":"2026-09-01T09:05:00Z","errorCode":"AccessDenied","errorMessage":"User: arn:aws:sts::123456789012:assumed-role/billing-worker-exec/abc is not authorized to perform: kms:Decrypt on resource: arn:aws:kms:us-east-1:123456789012:key/1111 because no identity-based policy allows the kms:Decrypt action"}`}}
	ssmTable := evidence.CommandOutput{Command: "aws ecs describe-tasks --cluster prod --tasks 9f0e --query 'tasks[].[taskDefinitionArn,stoppedReason]' --output text", Lines: []string{
		"arn:aws:ecs:us-east-1:123456789012:task-definition/report-api:9\tResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval failed: unable to retrieve secrets from ssm: service call has been retried 1 time(s): AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/report-api-exec/9f0e is not authorized to perform: ssm:GetParameters on resource: arn:aws:ssm:us-east-1:123456789012:parameter/prod/report/api-key"}}
	other := evidence.CommandOutput{Command: "aws ecs describe-tasks --cluster prod --tasks 1a2b", Lines: []string{
		`            "group": "service:billing-worker",`,
		`            "stoppedReason": "Essential container in task exited",`}}
	rekey := evidence.Change{Timestamp: w.Start.Add(-time.Hour), Service: "secretsmanager", Kind: "infra", Description: "re-encrypt prod/billing/* secrets with customer-managed key alias/prod-secrets"}
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string
		says    []string
	}{
		{"KMS decrypt refused after a re-encryption", []evidence.CommandOutput{jsonTasks, trail}, "billing-worker",
			[]string{"tasks of billing-worker cannot start (ResourceInitializationError)", "prod/billing/db", "Access to KMS is not allowed", "kms:Decrypt", "re-encrypt prod/billing/*"}},
		{"an SSM parameter denied, read from a text table", []evidence.CommandOutput{ssmTable}, "report-api",
			[]string{"tasks of report-api cannot start", "/prod/report/api-key", "ssm:GetParameters"}},
		{"a container that exited", []evidence.CommandOutput{other}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectTaskSecretsUnavailable(&Gathered{Commands: c.cmds, Changes: []evidence.Change{rekey}, Window: w}, nil)
			f := onlyFinding(t, fs, c.subject)
			if f == nil {
				return
			}
			wantDescribed(t, &Hypothesis{Kind: KindTaskSecretsUnavailable, Subject: f.Subject, Primary: []*Finding{f}, Onset: f.Time}, Scope{}, c.says...)
		})
	}
}
