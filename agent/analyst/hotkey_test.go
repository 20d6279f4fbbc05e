package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A documentation link inside an error message is not what was called.
func TestDocLinkIsNoCallee(t *testing.T) {
	cases := []struct{ line, want string }{
		{`{"level":50,"err":{"type":"ProvisionedThroughputExceededException","message":"Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"},"msg":"reserveStock failed"}`, ""},
		{`Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later. Learn more: http://aka.ms/cosmosdb-error-429`, ""},
		{`googleapi: Error 429: Quota exceeded, rateLimitExceeded. See https://cloud.google.com/docs/quotas for details`, ""},
		{`POST https://api.partner.example/v2/orders returned 429 Too Many Requests`, "api.partner.example"},
	}
	for _, c := range cases {
		if got := externalHost(c.line); got != c.want {
			t.Errorf("externalHost(%.60q) = %q, want %q", c.line, got, c.want)
		}
		if c.want == "" {
			if got := DependencyTarget(c.line); strings.Contains(got, "docs") || strings.Contains(got, "aka.ms") || strings.Contains(got, "cloud.google.com") {
				t.Errorf("DependencyTarget(%.60q) = %q: a documentation page", c.line, got)
			}
		}
	}
}

func TestDetectHotKey(t *testing.T) {
	pino := `{"level":50,"time":1795284006219,"pid":1,"hostname":"checkout-api-84c6f9d7b5-9wq4x","reqId":"req-9b00c7","orderId":"ord_0179561956","sku":"SKU#FS-2411-AIRFRYER-XL","err":{"type":"ProvisionedThroughputExceededException","message":"Throughput exceeds the current capacity of your table or index. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html","name":"ProvisionedThroughputExceededException"},"msg":"reserveStock failed"}`
	pino2 := strings.Replace(strings.Replace(pino, "req-9b00c7", "req-c96421", 1), "ord_0179561956", "ord_6149722727", 1)
	boto := `2026-11-21 18:04:11,532 ERROR [orders.stock] decrement failed key=SKU#FS-2411 botocore.errorfactory.ProvisionedThroughputExceededException: An error occurred (ProvisionedThroughputExceededException) when calling the UpdateItem operation (reached max retries: 9): The level of configured provisioned throughput for the table was exceeded.`
	boto1 := strings.Replace(boto, "18:04:11,532", "18:09:02,112", 1)
	boto2 := strings.Replace(boto, "18:04:11,532", "18:19:40,004", 1)
	bothKeys := strings.Replace(boto2, "key=SKU#FS-2411", "key=SKU#KT-3321", 1)
	table := evidence.CommandOutput{Command: "aws cloudwatch get-insight-rule-report --rule-name DynamoDBContributorInsights-PKT-stock-counters-1731502210447 --output table", Lines: []string{
		"---------------------------------------------",
		"|           GetInsightRuleReport            |",
		"+------------------------------+------------+",
		"|              Key             |   Total    |",
		"+------------------------------+------------+",
		"|  SKU#FS-2411-AIRFRYER-XL     |  1218430.0 |",
		"|  SKU#BT-1187-KETTLE          |     2211.0 |",
		"|  SKU#EL-7710-HDMI2           |     1904.0 |",
		"+------------------------------+------------+"}}
	jsonReport := evidence.CommandOutput{Command: "aws cloudwatch get-insight-rule-report --rule-name ddb-top-keys --start-time 2026-11-21T18:00:00Z --end-time 2026-11-21T18:20:00Z --period 60", Lines: []string{
		`{`, `    "Contributors": [`, `        {`, `            "Keys": [`, `                "user#42"`, `            ],`, `            "ApproximateAggregateValue": 90211.0,`,
		`        },`, `        {`, `            "Keys": [`, `                "user#7"`, `            ],`, `            "ApproximateAggregateValue": 1022.0,`, `        }`, `    ]`, `}`}}
	spread := evidence.CommandOutput{Command: table.Command, Lines: []string{
		"|  SKU#A  |  1200.0 |", "|  SKU#B  |  1100.0 |", "|  SKU#C  |  1000.0 |"}}
	onDemand := evidence.CommandOutput{Command: "aws dynamodb describe-table --table-name stock-counters", Lines: []string{`    "Billing": "PAY_PER_REQUEST",`}}
	metric := cwSeries("AWS/DynamoDB/ThrottledRequests", map[string]string{"TableName": "stock-counters", "Operation": "UpdateItem"}, 0, 0, 4000, 6100)
	kinesis := `2026-11-21T18:04:11.532Z ERROR producer: PutRecords failed: ProvisionedThroughputExceededException: Rate exceeded for shard shardId-000000000007 in stream clickstream under account 111122223333.`
	kinesis1 := strings.Replace(kinesis, "18:04:11", "18:09:40", 1)
	kinesis2 := strings.Replace(kinesis, "18:04:11", "18:19:02", 1)
	cases := []struct {
		name     string
		lines    []string
		cmds     []evidence.CommandOutput
		key      string // "" for no finding
		table    string
		weight   float64
		onDemand bool
	}{
		{"pino lines, Contributor Insights table, on-demand table", []string{pino, pino2, pino2}, []evidence.CommandOutput{table, onDemand}, "SKU#FS-2411-AIRFRYER-XL", "stock-counters", 0.95, true},
		{"boto3 lines and a JSON Contributor Insights report", []string{boto, boto1, boto2}, []evidence.CommandOutput{jsonReport}, "user#42", "stock-counters", 0.95, false},
		{"the throttled lines name one key, no report", []string{boto, boto1, boto2}, nil, "SKU#FS-2411", "stock-counters", 0.85, false},
		{"Kinesis: one shard throttled", []string{kinesis, kinesis1, kinesis2}, nil, "shardId-000000000007", "clickstream", 0.85, false},
		{"throttled on many keys: no hot key", []string{boto, boto1, bothKeys}, []evidence.CommandOutput{spread}, "", "", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := minedSet("checkout-api", false, 0, c.lines...)
			ev := &Gathered{Logs: []LogSet{set}, Metrics: []MetricSet{metric}, Commands: c.cmds, Window: win}
			found := DetectLogs(ev.Logs, win)
			var throttled bool
			for _, f := range found {
				if f.Kind == KindThrottling && (f.fact("cloud") == "DynamoDB" || f.fact("cloud") == "Kinesis") {
					throttled = true
					if strings.Contains(f.Subject, "docs.aws") {
						t.Errorf("the throttle is read as a call to the documentation: %s", f.Subject)
					}
				}
			}
			if !throttled {
				t.Fatalf("no DynamoDB or Kinesis throttle read from %v", found)
			}
			fs := detectHotKeys(ev, found)
			if c.key == "" {
				if len(fs) != 0 {
					t.Fatalf("want no hot key, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one hot key, got %+v", fs)
			}
			f := fs[0]
			if f.fact("key") != c.key || f.Subject != c.table || f.Weight < c.weight || (f.fact("on_demand") != "") != c.onDemand || f.fact("callers") != "checkout-api" {
				t.Errorf("key %q table %q weight %.2f on-demand %q callers %q; want %q %q %.2f %v", f.fact("key"), f.Subject, f.Weight, f.fact("on_demand"), f.fact("callers"), c.key, c.table, c.weight, c.onDemand)
			}
			h := &Hypothesis{Kind: KindHotKey, Subject: f.Subject, Primary: []*Finding{&f}}
			d := hotKey.describe(h, Scope{})
			for _, want := range []string{"hot key", "partition", c.key, "throttled"} {
				if !strings.Contains(d, want) {
					t.Errorf("description lacks %q: %s", want, d)
				}
			}
		})
	}
}
