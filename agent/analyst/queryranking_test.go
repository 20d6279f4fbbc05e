package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Ranking questions answered from the queries the assistant ran: the
// Prometheus HTTP API's JSON on one line (curl) and pretty-printed (jq),
// promtool's text, a count against a ratio, a question about the share,
// and questions or answers that are not a ranking.
func TestQueryRanking(t *testing.T) {
	end := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-2 * time.Hour), Start: end.Add(-time.Hour), End: end}
	cmd := func(run string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Lines: lines}
	}
	count := cmd(`curl -s 'http://prometheus:9090/api/v1/query' --data-urlencode 'query=sort_desc(sum by (service) (increase(http_requests_total{code=~"5.."}[1h])))'`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"service":"search-api"},"value":[1795600800,"4812.4"]},{"metric":{"service":"frontend"},"value":[1795600800,"2904.1"]},{"metric":{"service":"cart"},"value":[1795600800,"1130"]}]}}`)
	ratio := cmd(`curl -s 'http://prometheus:9090/api/v1/query' --data-urlencode 'query=sum by (service) (rate(http_requests_total{code=~"5.."}[1h])) / sum by (service) (rate(http_requests_total[1h]))'`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"service":"cart"},"value":[1795600800,"0.0902"]},{"metric":{"service":"search-api"},"value":[1795600800,"0.009"]},{"metric":{"service":"frontend"},"value":[1795600800,"0.0024"]}]}}`)
	jq := cmd(`curl -sG http://thanos-query:10902/api/v1/query?query=topk%283%2C%20sum%20by%20%28pod%29%20%28increase%28kube_pod_container_status_restarts_total%5B24h%5D%29%29%29 | jq .`,
		`{`, `  "status": "success",`, `  "data": {`, `    "resultType": "vector",`, `    "result": [`,
		`      { "metric": { "pod": "ledger-7c9f-2xk4p" }, "value": [ 1795600800, "3" ] },`,
		`      { "metric": { "pod": "api-5d8b-9qz7l" }, "value": [ 1795600800, "17" ] },`,
		`      { "metric": { "pod": "worker-6f4c-h2m8n" }, "value": [ 1795600800, "5" ] }`,
		`    ]`, `  }`, `}`)
	promtool := cmd(`promtool query instant http://localhost:9090 'topk(3, sum by (node) (rate(node_network_receive_errs_total[30m])))'`,
		`{node="ip-10-0-3-17"} => 0.41 @[1795600800]`,
		`{node="ip-10-0-1-4"} => 2.73 @[1795600800]`,
		`{node="ip-10-0-2-9"} => 0.02 @[1795600800]`)
	matrix := cmd(`curl -s 'http://prometheus:9090/api/v1/query_range' --data-urlencode 'query=sum by (service) (rate(http_requests_total{code=~"5.."}[5m]))'`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"service":"cart"},"values":[[1795600800,"0.3"]]},{"metric":{"service":"auth"},"values":[[1795600800,"0.1"]]}]}}`)
	for _, tc := range []struct {
		name    string
		msg     string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"count over ratio, one-line JSON", "which service has the most 5xx in the last hour?", []evidence.CommandOutput{ratio, count},
			"search-api", []string{"4812", "frontend (2904)", "cart leads by ratio", "5xx responses over the last 1h"}},
		{"share asked: the ratio query", "which service has the highest 5xx percentage?", []evidence.CommandOutput{count, ratio},
			"cart", []string{"0.0902", "search-api (0.009)"}},
		{"pretty-printed JSON from Thanos, URL-encoded", "what pod restarted the most today?", []evidence.CommandOutput{jq},
			"api-5d8b-9qz7l", []string{"17", "restarts over the last 24h"}},
		{"promtool text", "top nodes by network receive errors?", []evidence.CommandOutput{promtool},
			"ip-10-0-1-4", []string{"2.73", "ip-10-0-3-17 (0.41)"}},
		{"not a ranking question", "why did the HighErrorRate alert fire for cart?", []evidence.CommandOutput{count, ratio}, "", nil},
		{"a range query is no ranking", "which service has the most 5xx?", []evidence.CommandOutput{matrix}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectQueryRanking(&Gathered{Window: w, Commands: tc.cmds, Scope: Scope{Message: tc.msg}}, nil)
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != tc.subject {
				t.Fatalf("findings %+v, want one about %s", fs, tc.subject)
			}
			h := &Hypothesis{Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			text := queryRanking.describe(h, Scope{}) + " " + strings.Join(fs[0].Evidence, " ")
			for _, s := range tc.want {
				if !strings.Contains(text, s) {
					t.Errorf("%q lacks %q", text, s)
				}
			}
		})
	}
}
