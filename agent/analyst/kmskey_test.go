package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

const trailSchedule = `{"eventVersion":"1.09","userIdentity":{"type":"AssumedRole","principalId":"AROATQZ3EXAMPLE7JANI:kms-key-janitor","arn":"arn:aws:sts::246810121416:assumed-role/kms-key-janitor-role/kms-key-janitor","accountId":"246810121416"},"eventTime":"2026-11-23T10:18:41Z","eventSource":"kms.amazonaws.com","eventName":"ScheduleKeyDeletion","awsRegion":"eu-central-1","sourceIPAddress":"3.120.44.219","userAgent":"aws-sdk-go-v2/1.30.3","requestParameters":{"keyId":"arn:aws:kms:eu-central-1:246810121416:key/4d2e7b19-0c8a-4f3e-b5d1-9a6c2e0f7b38","pendingWindowInDays":7},"responseElements":{"keyId":"arn:aws:kms:eu-central-1:246810121416:key/4d2e7b19-0c8a-4f3e-b5d1-9a6c2e0f7b38","keyState":"PendingDeletion","pendingWindowInDays":7},"eventID":"9d3eaeaa-ff4d-af1f-402d-1959fe97059a","readOnly":false,"resources":[{"accountId":"246810121416","type":"AWS::KMS::Key","ARN":"arn:aws:kms:eu-central-1:246810121416:key/4d2e7b19-0c8a-4f3e-b5d1-9a6c2e0f7b38"}],"eventType":"AwsApiCall","managementEvent":true,"recipientAccountId":"246810121416","eventCategory":"Management"}`

func TestCloudTrailChanges(t *testing.T) {
	refused := `{"eventVersion":"1.09","userIdentity":{"type":"AWSService","invokedBy":"s3.amazonaws.com"},"eventTime":"2026-11-23T10:18:57Z","eventSource":"kms.amazonaws.com","eventName":"GenerateDataKey","errorCode":"KMSInvalidStateException","readOnly":false,"eventID":"x1"}`
	read := `{"eventVersion":"1.09","userIdentity":{"type":"IAMUser","arn":"arn:aws:iam::246810121416:user/ana","userName":"ana"},"eventTime":"2026-11-23T10:20:00Z","eventSource":"kms.amazonaws.com","eventName":"DescribeKey","readOnly":true,"eventID":"x2"}`
	policy := `{"eventVersion":"1.08","userIdentity":{"type":"IAMUser","arn":"arn:aws:iam::246810121416:user/ana","userName":"ana"},"eventTime":"2026-11-23T09:02:11Z","eventSource":"s3.amazonaws.com","eventName":"PutBucketPolicy","requestParameters":{"bucketName":"acme-customer-documents"},"readOnly":false,"eventID":"x3"}`
	var lines []evidence.LogLine
	for _, l := range []string{trailSchedule, refused, read, policy, "START RequestId: 0c8e2d71 Version: 12"} {
		lines = append(lines, evidence.LogLine{Time: win.Start, Text: l})
	}
	cs := cloudTrailChanges(lines)
	if len(cs) != 2 {
		t.Fatalf("want the two calls that changed something, got %+v", cs)
	}
	if !strings.Contains(cs[0].Description, "ScheduleKeyDeletion on key/4d2e7b19") || cs[0].Author != "assumed-role/kms-key-janitor-role/kms-key-janitor" || cs[0].Service != "kms" {
		t.Errorf("first change %+v", cs[0])
	}
	if !strings.Contains(cs[1].Description, "PutBucketPolicy on acme-customer-documents by user/ana") {
		t.Errorf("second change %+v", cs[1])
	}
}

func TestDetectKMSKey(t *testing.T) {
	python := []string{
		`2026-11-23 10:18:57,057 ERROR [documents_api.storage] upload doc_vrrg9hcmza7h failed`,
		`Traceback (most recent call last):`,
		`  File "/app/documents_api/storage.py", line 112, in put_document`,
		`botocore.exceptions.ClientError: An error occurred (KMS.KMSInvalidStateException) when calling the PutObject operation: arn:aws:kms:eu-central-1:246810121416:key/4d2e7b19-0c8a-4f3e-b5d1-9a6c2e0f7b38 is pending deletion.`,
		`2026-11-23 10:19:55,219 ERROR [documents_api.storage] download doc_zvmgtnmrfkdw failed: An error occurred (KMS.KMSInvalidStateException) when calling the GetObject operation: arn:aws:kms:eu-central-1:246810121416:key/4d2e7b19-0c8a-4f3e-b5d1-9a6c2e0f7b38 is pending deletion.`,
	}
	javaDisabled := []string{
		`2026-11-23 10:20:01.004 ERROR 1 --- [nio-8080-exec-3] c.a.r.ReportStore : put failed: software.amazon.awssdk.services.s3.model.S3Exception: arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab is disabled. (Service: S3, Status Code: 400, Request ID: 7Q2H)`,
		`2026-11-23 10:20:11.004 ERROR 1 --- [nio-8080-exec-5] c.a.r.ReportStore : put failed: software.amazon.awssdk.services.s3.model.S3Exception: arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab is disabled. (Service: S3, Status Code: 400, Request ID: 8R3J)`,
	}
	gcp := []string{
		`{"severity":"ERROR","message":"write failed: googleapi: Error 400: projects/acme/locations/europe/keyRings/docs/cryptoKeys/uploads/cryptoKeyVersions/3 is not enabled, current state is: DESTROY_SCHEDULED., failedPrecondition"}`,
		`{"severity":"ERROR","message":"write failed: googleapi: Error 400: projects/acme/locations/europe/keyRings/docs/cryptoKeys/uploads/cryptoKeyVersions/3 is not enabled, current state is: DESTROY_SCHEDULED., failedPrecondition"}`,
	}
	describeKey := evidence.CommandOutput{Command: "aws kms describe-key --key-id alias/customer-documents --output text", Lines: []string{"4d2e7b19-0c8a-4f3e-b5d1-9a6c2e0f7b38\tPendingDeletion\tFalse\t2026-11-30T10:18:41.402000+00:00\tCUSTOMER"}}
	trail := LogSet{Source: "aws-cloudtrail-logs", Subject: "aws-cloudtrail-logs", Origin: SrcCloudWatch, Templates: minedSet("trail", false, 0, trailSchedule).Templates}
	cases := []struct {
		name                   string
		lines                  []string
		extra                  []LogSet
		cmds                   []evidence.CommandOutput
		key, state, ops, actor string
	}{
		{"boto3 traceback, CloudTrail and describe-key", python, []LogSet{trail}, []evidence.CommandOutput{describeKey},
			"4d2e7b19-0c8a-4f3e-b5d1-9a6c2e0f7b38", "pending deletion", "PutObject GetObject", "assumed-role/kms-key-janitor-role/kms-key-janitor"},
		{"AWS SDK for Java, key disabled", javaDisabled, nil, nil, "1234abcd-12ab-34cd-56ef-1234567890ab", "disabled", "", ""},
		{"Cloud KMS key version scheduled for destruction", gcp, nil, nil, "cryptoKeys/uploads", "pending deletion", "", ""},
		{"a key that is fine", []string{`2026-11-23 10:18:57,057 INFO [documents_api.storage] upload doc_1 stored with SSE-KMS key arn:aws:kms:eu-central-1:246810121416:key/4d2e7b19-0c8a-4f3e-b5d1-9a6c2e0f7b38`}, nil, nil, "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: append([]LogSet{minedSet("documents-api", false, 0, c.lines...)}, c.extra...), Commands: c.cmds, Window: win}
			fs := detectKMSKeys(ev, nil)
			f, ok := oneFinding(t, fs, c.key != "")
			if !ok {
				return
			}
			if f.Subject != c.key || f.fact("state") != c.state || f.fact("callers") != "documents-api" || c.ops != "" && !strings.Contains(f.fact("operations"), "PutObject") && !strings.Contains(f.fact("operations"), "GetObject") || f.fact("actor") != c.actor {
				t.Errorf("subject %q state %q callers %q ops %q actor %q; want %q %q documents-api %q %q", f.Subject, f.fact("state"), f.fact("callers"), f.fact("operations"), f.fact("actor"), c.key, c.state, c.ops, c.actor)
			}
			h := &Hypothesis{Kind: KindKMSKey, Subject: f.Subject, Primary: []*Finding{&f}}
			d := kmsKey.describe(h, Scope{})
			for _, want := range []string{"KMS key", c.state, "documents-api"} {
				if !strings.Contains(d, want) {
					t.Errorf("description lacks %q: %s", want, d)
				}
			}
			thumb := &Finding{Kind: KindConfigChange, Subject: "thumbnailer", Facts: map[string]string{"description": "thumbnailer max width 1600 -> 2048"}}
			sched := &Finding{Kind: KindInfraChange, Subject: "kms", Facts: map[string]string{"description": "CloudTrail kms ScheduleKeyDeletion on key/" + c.key + " by role/janitor"}}
			if kmsKey.fitsChange(h, thumb) || !kmsKey.fitsChange(h, sched) {
				t.Error("the key's deletion should trigger the refusals, an unrelated config change should not")
			}
		})
	}
}
