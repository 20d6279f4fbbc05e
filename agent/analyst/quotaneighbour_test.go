package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A workload refused by a provider's shared quota while another workload,
// started or changed shortly before, is seen at the same limit, in the
// forms providers answer (SendGrid's credits, Google's RESOURCE_EXHAUSTED,
// AWS's ThrottlingException, OpenAI's insufficient_quota), with the other
// workload's log read as mined lines or as a Job's log kept as text; no
// other workload at the limit, or only the victim's own change, is not
// it.
func TestDetectQuotaNeighbour(t *testing.T) {
	start := evidence.Change{Timestamp: win.Start.Add(-30 * time.Minute), Service: "batch", Kind: "deploy", Description: "one-off campaign Job"}
	own := evidence.Change{Timestamp: win.Start.Add(-10 * time.Minute), Service: "victim", Kind: "deploy", Description: "victim 3.1.0"}
	jobLog := evidence.CommandOutput{Command: "kubectl -n growth logs job/batch-nov", Target: "job/batch-nov", Lines: []string{
		"2026-11-25T13:36:12.250Z [batch] progress sent=70012 failed=1144",
		`2026-11-25T13:37:51.543Z [batch] sendgrid 401 {"errors":[{"field":null,"message":"Maximum credits exceeded"}]} retrying in 60s`}}
	cases := []struct {
		name, victim, batch string
		cmds                []evidence.CommandOutput
		changes             []evidence.Change
		provider            string
		want                bool
	}{
		{"SendGrid credits, the Job's log kept as text",
			`{"level":50,"msg":"sendgrid send failed","err":{"code":401,"response":{"body":{"errors":[{"message":"Maximum credits exceeded"}]}}}}`,
			"", []evidence.CommandOutput{jobLog}, []evidence.Change{start, own}, "", true},
		{"Google quota per project",
			`ERROR translate failed: google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric 'Number of characters' and limit 'Number of characters per minute per project' of service 'translate.googleapis.com' for consumer 'project_number:1'. [reason: "RATE_LIMIT_EXCEEDED"`,
			"INFO backfill: progress skus=18379/188214 chars_last_min=5960252 quota_retries_last_min=523", nil, []evidence.Change{start}, "translate.googleapis.com", true},
		{"AWS account API rate",
			`{"level":"ERROR","msg":"config load failed","error":"operation error SSM: GetParametersByPath, exceeded maximum number of attempts, 3, https response error StatusCode: 400, api error ThrottlingException: Rate exceeded"}`,
			`{"level":"error","msg":"settings read failed","err":{"name":"ThrottlingException","message":"Rate exceeded"}}`, nil, []evidence.Change{start, own}, "SSM", true},
		{"OpenAI quota",
			`openai.RateLimitError: Error code: 429 - {'error': {'message': 'You exceeded your current quota, please check your plan and billing details.', 'type': 'insufficient_quota', 'code': 'insufficient_quota'}}`,
			`WARN embeddings batch retrying after 429 rate limit`, nil, []evidence.Change{start}, "", true},
		{"no other workload at the limit",
			`ERROR translate failed: google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric 'x' of service 'translate.googleapis.com'`,
			"INFO batch: progress items=100", nil, []evidence.Change{start}, "", false},
		{"only the victim's own change",
			`ERROR ThrottlingException: Rate exceeded`, "", nil, []evidence.Change{own}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := []LogSet{minedSet("victim", false, 0, c.victim, c.victim)}
			if c.batch != "" {
				logs = append(logs, minedSet("batch", false, 0, c.batch))
			}
			w := win
			if len(c.cmds) > 0 {
				w = Window{BaselineStart: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC), Start: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)}
			}
			ev := &Gathered{Logs: logs, Commands: c.cmds, Changes: c.changes, Window: w}
			want := ""
			if c.want {
				want = "victim"
			}
			f := onlyFinding(t, detectQuotaNeighbour(ev, nil), want)
			if f == nil {
				return
			}
			if f.fact("consumer") != "batch" || f.fact("provider") != c.provider {
				t.Errorf("consumer %q provider %q", f.fact("consumer"), f.fact("provider"))
			}
			h := &Hypothesis{Kind: KindQuotaNeighbour, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "batch uses up the quota", "victim", "one-off campaign Job")
		})
	}
}
