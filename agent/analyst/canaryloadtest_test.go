package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A canary analysis failed by its own load test: Flagger's JSON log
// (halts and the rollback) with its loadtester's JSON log carrying hey's
// summary on one line; kubectl describe canary's events with hey's report
// printed on a terminal (one status code a line); a vegeta attack with
// vegeta's report and the canary's own log shedding the tool's requests.
// The load test answered with 500s (the release is broken), no halt or
// rollback read, and a load test aimed at another service are none.
func TestCanaryLoadTest(t *testing.T) {
	flaggerLog := evidence.CommandOutput{Command: "kubectl logs deploy/flagger -n flagger-system", Lines: []string{
		`{"level":"info","ts":"2026-03-14T10:01:42.015Z","caller":"controller/events.go:45","msg":"Halt fx-api.rates advancement success rate 64.10% < 99%","canary":"fx-api.rates"}`,
		`{"level":"info","ts":"2026-03-14T10:06:42.207Z","caller":"controller/events.go:45","msg":"Rolling back fx-api.rates failed checks threshold reached 5","canary":"fx-api.rates"}`,
	}}
	loadtesterLog := func(codes string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl logs deploy/flagger-loadtester -n test", Lines: []string{
			`{"level":"info","ts":"2026-03-14T10:01:40.101Z","caller":"loadtester/task_runner.go:45","msg":"command starting hey -z 1m -q 20 -c 40 http://fx-api-canary.rates:8080/v1/rates","canary":"fx-api.rates"}`,
			`{"level":"info","ts":"2026-03-14T10:02:40.554Z","caller":"loadtester/task_runner.go:63","msg":"command finished hey -z 1m -q 20 -c 40 http://fx-api-canary.rates:8080/v1/rates","canary":"fx-api.rates","output":"Summary: Total: 60.01 secs, Requests/sec: 790.2. Status code distribution: ` + codes + `"}`,
		}}
	}
	describeEvents := evidence.CommandOutput{Command: "kubectl describe canary fx-api -n rates", Lines: []string{
		"Events:",
		"  Type     Reason  Age   From     Message",
		"  Warning  Synced  12m   flagger  Halt fx-api.rates advancement success rate 58.20% < 99%",
		"  Warning  Synced  8m    flagger  Rolling back fx-api.rates failed checks threshold reached 5",
	}}
	heyTerminal := evidence.CommandOutput{Command: "kubectl exec -n test deploy/flagger-loadtester -- hey -z 30s -q 20 -c 40 http://fx-api-canary.rates:8080/v1/rates", Lines: []string{
		"Summary:", "  Total:\t30.0123 secs", "  Requests/sec:\t801.4", "",
		"Status code distribution:", "  [200]\t9710 responses", "  [503]\t14332 responses", "",
		"Error distribution:",
	}}
	vegeta := evidence.CommandOutput{Command: "kubectl logs deploy/flagger-loadtester -n test", Lines: []string{
		`command starting echo "GET http://fx-api-canary.rates:8080/v1/rates" | vegeta attack -rate=900 -duration=1m | vegeta report`,
		"Requests      [total, rate, throughput]  54000, 900.02, 310.77",
		"Status Codes  [code:count]               200:18650  429:35350",
	}}
	canaryLog := LogSet{Source: "fx-api-6c9d8b7f5-k2x4p", Subject: "fx-api", Lines: []evidence.LogLine{
		{Text: `{"time":"2026-03-14T10:01:41.101Z","level":"WARN","msg":"rate limited","status":429,"user_agent":"Go-http-client/1.1 vegeta/12.11.1"}`},
	}}
	cases := []struct {
		name     string
		commands []evidence.CommandOutput
		logs     []LogSet
		subject  string
		want     []string
	}{
		{"flagger and loadtester JSON logs", []evidence.CommandOutput{flaggerLog, loadtesterLog("[200] 15210 responses [503] 32190 responses")}, nil, "fx-api",
			[]string{"fails on its own load test", "hey -z 1m -q 20 -c 40", "800 requests/s asked", "32190 of 47400 answered 503/429", "64.10% < 99%"}},
		{"describe canary events, hey on a terminal", []evidence.CommandOutput{describeEvents, heyTerminal}, nil, "fx-api",
			[]string{"14332 of 24042 answered 503/429", "58.20% < 99%"}},
		{"vegeta report and the canary shedding its requests", []evidence.CommandOutput{flaggerLog, vegeta}, []LogSet{canaryLog}, "fx-api",
			[]string{"vegeta attack -rate=900", "900 requests/s asked", "35350 of 54000", "vegeta/12.11.1"}},
		{"the load test got 500s: the release's", []evidence.CommandOutput{flaggerLog, loadtesterLog("[200] 15210 responses [500] 32190 responses")}, nil, "", nil},
		{"no halt nor rollback read", []evidence.CommandOutput{loadtesterLog("[200] 15210 responses [503] 32190 responses")}, nil, "", nil},
		{"a load test of another service", []evidence.CommandOutput{flaggerLog, {Command: "kubectl logs deploy/flagger-loadtester -n test", Lines: []string{
			`{"msg":"command finished hey -z 1m -q 20 -c 40 http://ledger-canary.books:8080/v1","output":"Status code distribution: [200] 100 responses [503] 900 responses"}`}}}, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := onlyFinding(t, detectCanaryLoadTest(&Gathered{Commands: c.commands, Logs: c.logs, Window: win}), c.subject)
			if f == nil {
				return
			}
			wantDescribed(t, &Hypothesis{Kind: KindCanaryLoadTest, Subject: f.Subject, Primary: []*Finding{f}}, Scope{}, c.want...)
		})
	}
}
