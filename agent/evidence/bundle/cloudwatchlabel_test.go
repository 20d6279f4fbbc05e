package bundle

import (
	"context"
	"maps"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A GetMetricData answer as the aws CLI prints it (Id, Label, Timestamps,
// Values) is listed and answered as the metric its label names, in the
// namespace its name or its resource's other metrics say, under the
// dimension that names such a resource.
func TestCloudWatchMetricFromLabel(t *testing.T) {
	res := func(id, label string) string {
		return `{"Id": "` + id + `", "Label": "` + label + `", "Timestamps": ["2026-11-20T09:00:00Z", "2026-11-20T09:05:00Z"], "Values": [100, 0], "StatusCode": "Complete"}`
	}
	for _, tc := range []struct {
		name    string
		results []string
		want    []evidence.MetricID
	}{
		{"DynamoDB table and its global secondary index, a statistic appended",
			[]string{res("t", "orders WriteThrottleEvents"), res("g", "orders orders-by-status-index ConsumedWriteCapacityUnits (Sum/60)")},
			[]evidence.MetricID{{Namespace: "AWS/DynamoDB", Name: "ConsumedWriteCapacityUnits", Dimensions: map[string]string{"TableName": "orders", "GlobalSecondaryIndexName": "orders-by-status-index"}},
				{Namespace: "AWS/DynamoDB", Name: "WriteThrottleEvents", Dimensions: map[string]string{"TableName": "orders"}}}},
		{"RDS instance: BurstBalance takes the namespace of its ReadIOPS",
			[]string{res("bb", "orders-pg-prod BurstBalance"), res("riops", "orders-pg-prod ReadIOPS")},
			[]evidence.MetricID{
				{Namespace: "AWS/RDS", Name: "BurstBalance", Dimensions: map[string]string{"DBInstanceIdentifier": "orders-pg-prod"}},
				{Namespace: "AWS/RDS", Name: "ReadIOPS", Dimensions: map[string]string{"DBInstanceIdentifier": "orders-pg-prod"}},
			}},
		{"EBS volume by its id",
			[]string{res("burst", "vol-0a7e3c9f12d4b5e68 BurstBalance")},
			[]evidence.MetricID{{Namespace: "AWS/EBS", Name: "BurstBalance", Dimensions: map[string]string{"VolumeId": "vol-0a7e3c9f12d4b5e68"}}}},
		{"ElastiCache node, metric first",
			[]string{res("cpu", "EngineCPUUtilization cart-sessions-0001-001"), res("cpu2", "CPUUtilization cart-sessions-0001-001")},
			[]evidence.MetricID{
				{Namespace: "AWS/ElastiCache", Name: "CPUUtilization", Dimensions: map[string]string{"CacheClusterId": "cart-sessions-0001-001"}},
				{Namespace: "AWS/ElastiCache", Name: "EngineCPUUtilization", Dimensions: map[string]string{"CacheClusterId": "cart-sessions-0001-001"}},
			}},
		{"NAT gateway by its id, and by the namespace of its port allocation errors",
			[]string{res("epa", "nat-0f3a9c2e7b1d45a86 ErrorPortAllocation"), res("act", "nat-0f3a9c2e7b1d45a86 ActiveConnectionCount")},
			[]evidence.MetricID{
				{Namespace: "AWS/NATGateway", Name: "ActiveConnectionCount", Dimensions: map[string]string{"NatGatewayId": "nat-0f3a9c2e7b1d45a86"}},
				{Namespace: "AWS/NATGateway", Name: "ErrorPortAllocation", Dimensions: map[string]string{"NatGatewayId": "nat-0f3a9c2e7b1d45a86"}},
			}},
		{"default label: the metric's name alone",
			[]string{res("m1", "ConcurrentExecutions")},
			[]evidence.MetricID{{Namespace: "AWS/Lambda", Name: "ConcurrentExecutions"}}},
		{"default label of a metric several namespaces have stays unlisted",
			[]string{res("cpu", "CPUUtilization")},
			nil},
		{"a label that names no metric stays unlisted",
			[]string{res("m1", "p99 of checkout"), res("m2", "errors")},
			[]evidence.MetricID{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"MetricDataResults": [`
			for i, r := range tc.results {
				if i > 0 {
					body += ","
				}
				body += r
			}
			body += `], "Messages": []}`
			b, err := Open(fstest.MapFS{"cloudwatch/metrics.json": {Data: []byte(body)}}, "mem")
			if err != nil {
				t.Fatal(err)
			}
			cw := b.Sources(time.Time{}).CloudWatch
			ids, err := cw.ListMetrics(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != len(tc.want) {
				t.Fatalf("listed %+v, want %+v", ids, tc.want)
			}
			for i, id := range ids {
				w := tc.want[i]
				if id.Namespace != w.Namespace || id.Name != w.Name || !maps.Equal(id.Dimensions, w.Dimensions) {
					t.Errorf("listed %+v, want %+v", id, w)
				}
			}
			if len(ids) == 0 {
				return
			}
			series, err := cw.GetMetricData(context.Background(), []evidence.MetricDataQuery{{ID: "q", Metric: ids[0], Stat: "Average"}}, time.Time{}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if len(series) != 1 || len(series[0].Points) != 2 || series[0].Points[1].V != 0 {
				t.Errorf("answer to %+v: %+v", ids[0], series)
			}
		})
	}
}
