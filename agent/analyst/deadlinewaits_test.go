package analyst

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
)

// A run stopped at its deadline whose log shows an API refusing it for its
// rate and the client waiting before each retry ran out of time waiting:
// the refusals and the waits are read in the words of several clients.
func TestDeadlineThrottled(t *testing.T) {
	deadline := int64(3600)
	job := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "finance", Name: "recon-29884380"}}
	job.Spec.ActiveDeadlineSeconds = &deadline
	job.Spec.Template.Spec.Containers = []corev1.Container{{Name: "recon", Env: []corev1.EnvVar{
		{Name: "PAYSTREAM_API_BASE", Value: "https://api.paystream.io/v3"}, {Name: "MODE", Value: "daily"}}}}
	type tmpl struct {
		line  string
		count int
	}
	cases := []struct {
		name  string
		lines []tmpl
		want  map[string]string // facts; nil: not throttled
		desc  []string
	}{
		{"slog text: 429 then a client's sleep", []tmpl{
			{"2026-10-27T01:00:08.148Z INFO  paystream: GET /v3/settlements/reports?merchantAccount=MA10401 200 (203 ms)", 60},
			{"2026-10-27T01:01:08.368Z WARN  paystream: GET /v3/settlements/reports?merchantAccount=MA10461 429 Too Many Requests x-ratelimit-limit=60 x-ratelimit-window=60s retry-after=300", 12},
			{"2026-10-27T01:01:09.405Z INFO  paystream: rate limited, sleeping 300s before retry (attempt 1/8)", 12},
		}, map[string]string{"throttle_count": "12", "throttle_wait": "300 s", "throttle_waited": "60 min", "throttle_limit": "60",
			"throttler": "paystream (https://api.paystream.io/v3)", "deadline": "60 min"},
			[]string{"ran out of time waiting on a rate limit of paystream", "HTTP 429 Too Many Requests", "about 60 min in all of its 60 min deadline"}},
		{"python requests and tenacity", []tmpl{
			{"2026-03-01 02:10:00,120 WARNING sync.github Retrying in 60.0 seconds as it raised HTTPError: 429 Client Error: Too Many Requests for url: https://api.github.com/repos/acme/shop/issues?page=7", 45},
		}, map[string]string{"throttle_count": "45", "throttle_wait": "60 s", "throttle_waited": "45 min", "throttler": "api.github.com"},
			[]string{"rate limit of api.github.com", "45 calls were refused"}},
		{"AWS SDK JSON, backing off", []tmpl{
			{`{"level":"warn","msg":"ThrottlingException: Rate exceeded, backing off 20s","operation":"PutMetricData"}`, 40},
		}, map[string]string{"throttle_count": "40", "throttle_wait": "20 s", "throttle_waited": "13 min"},
			[]string{"40 calls were refused (ThrottlingException, throttled)"}},
		{"S3 SlowDown, retrying in", []tmpl{
			{"2026-03-01T02:10:00Z ERROR upload part 12 of s3://exports/daily.parquet failed: SlowDown: Please reduce your request rate. status code: 503, retrying in 5s", 90},
		}, map[string]string{"throttle_count": "90", "throttler": "S3"}, []string{"rate limit of S3"}},
		{"a limit's setting is no refusal", []tmpl{
			{"2026-03-01T02:00:00Z INFO client: rate limit set to 100 requests per second, retry after 5s on errors", 1},
			{"2026-03-01T02:00:01Z INFO export: wrote 41873 rows", 1},
		}, nil, nil},
		{"one refusal retried at once", []tmpl{
			{"2026-03-01T02:00:00Z WARN api: POST /v1/batch 429 Too Many Requests", 1},
		}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := LogSet{Source: "recon", Subject: "recon"}
			for _, l := range c.lines {
				set.Templates = append(set.Templates, analysis.LogTemplate{Template: l.line, Example: l.line, Count: l.count})
			}
			f := &Finding{Kind: KindJobFailed, Subject: "recon"}
			f.setFact("job", job.Name)
			f.setFact("reason", "DeadlineExceeded")
			explainDeadlineThrottled(f, []LogSet{set}, []string{"recon", job.Name}, []batchv1.Job{job})
			if c.want == nil {
				if f.fact("throttle_line") != "" {
					t.Fatalf("read as throttled: %v", f.Facts)
				}
				return
			}
			for k, v := range c.want {
				if f.fact(k) != v {
					t.Errorf("%s = %q, want %q", k, f.fact(k), v)
				}
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := describe(h, Scope{Namespace: "finance"})
			for _, s := range c.desc {
				if !strings.Contains(d, s) {
					t.Errorf("description %q lacks %q", d, s)
				}
			}
			f.setFact("line_kind", string(KindThrottling))
			var recs []string
			for _, r := range recommend(h, Scope{Namespace: "finance"}) {
				recs = append(recs, r.Action)
			}
			if all := strings.Join(recs, "\n"); !strings.Contains(all, "rate limit") {
				t.Errorf("recommendations:\n%s", all)
			}
		})
	}
}
