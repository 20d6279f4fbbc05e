package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestFunctionScaleOut names a function whose concurrent executions rose
// by about as many as a database's connections while its clients are
// refused for lack of slots (CloudWatch's ConcurrentExecutions and
// DatabaseConnections; the CloudWatch exporter's and postgres_exporter's
// names), with its event source mapping printed without a maximum
// concurrency and the change that replaced it. A function that rose while
// the database's connections did not, or no refusal, is not this.
func TestFunctionScaleOut(t *testing.T) {
	w := testWindow()
	series := func(name string, labels evidence.Labels, before, after float64) MetricSet {
		s := evidence.Series{Labels: labels}
		for i := range 24 {
			at := w.BaselineStart.Add(time.Duration(i) * 5 * time.Minute)
			v := before
			if !at.Before(w.Start.Add(10 * time.Minute)) {
				v = after
			}
			s.Points = append(s.Points, evidence.Point{T: at, V: v})
		}
		return MetricSet{Name: name, Series: []evidence.Series{s}}
	}
	cwFn := series("AWS/Lambda/ConcurrentExecutions", evidence.Labels{"FunctionName": "feed-import"}, 0, 380)
	cwDB := series("AWS/RDS/DatabaseConnections", evidence.Labels{"DBInstanceIdentifier": "orders-prod"}, 110, 400)
	yaceFn := series("aws_lambda_concurrent_executions_maximum", evidence.Labels{"__name__": "aws_lambda_concurrent_executions_maximum", "dimension_FunctionName": "feed-import"}, 2, 240)
	pgDB := series("pg_stat_database_numbackends", evidence.Labels{"__name__": "pg_stat_database_numbackends", "datname": "orders"}, 60, 300)
	flatDB := series("AWS/RDS/DatabaseConnections", evidence.Labels{"DBInstanceIdentifier": "orders-prod"}, 390, 400)
	refused := []Finding{{Kind: KindDatabase, Subject: "orders-api", Time: w.Start.Add(12 * time.Minute), Summary: "orders-api logs database errors",
		Facts: map[string]string{"line": `level=ERROR msg="request failed" err="FATAL: remaining connection slots are reserved for non-replication superuser connections (SQLSTATE 53300)"`}}}
	mapping := evidence.CommandOutput{Run: "aws lambda list-event-source-mappings --function-name feed-import", Lines: []string{
		`{`, `    "EventSourceMappings": [`, `        {`, `            "UUID": "3f9a1c2e-7b8d-4e6f-9a0b-1c2d3e4f5a6b",`, `            "BatchSize": 10,`,
		`            "EventSourceArn": "arn:aws:sqs:eu-central-1:123456789012:feed-import-queue",`, `            "FunctionArn": "arn:aws:lambda:eu-central-1:123456789012:function:feed-import",`,
		`            "LastModified": "2026-04-30T15:22:41.118000+00:00",`, `            "State": "Enabled",`, `            "ScalingConfig": {}`, `        }`, `    ]`, `}`}}
	replaced := evidence.Change{Timestamp: time.Date(2026, 4, 30, 15, 21, 9, 0, time.UTC), Service: "feed-import", Kind: "infra", Description: "terraform: module lambda-sqs 3.4.2 -> 4.0.0 (event source mapping replaced)"}
	for _, c := range []struct {
		name    string
		metrics []MetricSet
		found   []Finding
		cmds    []evidence.CommandOutput
		says    []string
	}{
		{"cloudwatch, the mapping and its change", []MetricSet{cwFn, cwDB}, refused, []evidence.CommandOutput{mapping},
			[]string{"the serverless function feed-import scaled out from 0 to 380 concurrent executions", "connections rose from 110 to 400", "refused: orders-api",
				`its event source mapping has no maximum concurrency ("ScalingConfig": {})`, "by the infra change of feed-import"}},
		{"exporters", []MetricSet{yaceFn, pgDB}, refused, nil,
			[]string{"feed-import scaled out from 2 to 240 concurrent executions", "connections rose from 60 to 300"}},
		{"database connections flat", []MetricSet{cwFn, flatDB}, refused, nil, nil},
		{"no refusal", []MetricSet{cwFn, cwDB}, nil, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := detectFunctionScaleOut(&Gathered{Metrics: c.metrics, Commands: c.cmds, Earlier: []evidence.Change{replaced}, Window: w}, c.found)
			wantWritten(t, KindFunctionScaleOut, fs, c.says)
		})
	}
}
