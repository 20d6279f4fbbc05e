package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestIndexThrottled: a table's writes throttled by one of its global
// secondary indexes, read from CloudWatch's per-index series (and the same
// through yet-another-cloudwatch-exporter's dimension_ labels), with the
// index's capacity from its consumed and provisioned units or from an aws
// dynamodb describe-table output (full or a --query projection), the
// callers whose writes are throttled, and the writer: a change near the
// onset naming the index's keys, or a log of another workload writing to
// the table. Throttles of the table alone, an index throttled as much in
// the baseline, and a change that names nothing of the index are not it.
func TestIndexThrottled(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(10 * time.Minute)
	step := stepAt(on)
	cw := func(metric, stat, index string) evidence.Labels {
		l := evidence.Labels{"__name__": metric, "metric_name": metric, "namespace": "AWS/DynamoDB", "stat": stat, "TableName": "carts"}
		if index != "" {
			l["GlobalSecondaryIndexName"] = index
		}
		return l
	}
	set := func(name string, ss ...evidence.Series) MetricSet {
		return MetricSet{Name: name, Class: MetricErrors, Origin: SrcCloudWatch, Series: ss}
	}
	throttles := set("AWS/DynamoDB/WriteThrottleEvents", wseries(w, cw("WriteThrottleEvents", "Sum", "by-state"), step(0, 900)))
	// 30 s points: a Sum of 30*95 units is 95 units a second.
	consumed := set("AWS/DynamoDB/ConsumedWriteCapacityUnits", wseries(w, cw("ConsumedWriteCapacityUnits", "Sum", "by-state"), step(30*20, 30*99)))
	// A query's metric math divided the sum by its period: units a second.
	perSecondLabels := cw("ConsumedWriteCapacityUnits", "Sum", "by-state")
	perSecondLabels["label"] = "carts by-state ConsumedWriteCapacityUnits (Sum/60)"
	perSecond := set("AWS/DynamoDB/ConsumedWriteCapacityUnits", wseries(w, perSecondLabels, step(20, 99)))
	// A change to the table itself is the trigger, not a writer.
	tableChange := evidence.Change{Timestamp: on.Add(-1 * time.Minute), Service: "carts", Kind: "infra", Description: "terraform apply: aws_dynamodb_table.carts add global_secondary_index by-state"}
	provisioned := set("AWS/DynamoDB/ProvisionedWriteCapacityUnits", wseries(w, cw("ProvisionedWriteCapacityUnits", "Average", "by-state"), step(100, 100)))
	yace := MetricSet{Name: "aws_dynamodb_write_throttle_events_sum", Class: MetricErrors, Origin: SrcMetrics, Series: []evidence.Series{
		wseries(w, evidence.Labels{"__name__": "aws_dynamodb_write_throttle_events_sum", "dimension_TableName": "carts", "dimension_GlobalSecondaryIndexName": "by-state"}, step(0, 300))}}
	tableOnly := set("AWS/DynamoDB/WriteThrottleEvents", wseries(w, cw("WriteThrottleEvents", "Sum", ""), step(0, 900)))
	always := set("AWS/DynamoDB/WriteThrottleEvents", wseries(w, cw("WriteThrottleEvents", "Sum", "by-state"), step(900, 900)))

	full := evidence.CommandOutput{Command: "aws dynamodb describe-table --table-name carts", Lines: strings.Split(`{
    "Table": {
        "TableName": "carts",
        "ProvisionedThroughput": {"ReadCapacityUnits": 500, "WriteCapacityUnits": 800},
        "GlobalSecondaryIndexes": [
            {"IndexName": "by-state", "KeySchema": [{"AttributeName": "state", "KeyType": "HASH"}, {"AttributeName": "updated_at", "KeyType": "RANGE"}],
             "ProvisionedThroughput": {"ReadCapacityUnits": 50, "WriteCapacityUnits": 100}},
            {"IndexName": "by-user", "KeySchema": [{"AttributeName": "user_id", "KeyType": "HASH"}],
             "ProvisionedThroughput": {"ReadCapacityUnits": 50, "WriteCapacityUnits": 400}}
        ]
    }
}`, "\n")}
	projection := evidence.CommandOutput{Command: "aws dynamodb describe-table --table-name carts --query 'Table.{Base:ProvisionedThroughput.WriteCapacityUnits,GSI:GlobalSecondaryIndexes[].{Name:IndexName,WCU:ProvisionedThroughput.WriteCapacityUnits,Keys:KeySchema[].AttributeName}}'",
		Lines: strings.Split(`{"Base": 800, "GSI": [{"Name": "by-state", "WCU": 100, "Keys": ["state", "updated_at"]}, {"Name": "by-user", "WCU": 400, "Keys": ["user_id"]}]}`, "\n")}

	caller := Finding{Kind: KindThrottling, Subject: "cart-api", Facts: map[string]string{"caller": "cart-api", "cloud": "DynamoDB",
		"line": `level=warn msg="put retry" table=carts err="ProvisionedThroughputExceededException: The level of configured provisioned throughput for one or more global secondary indexes of the table was exceeded."`}}
	migration := evidence.Change{Timestamp: on.Add(-3 * time.Minute), Service: "cart-state-migrator", Kind: "deploy", Description: "migrator: recompute state and updated_at for archived carts"}
	unrelated := evidence.Change{Timestamp: on.Add(-2 * time.Minute), Service: "cart-api", Kind: "config", Description: "cart-api: log level debug"}
	writerLog := LogSet{Source: "cart-reindex-7f9c2", Subject: "cart-reindex", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		tmpl(`2026-05-01T11:20:00Z INFO reindex batch table=carts updated=5000 rate=96/s`, 40, on, w.End)}}

	cases := []struct {
		name           string
		metrics        []MetricSet
		cmds           []evidence.CommandOutput
		changes        []evidence.Change
		logs           []LogSet
		want           bool
		capacity, keys string
		writer         string
		why            bool
	}{
		{"cloudwatch per index, consumed at provisioned, a migration naming its keys", []MetricSet{throttles, consumed, provisioned}, nil, []evidence.Change{unrelated, migration}, nil,
			true, "99 of its 100 provisioned write units a second consumed", "", "cart-state-migrator", true},
		{"exporter labels, describe-table in full", []MetricSet{yace}, []evidence.CommandOutput{full}, []evidence.Change{migration}, nil,
			true, "100 write units provisioned", "state,updated_at", "cart-state-migrator", false},
		{"a describe-table projection and a writer's log", []MetricSet{throttles}, []evidence.CommandOutput{projection}, []evidence.Change{unrelated}, []LogSet{writerLog},
			true, "100 write units provisioned", "state,updated_at", "cart-reindex", false},
		{"a per-second label, the table's own change", []MetricSet{throttles, perSecond, provisioned}, nil, []evidence.Change{tableChange}, nil,
			true, "99 of its 100 provisioned write units a second consumed", "", "", true},
		{"the table's own throttles", []MetricSet{tableOnly}, nil, nil, nil, false, "", "", "", false},
		{"throttled as much before", []MetricSet{always}, nil, nil, nil, false, "", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: c.metrics, Commands: c.cmds, Changes: c.changes, Logs: c.logs, Window: w}
			f, ok := oneFinding(t, detectIndexThrottled(ev, []Finding{caller}), c.want)
			if !ok {
				return
			}
			if f.Kind != KindIndexThrottled || f.Subject != "carts" || f.fact("index") != "by-state" || f.fact("capacity") != c.capacity || f.fact("keys") != c.keys {
				t.Fatalf("%s on %s index %q capacity %q keys %q", f.Kind, f.Subject, f.fact("index"), f.fact("capacity"), f.fact("keys"))
			}
			if f.fact("writer") != c.writer || (f.fact("why") != "") != c.why || f.fact("callers") != "cart-api" {
				t.Errorf("writer %q why %q callers %q", f.fact("writer"), f.fact("why"), f.fact("callers"))
			}
			h := &Hypothesis{Kind: KindIndexThrottled, Subject: f.Subject, Primary: []*Finding{&f}}
			if !indexThrottled.related(h, &caller) {
				t.Errorf("the caller's throttled writes are not related")
			}
			for _, ch := range c.changes {
				cf := Finding{Kind: KindDeploy, Subject: ch.Service, Summary: ch.Description, Facts: map[string]string{"description": ch.Description}}
				if fits := indexThrottled.fitsChange(h, &cf); fits != (ch.Service == c.writer || ch.Service == "carts") {
					t.Errorf("change of %s fits %v", ch.Service, fits)
				}
			}
			wantDescribed(t, h, Scope{}, "global secondary index by-state", "cart-api", c.writer)
		})
	}
}

// TestThrottledFromStart reads the throttles of an index created within
// the window (its series begins after the baseline's start, throttled
// from its first points), and not those of a series that throttled from
// the baseline's start on.
func TestThrottledFromStart(t *testing.T) {
	mk := func(from time.Time, vs ...float64) evidence.Series {
		var s evidence.Series
		for i, v := range vs {
			s.Points = append(s.Points, evidence.Point{T: from.Add(time.Duration(i) * time.Minute), V: v})
		}
		return s
	}
	if sh, ok := throttledFromStart(mk(win.Start.Add(2*time.Minute), 0, 900, 1100, 1000), win); !ok || sh.peak != 1100 || !sh.start.Equal(win.Start.Add(3*time.Minute)) {
		t.Errorf("new index: %+v %v", sh, ok)
	}
	if _, ok := throttledFromStart(mk(win.BaselineStart, 900, 900, 900, 900), win); ok {
		t.Error("a series throttled since the baseline's start read as a new index")
	}
	if _, ok := throttledFromStart(mk(win.Start, 0, 0, 0), win); ok {
		t.Error("a new index without throttles read as throttled")
	}
}
