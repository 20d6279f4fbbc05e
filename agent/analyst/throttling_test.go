package analyst

import (
	"strings"
	"testing"
)

func TestThrottling(t *testing.T) {
	testLines(t, throttlingM, []lineCase{
		{`POST https://api.sendgrid.com/v3/mail/send -> HTTP 429 Too Many Requests`, KindThrottling},
		{`botocore.exceptions.ClientError: An error occurred (ThrottlingException) when calling the PutItem operation: Rate exceeded`, KindThrottling},
		{`{"level":"warn","msg":"upstream answered","status":429,"path":"/v1/quotes"}`, KindThrottling},
		{`{"level":"info","msg":"request","status":200,"duration_ms":429}`, ""},
		// Cloud APIs' throttle replies in their own words.
		{`2026-07-08 13:05:44,217 ERROR   export.worker - job=771273 export failed: An error occurred (SlowDown) when calling the UploadPart operation (reached max retries: 4): Please reduce your request rate.`, KindThrottling},
		{`2026-07-08 13:01:29,707 WARNING botocore.retryhandler - job=771271 retry needed: PutObject/UploadPart got 503 SlowDown (attempt 1/5), sleeping 6.50s`, KindThrottling},
		{`com.amazonaws.services.s3.model.AmazonS3Exception: Please reduce your request rate. (Service: Amazon S3; Status Code: 503; Error Code: SlowDown; Request ID: 7Q8R)`, KindThrottling},
		{`software.amazon.awssdk.services.dynamodb.model.ProvisionedThroughputExceededException: The level of configured provisioned throughput for the table was exceeded. (Service: DynamoDb, Status Code: 400)`, KindThrottling},
		{`operation error S3: PutObject, https response error StatusCode: 503, RequestID: 4X1, api error SlowDown: Please reduce your request rate.`, KindThrottling},
		{`googleapi: Error 403: Rate Limit Exceeded, rateLimitExceeded`, KindThrottling},
		{`{"level":"info","msg":"slow down the poller","interval":"5s"}`, ""},
		// A counter of throttled calls: zero is none, more is some.
		{`2026-11-26T10:00:12.011Z INFO  stats last 30m: sent=0 failed=0 ses_throttled=0`, ""},
		{`level=info msg="window stats" throttled: 0 retried: 0`, ""},
		{`2026-11-26T10:00:12.011Z INFO  stats last 30m: sent=41 failed=0 ses_throttled=12`, KindThrottling},
		{`WARN request throttled by upstream, backing off 2s`, KindThrottling},
	})
	for _, c := range []struct{ line, cloud, bucket string }{
		{`An error occurred (SlowDown) when calling the UploadPart operation (reached max retries: 4): Please reduce your request rate.`, "S3", ""},
		{`uploaded s3://acme-exports-prod/tenants/t-1190/exports/771201.csv.gz parts=24`, "S3", "acme-exports-prod"},
		{`botocore.exceptions.ClientError: An error occurred (ProvisionedThroughputExceededException) when calling the PutItem operation`, "DynamoDB", ""},
		{`POST https://api.sendgrid.com/v3/mail/send -> HTTP 429 Too Many Requests`, "", ""},
	} {
		if got := cloudAPIOf(c.line); got != c.cloud {
			t.Errorf("cloudAPIOf(%q) = %q, want %q", c.line, got, c.cloud)
		}
		if got := bucketOf(c.line); got != c.bucket {
			t.Errorf("bucketOf(%q) = %q, want %q", c.line, got, c.bucket)
		}
	}
	cases := []struct {
		facts   map[string]string
		trigger *Finding
		want    string
	}{
		{map[string]string{"external": "SendGrid", "caller": "notifier", "line": "HTTP 429 Too Many Requests"}, nil,
			"the external API SendGrid rate-limits (HTTP 429, too many requests) the calls from notifier"},
		{map[string]string{"caller": "quotes", "line": `"status":429`}, &Finding{Kind: KindConfigChange, Facts: map[string]string{"revision": "r42"}},
			"rate-limit misconfiguration in quotes (config change r42)"},
		{map[string]string{"caller": "quotes", "target": "pricing", "line": `"status":429`}, nil, "quotes is throttled (rate limited) by pricing"},
		{map[string]string{"caller": "quotes", "cloud": "S3", "resource": "acme-exports-prod", "contender": "archiver", "line": `An error occurred (SlowDown) when calling the UploadPart operation`}, nil,
			"quotes is throttled by S3: its requests on acme-exports-prod exceed the request rate S3 serves, and are refused (SlowDown)"},
	}
	for _, c := range cases {
		h := &Hypothesis{Kind: KindThrottling, Subject: "quotes", Trigger: c.trigger, Primary: []*Finding{{Kind: KindThrottling, Subject: "quotes", Facts: c.facts}}}
		if d := describe(h, Scope{}); !strings.Contains(d, c.want) {
			t.Errorf("description %q lacks %q", d, c.want)
		}
		if len(recommend(h, Scope{})) == 0 {
			t.Errorf("no recommendations")
		}
	}
}

// TestThrottledResourceShared links two services a cloud API throttles on
// the same bucket, and leaves apart those on different buckets.
func TestThrottledResourceShared(t *testing.T) {
	mk := func(caller, cloud, res string) Finding {
		return Finding{Kind: KindThrottling, Subject: caller, Facts: map[string]string{"caller": caller, "cloud": cloud, "resource": res}}
	}
	cases := []struct {
		name string
		fs   []Finding
		want string // contender of the first
	}{
		{"same bucket", []Finding{mk("export-service", "S3", "exports"), mk("archiver", "S3", "exports")}, "archiver"},
		{"bucket unknown on one side", []Finding{mk("export-service", "S3", ""), mk("archiver", "S3", "exports")}, "archiver"},
		{"different buckets", []Finding{mk("export-service", "S3", "exports"), mk("archiver", "S3", "logs")}, ""},
		{"different providers", []Finding{mk("export-service", "S3", ""), mk("archiver", "DynamoDB", "")}, ""},
	}
	for _, c := range cases {
		shareThrottledResource(c.fs)
		if got := c.fs[0].fact("contender"); got != c.want {
			t.Errorf("%s: contender %q, want %q", c.name, got, c.want)
		}
		if c.want != "" && !c.fs[0].relates(c.want) {
			t.Errorf("%s: %v does not relate to %s", c.name, c.fs[0].Related, c.want)
		}
	}
}

// TestThrottlingLoadSource answers a cloud API's throttling from the
// caller that started just before it (a backfill job launched, a batch
// scaled out) as the load that fills the shared request rate, with the
// others on the resource as its victims; a throttled caller with no change
// of its own stays the victim; the resource is a system of the answer.
func TestThrottlingLoadSource(t *testing.T) {
	launch := &Finding{Kind: KindInfraChange, Subject: "thumbs-backfill", Summary: "infrastructure change of thumbs-backfill",
		Facts: map[string]string{"description": "AWS Batch array job thumbs-backfill (size 400): re-encode all media in place"}}
	otherDeploy := &Finding{Kind: KindDeploy, Subject: "uploads-api", Facts: map[string]string{"description": "uploads-api 4.7.0"}}
	cases := []struct {
		name, subject, contender string
		trigger                  *Finding
		says, recs               string
	}{
		{"the job that started is the load", "thumbs-backfill", "uploads-api", launch,
			"thumbs-backfill sends so many requests to media-prod that S3 throttles everyone on it", "Throttle or pause thumbs-backfill's requests to media-prod"},
		{"DynamoDB table shared with a new writer", "ledger-import", "ledger-api", &Finding{Kind: KindDeploy, Subject: "ledger-import", Facts: map[string]string{"description": "ledger-import 2.0: parallel segments 64"}},
			"ledger-import sends so many requests to media-prod that S3 throttles", "Throttle or pause ledger-import's requests"},
		{"a victim with another's change stays the victim", "uploads-api", "thumbs-backfill", otherDeploy,
			"uploads-api is throttled by S3", "Throttle or pause thumbs-backfill's requests to media-prod"},
		{"a victim with no change", "uploads-api", "thumbs-backfill", nil,
			"uploads-api is throttled by S3", "Throttle or pause thumbs-backfill's requests to media-prod"},
	}
	for _, c := range cases {
		if c.trigger == otherDeploy {
			// Its trigger is a change of another subject.
			c.trigger = &Finding{Kind: KindDeploy, Subject: "albums-api"}
		}
		f := &Finding{Kind: KindThrottling, Subject: c.subject, Facts: map[string]string{"caller": c.subject, "cloud": "S3", "resource": "media-prod", "contender": c.contender,
			"line": "api error SlowDown: Please reduce your request rate.", "contender_line": "operation error S3: PutObject, StatusCode: 503, api error SlowDown"}}
		h := &Hypothesis{Kind: KindThrottling, Subject: c.subject, Trigger: c.trigger, Primary: []*Finding{f}}
		if d := describe(h, Scope{}); !strings.Contains(d, c.says) {
			t.Errorf("%s: description %q lacks %q", c.name, d, c.says)
		}
		recs := recommend(h, Scope{})
		if len(recs) == 0 || !strings.Contains(recs[0].Action, c.recs) {
			t.Errorf("%s: first action %v, want %q", c.name, recs, c.recs)
		}
	}
	fs := []Finding{
		{Kind: KindThrottling, Subject: "uploads-api", Facts: map[string]string{"caller": "uploads-api", "cloud": "S3", "resource": "media-prod"}},
		{Kind: KindThrottling, Subject: "thumbs-backfill", Facts: map[string]string{"caller": "thumbs-backfill", "cloud": "S3", "resource": "media-prod"}},
	}
	shareThrottledResource(fs)
	if fs[0].fact("affected") != "media-prod" || fs[1].fact("contender") != "uploads-api" {
		t.Errorf("affected %q, contender %q", fs[0].fact("affected"), fs[1].fact("contender"))
	}
}
