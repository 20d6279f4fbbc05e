package bundle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// FuzzCloudWatchLabels feeds hostile labels, one a line, to the reading of
// a GetMetricData answer's labels as the metrics they name: it must
// return, list a metric only by a word of a label, and name its resource
// only by what a label says.
func FuzzCloudWatchLabels(f *testing.F) {
	for _, s := range []string{
		"orders WriteThrottleEvents\norders orders-by-status-index ConsumedWriteCapacityUnits (Sum/60)",
		"orders-pg-prod BurstBalance\norders-pg-prod ReadIOPS",
		"vol-0a7e3c9f12d4b5e68 BurstBalance",
		"EngineCPUUtilization cart-sessions-0001-001\nCPUUtilization cart-sessions-0001-001",
		"nat-0f3a9c2e7b1d45a86 ErrorPortAllocation\nnat-0f3a9c2e7b1d45a86 ActiveConnectionCount",
		"ConcurrentExecutions",
		"CPUUtilization",
		"p99 of checkout\nerrors",
		"i-0abc EBSIOBalance%\n(Average) CPUCreditBalance i-0abc\nQueue (Sum/60) ApproximateAgeOfOldestMessage",
		"a b c WriteThrottleEvents\n WriteThrottleEvents \n%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, labels string) {
		// JSON carries text: invalid bytes arrive as U+FFFD.
		labels = strings.ToValidUTF8(labels, "\uFFFD")
		type result struct {
			ID         string    `json:"Id"`
			Label      string    `json:"Label"`
			Timestamps []string  `json:"Timestamps"`
			Values     []float64 `json:"Values"`
			StatusCode string    `json:"StatusCode"`
		}
		var rs []result
		var words []string
		for i, l := range strings.Split(labels, "\n") {
			rs = append(rs, result{ID: "m" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Label: l,
				Timestamps: []string{"2026-11-20T09:00:00Z"}, Values: []float64{1}, StatusCode: "Complete"})
			words = append(words, strings.Fields(l)...)
		}
		body, err := json.Marshal(map[string]any{"MetricDataResults": rs, "Messages": []any{}})
		if err != nil {
			t.Skip()
		}
		b, err := Open(fstest.MapFS{"cloudwatch/metrics.json": {Data: body}}, "mem")
		if err != nil {
			t.Fatal(err)
		}
		ids, err := b.Sources(time.Time{}).CloudWatch.ListMetrics(context.Background(), "")
		if err != nil {
			t.Fatalf("labels %q: %v", labels, err)
		}
		for _, id := range ids {
			if !contains(words, id.Name) {
				t.Fatalf("metric %q is no word of the labels %q", id.Name, labels)
			}
			for k, v := range id.Dimensions {
				if v == "" || !strings.Contains(labels, v) {
					t.Fatalf("dimension %s=%q is not in the labels %q", k, v, labels)
				}
			}
		}
	})
}
