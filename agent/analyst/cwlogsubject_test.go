package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestCloudWatchGroupSubject names a shared log group's lines by the
// workload its streams name (AWS Batch's /aws/batch/job, an ECS cluster's
// group), and a group named for its workload by its own name.
func TestCloudWatchGroupSubject(t *testing.T) {
	lines := func(group string, streams ...string) []evidence.LogLine {
		var out []evidence.LogLine
		for _, s := range streams {
			out = append(out, evidence.LogLine{Source: group + "/" + s, Text: "x"})
		}
		return out
	}
	cases := []struct {
		name, group string
		lines       []evidence.LogLine
		want        string
	}{
		{"AWS Batch job definition/default/task id", "/aws/batch/job",
			lines("/aws/batch/job", "thumbs-v3-backfill/default/c08be054783a7b0c81e64cb0679b2d00", "thumbs-v3-backfill/default/1e25201a05a5cad322850a4ae295daed", "thumbs-v3-backfill/default/e884ff2b5181091a36fd33dd83dd900b"), "thumbs-v3-backfill"},
		{"ECS awslogs prefix/container/task", "/ecs/containers",
			lines("/ecs/containers", "web/orders-api/3f1c2d9e8b7a4c6d9e0f1a2b3c4d5e6f", "web/orders-api/4a1c2d9e8b7a4c6d9e0f1a2b3c4d5e6f"), "web"},
		{"several jobs, none most", "/aws/batch/job",
			lines("/aws/batch/job", "nightly-export/default/a1", "thumbs/default/b2", "reindex/default/c3"), "job"},
		{"Lambda's dated streams name no workload", "/aws/lambda/orders",
			lines("/aws/lambda/orders", "2026/11/19/[$LATEST]0f1e2d3c4b5a69788796a5b4c3d2e1f0"), "orders"},
		{"a group named for its service", "/aws/ecs/payments-api",
			lines("/aws/ecs/payments-api", "ecs/payments/abc"), "payments-api"},
		{"a generic group of dated streams", "/aws/batch/job",
			lines("/aws/batch/job", "2026/11/19/abc", "2026/11/19/def"), "job"},
	}
	for _, c := range cases {
		if got := cloudWatchGroupSubject(c.group, c.lines); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestOwnLogFromCloudWatch counts a finding that quotes a line of a
// CloudWatch log group as the subject's own log, and a CloudWatch metric
// as no log.
func TestOwnLogFromCloudWatch(t *testing.T) {
	logged := &Finding{Kind: KindThrottling, Subject: "thumbs-v3-backfill", Source: SrcCloudWatch, Facts: map[string]string{"line": "api error SlowDown"}}
	metric := &Finding{Kind: KindThrottling, Subject: "thumbs-v3-backfill", Source: SrcCloudWatch, Facts: map[string]string{"metric": "AWS/S3/5xxErrors"}}
	if !ownStateOrLog(&Hypothesis{Subject: "thumbs-v3-backfill", Primary: []*Finding{logged}}) {
		t.Error("a CloudWatch log line is not read as the subject's own log")
	}
	if ownStateOrLog(&Hypothesis{Subject: "thumbs-v3-backfill", Primary: []*Finding{metric}}) {
		t.Error("a CloudWatch metric is read as the subject's own log")
	}
}
