package bundle

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A metric recorded with one statistic answers a query for another (the
// bundle cannot re-aggregate), labelled with the statistic recorded; a
// metric recorded with the statistic asked for is that one.
func TestGetMetricDataOtherStat(t *testing.T) {
	b, err := Open(fstest.MapFS{"cloudwatch/metrics.json": {Data: []byte(`{"MetricDataResults": [
 {"Id": "acct", "Label": "ConcurrentExecutions", "Namespace": "AWS/Lambda", "MetricName": "ConcurrentExecutions", "Dimensions": [], "Stat": "Maximum",
  "Timestamps": ["2026-11-20T09:00:00Z", "2026-11-20T09:05:00Z"], "Values": [43, 1000]},
 {"Id": "age_max", "Label": "ApproximateAgeOfOldestMessage", "Namespace": "AWS/SQS", "MetricName": "ApproximateAgeOfOldestMessage", "Dimensions": [{"Name": "QueueName", "Value": "q"}], "Stat": "Maximum",
  "Timestamps": ["2026-11-20T09:00:00Z"], "Values": [900]},
 {"Id": "age_avg", "Label": "ApproximateAgeOfOldestMessage", "Namespace": "AWS/SQS", "MetricName": "ApproximateAgeOfOldestMessage", "Dimensions": [{"Name": "QueueName", "Value": "q"}], "Stat": "Average",
  "Timestamps": ["2026-11-20T09:00:00Z"], "Values": [300]}
]}`)}}, "mem")
	if err != nil {
		t.Fatal(err)
	}
	cw := b.Sources(time.Time{}).CloudWatch
	series, err := cw.GetMetricData(context.Background(), []evidence.MetricDataQuery{
		{ID: "a", Metric: evidence.MetricID{Namespace: "AWS/Lambda", Name: "ConcurrentExecutions", Dimensions: map[string]string{}}, Stat: "Average"},
		{ID: "b", Metric: evidence.MetricID{Namespace: "AWS/SQS", Name: "ApproximateAgeOfOldestMessage", Dimensions: map[string]string{"QueueName": "q"}}, Stat: "Average"},
		{ID: "c", Metric: evidence.MetricID{Namespace: "AWS/SQS", Name: "ApproximateAgeOfOldestMessage", Dimensions: map[string]string{"QueueName": "other"}}, Stat: "Average"},
	}, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 {
		t.Fatalf("series %+v, want the two recorded metrics", series)
	}
	if a := series[0]; len(a.Points) != 2 || a.Points[1].V != 1000 || a.Labels["stat"] != "Maximum" {
		t.Errorf("other statistic: %+v", a)
	}
	if b := series[1]; len(b.Points) != 1 || b.Points[0].V != 300 || b.Labels["stat"] != "Average" {
		t.Errorf("the statistic asked for: %+v", b)
	}
}
