package db

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rootcause/rootcause/finding"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkListInvestigations times GET /agents/investigations' store call
// with 100,000 investigations stored for one team (payments), 10,000 for
// each of two others and 1,000 for a fourth, 121,000 in all, on a real
// bbolt file. "ratio_100k_1k" alternates the limit=50 page of the 100k and
// the 1k team and reports their time ratio (target: at most 1.2).
// Seeding writes the records and the team index in transactions of 10,000
// (it takes a few seconds and is not timed).
//
//	go test ./db -run '^$' -bench ListInvestigations -benchtime 2s -count 1
func BenchmarkListInvestigations(b *testing.B) {
	d, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	start := time.Now()
	seedInvestigations(b, d, map[string]int{"payments": 100_000, "search": 10_000, "checkout": 10_000, "ledger": 1_000})
	b.Logf("seeded 121,000 investigations in %v", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	for _, c := range []struct {
		name string
		f    InvestigationFilter
		want int // expected page length
	}{
		{"team100k/limit20_offset0", InvestigationFilter{Team: "payments", Limit: 20}, 20},
		{"team100k/limit20_offset5000", InvestigationFilter{Team: "payments", Limit: 20, Offset: 5000}, 20},
		{"team100k/limit100_offset90000", InvestigationFilter{Team: "payments", Limit: 100, Offset: 90_000}, 100},
		{"team100k/status_failed_limit20", InvestigationFilter{Team: "payments", Status: StatusFailed, Limit: 20}, 20},
		{"team100k/status_completed_offset5000", InvestigationFilter{Team: "payments", Status: StatusCompleted, Limit: 20, Offset: 5000}, 20},
		{"team10k/limit20_offset0", InvestigationFilter{Team: "search", Limit: 20}, 20},
		{"team1k/limit50", InvestigationFilter{Team: "ledger", Limit: 50}, 50},
		{"team10k/limit50", InvestigationFilter{Team: "search", Limit: 50}, 50},
		{"team100k/limit50", InvestigationFilter{Team: "payments", Limit: 50}, 50},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				list, total, err := d.ListInvestigations(ctx, c.f)
				if err != nil || len(list) != c.want || total == 0 {
					b.Fatalf("list = %d, total %d, %v", len(list), total, err)
				}
			}
		})
	}
	b.Run("ratio_100k_1k", func(b *testing.B) {
		var small, large time.Duration
		for b.Loop() {
			for _, team := range []string{"ledger", "payments"} {
				start := time.Now()
				list, total, err := d.ListInvestigations(ctx, InvestigationFilter{Team: team, Limit: 50})
				el := time.Since(start)
				if err != nil || len(list) != 50 || total == 0 {
					b.Fatalf("list = %d, total %d, %v", len(list), total, err)
				}
				if team == "ledger" {
					small += el
				} else {
					large += el
				}
			}
		}
		b.ReportMetric(float64(small.Nanoseconds())/float64(b.N), "1k-ns/op")
		b.ReportMetric(float64(large.Nanoseconds())/float64(b.N), "100k-ns/op")
		b.ReportMetric(float64(large)/float64(small), "ratio")
	})
}

// seedInvestigations stores n completed-looking investigations per team
// (1 in 20 failed, 1 in 50 cancelled), one a minute, each with a result
// of about 1 KB, through the same keys CreateInvestigation writes.
func seedInvestigations(b *testing.B, d *DB, teams map[string]int) {
	b.Helper()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	result := &finding.Result{
		Summary: "checkout pods were OOMKilled after the v3.8.0 deploy raised memory use",
		RootCause: finding.RootCause{Description: "checkout exceeded its 512Mi memory limit", Confidence: 90,
			Evidence: []string{"pod checkout-7d9-abc OOMKilled 6 times (exit code 137)", "working set grew 38 MiB/min", "deploy v3.8.0 at 13:34"}},
		Timeline: []finding.TimelineEvent{{Timestamp: "2026-02-03T13:34:00Z", Event: "deploy v3.8.0"},
			{Timestamp: "2026-02-03T13:42:00Z", Event: "first OOMKilled"}},
		AffectedSystems: []string{"checkout", "payments-api"},
		Recommendations: []finding.Recommendation{{Priority: "high", Action: "roll back checkout to v3.7.2"},
			{Priority: "medium", Action: "raise the memory limit to 768Mi after profiling"}},
		Verdict: finding.VerdictIdentified,
	}
	const batch = 10_000
	for team, n := range teams {
		for lo := 0; lo < n; lo += batch {
			err := d.bolt.Update(func(tx *bolt.Tx) error {
				recs := tx.Bucket(bucketInvestigations)
				idx := tx.Bucket(bucketInvestigationsByTeam)
				for i := lo; i < min(lo+batch, n); i++ {
					created := base.Add(time.Duration(i) * time.Minute)
					done := created.Add(40 * time.Second)
					inv := &Investigation{ID: fmt.Sprintf("%s-%07d", team, i), Team: team, Agent: "investigation_agent",
						Message: "checkout is returning 502s", Status: StatusCompleted, CreatedAt: created,
						StartedAt: &created, CompletedAt: &done, Result: result,
						ToolsUsed: []string{"list_pods", "get_events", "get_pod_logs", "prometheus_query_range"}}
					switch {
					case i%20 == 7:
						inv.Status, inv.CompletedAt, inv.Result = StatusFailed, nil, nil
						inv.FailedAt = &done
						inv.Error = &RunError{Code: "timeout", Message: "the investigation ran past its timeout"}
					case i%50 == 9:
						inv.Status, inv.CompletedAt, inv.Result = StatusCancelled, nil, nil
						inv.CancelledAt = &done
					}
					if err := putJSON(recs, []byte(inv.ID), inv); err != nil {
						return err
					}
					if err := idx.Put(teamIndexKey(team, created, inv.ID), []byte(inv.Status)); err != nil {
						return err
					}
					if err := addCount(tx, team, inv.Status, 1); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
