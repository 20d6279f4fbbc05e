package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A rollout aborted on an analysis whose query returned no data: Argo
// Rollouts' plugin output, its AnalysisRun YAML and its RolloutAborted
// event, Flagger's halt and rollback lines. A metric assessed Failed (the
// canary judged and failing) or an erring measurement that says nothing of
// empty data is none.
func TestAnalysisNoData(t *testing.T) {
	abort := `Metric "success-rate" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: reflect: slice index out of range"`
	get := evidence.CommandOutput{Command: "kubectl argo rollouts get rollout basket -n shop", Lines: []string{
		"Name:            basket",
		"Namespace:       shop",
		"Status:          ✖ Degraded",
		"Message:         RolloutAborted: Rollout aborted update to revision 7: " + abort}}
	yaml := evidence.CommandOutput{Command: "kubectl get analysisrun basket-7f9c-7-1 -n shop -o yaml", Lines: []string{
		"  metrics:",
		"  - consecutiveErrorLimit: 4",
		"    name: success-rate",
		"    provider:",
		"      prometheus:",
		"        query: |",
		`          sum(rate(http_requests_total{app="basket",code!~"5.."}[2m])) / sum(rate(http_requests_total{app="basket"}[2m]))`,
		"status:",
		"  message: '" + abort + "'",
		"  metricResults:",
		"  - measurements:",
		`    - finishedAt: "2026-03-02T10:05:00Z"`,
		"      phase: Error",
		"      value: '[]'"}}
	events := evidence.CommandOutput{Command: "kubectl get events -n shop", Lines: []string{
		"32m   Warning   RolloutAborted   rollout/basket   Rollout aborted update to revision 7: " + abort}}
	flagger := evidence.CommandOutput{Command: "kubectl -n flagger-system logs deploy/flagger", Lines: []string{
		`{"level":"info","ts":"2026-03-02T10:05:00.000Z","caller":"controller/events.go:45","msg":"Halt advancement no values found for istio metric request-success-rate probably basket.shop is not receiving traffic: running query failed: no values found","canary":"basket.shop"}`,
		`{"level":"info","ts":"2026-03-02T10:06:00.000Z","caller":"controller/events.go:45","msg":"Rolling back basket.shop failed checks threshold reached 5","canary":"basket.shop"}`}}
	failed := evidence.CommandOutput{Command: "kubectl argo rollouts get rollout basket", Lines: []string{
		"Name:            basket",
		`Message:         RolloutAborted: Rollout aborted update to revision 7: Metric "success-rate" assessed Failed due to failed (3) > failureLimit (2)`}}
	erring := evidence.CommandOutput{Command: "kubectl argo rollouts get rollout basket", Lines: []string{
		"Name:            basket",
		`Message:         RolloutAborted: Rollout aborted update to revision 7: Metric "success-rate" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: Post \"http://prometheus:9090/api/v1/query\": dial tcp 10.0.0.9:9090: connect: connection refused"`}}
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"argo rollouts get", []evidence.CommandOutput{get}, "basket", []string{"Argo Rollouts", "success-rate", "no data", "slice index out of range", "5 measurements erred"}},
		{"analysisrun yaml", []evidence.CommandOutput{yaml}, "basket", []string{"http_requests_total", "no data"}},
		{"event line", []evidence.CommandOutput{events}, "basket", []string{"success-rate", "no data"}},
		{"flagger log", []evidence.CommandOutput{flagger}, "basket", []string{"Flagger", "request-success-rate", "no data"}},
		{"assessed Failed: none", []evidence.CommandOutput{failed}, "", nil},
		{"error not of empty data: none", []evidence.CommandOutput{erring}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win, Scope: Scope{Service: "basket", Namespace: "shop"}}
			f := onlyFinding(t, detectAnalysisNoData(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindAnalysisNoData, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
