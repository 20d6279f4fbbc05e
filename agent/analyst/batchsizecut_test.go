package analyst

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// TestSizeCutOf: the changes that lower a batch, chunk, page or bulk size,
// in the forms change logs and config diffs write them; raising one, or
// lowering a timeout or a replica count, is not a cut.
func TestSizeCutOf(t *testing.T) {
	cases := []struct {
		text     string
		key      string
		from, to int
	}{
		{"revenue-rollup-config: REPORT_BATCH_SIZE 5000 -> 500 (shorter row locks)", "REPORT_BATCH_SIZE", 5000, 500},
		{"exporter: chunk_size: 10000 → 1000", "chunk_size", 10000, 1000},
		{"kafka producer batch.size from 16384 to 1024", "batch.size", 16384, 1024},
		{"sync job: --page-size 1000 => 100", "page-size", 1000, 100},
		{"indexer: bulk_size \"5,000\" -> \"500\"", "bulk_size", 5000, 500},
		{"etl: FETCH_ROWS 20_000 to 2_000", "FETCH_ROWS", 20000, 2000},
		{"REPORT_BATCH_SIZE 500 -> 5000", "", 0, 0},
		{"HTTP_TIMEOUT 30 -> 5", "", 0, 0},
		{"replicas 10 -> 2", "", 0, 0},
		{"BATCH_SIZE 1000 -> 800", "", 0, 0},
	}
	for _, c := range cases {
		got := sizeCutOf(c.text)
		if c.key == "" {
			if got != nil {
				t.Errorf("%q: %+v, want none", c.text, got)
			}
			continue
		}
		if got == nil || got.key != c.key || got.from != c.from || got.to != c.to {
			t.Errorf("%q: %+v, want %s %d -> %d", c.text, got, c.key, c.from, c.to)
		}
	}
}

// TestBatchSizeCut: a job whose batch size a config change lowered runs
// many more batches, each paying a fixed step, and takes several times
// longer than its runs before the change; its log's count, size and
// slowest per-batch step are quoted, and a deploy of it between the runs
// is named as changing nothing of the batching. The counting lines are
// read in several real forms (Python logging, logfmt, JSON). A job whose
// size was raised, whose runs did not grow and whose log counts no
// batches, or whose only change is a deploy, is nothing.
func TestBatchSizeCut(t *testing.T) {
	now := time.Date(2026, 7, 8, 6, 20, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-24 * time.Hour), Start: now.Add(-12 * time.Hour), End: now}
	jobs := func(slow string) string {
		return "$ kubectl get jobs -n analytics\n" +
			"NAME                             STATUS     COMPLETIONS   DURATION   AGE\n" +
			"revenue-rollup-29198520          Complete   1/1           6m38s      28h\n" +
			fmt.Sprintf("revenue-rollup-29199960          Complete   1/1           %-10s 4h20m\n", slow)
	}
	python := []string{
		"2026-07-08 02:00:03,000 INFO revenue_rollup.main: revenue-rollup 3.2.0 starting; window=2026-07-07 batch_size=500 target=warehouse.analytics.revenue_daily",
		"2026-07-08 02:00:06,833 INFO revenue_rollup.main: batch 1/412 upserted 500 rows in 0.43s",
		"2026-07-08 02:00:11,979 INFO revenue_rollup.mview: batch 1/412 refreshed mv_revenue_daily (CONCURRENTLY) in 5.15s",
		"2026-07-08 02:40:03,244 INFO revenue_rollup.main: batch 412/412 upserted 233 rows in 0.26s",
		"2026-07-08 02:40:08,920 INFO revenue_rollup.mview: batch 412/412 refreshed mv_revenue_daily (CONCURRENTLY) in 5.68s",
		"2026-07-08 02:40:08,920 INFO revenue_rollup.main: rollup finished: 205733 rows in 412 batches, elapsed 0:40:05",
	}
	logfmt := []string{
		`time=2026-07-08T02:00:03Z level=info msg="export starting" chunk_size=500`,
		`time=2026-07-08T02:00:09Z level=info msg="chunk committed" chunk=1 chunks=412 rows=500 commit_ms=4900`,
		`time=2026-07-08T02:40:01Z level=info msg="export done" chunks=412 rows=205733 took=40m1s`,
	}
	json := []string{
		`{"ts":"2026-07-08T02:00:03.000Z","level":"info","msg":"rollup start","batchSize":500}`,
		`{"ts":"2026-07-08T02:00:09.000Z","level":"info","msg":"flushed","page":"1/412","took":"5.1s"}`,
		`{"ts":"2026-07-08T02:40:01.000Z","level":"info","msg":"flushed","page":"412/412","took":"5.6s"}`,
	}
	cut := evidence.Change{Timestamp: time.Date(2026, 7, 7, 10, 42, 0, 0, time.UTC), Service: "revenue-rollup", Kind: "config",
		Description: "revenue-rollup-config: REPORT_BATCH_SIZE 5000 -> 500 (shorter row locks on revenue_daily, DBA-1193)"}
	raised := cut
	raised.Description = "revenue-rollup-config: REPORT_BATCH_SIZE 500 -> 5000"
	deploy := evidence.Change{Timestamp: time.Date(2026, 7, 7, 15, 5, 0, 0, time.UTC), Service: "revenue-rollup", Kind: "deploy",
		Description: "revenue-rollup 3.2.0: psycopg 3.1 -> 3.2, pandas 2.2.2"}
	cases := []struct {
		name    string
		slow    string
		lines   []string
		changes []evidence.Change
		want    []string // nil: no finding
	}{
		{"python logging, runs timed", "40m9s", python, []evidence.Change{cut, deploy},
			[]string{"runs 412 batches", "from 5000 to 500", "REPORT_BATCH_SIZE", "40m9s against 6m38s", "412 batches of 500 rows (about 41 at 5000)",
				"refreshed mv_revenue_daily (CONCURRENTLY) in 5.68s", "\"revenue-rollup 3.2.0: psycopg 3.1 -> 3.2, pandas 2.2.2\" changes nothing of the batching"}},
		{"logfmt counts", "40m1s", logfmt, []evidence.Change{cut}, []string{"runs 412 batches", "412 batches of 500 rows", "6x", "commit_ms=4900"}},
		{"json counts, runs not listed", "", json, []evidence.Change{cut}, []string{"runs 412 batches", "page=412/412 took=5.6s"}},
		{"counts, but the run took its usual time", "6m50s", json, []evidence.Change{cut}, nil},
		{"runs grown, log not read", "40m9s", nil, []evidence.Change{cut}, []string{"many more batches", "40m9s against 6m38s"}},
		{"size raised", "40m9s", python, []evidence.Change{raised}, nil},
		{"only a deploy", "40m9s", python, []evidence.Change{deploy}, nil},
		{"cut, usual time, nothing counted", "6m50s", nil, []evidence.Change{cut}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var k K8sEvidence
			if tc.slow != "" {
				for _, o := range kubetext.Parse([]byte(jobs(tc.slow)), now).Objects {
					if j, ok := o.(*batchv1.Job); ok {
						k.Jobs = append(k.Jobs, *j)
					}
				}
				if len(k.Jobs) != 2 {
					t.Fatalf("%d jobs read", len(k.Jobs))
				}
			}
			ev := &Gathered{K8s: k, Earlier: tc.changes, Window: w, Scope: Scope{Service: "revenue-rollup", Namespace: "analytics"}}
			if tc.lines != nil {
				ls := minedSetAt("revenue-rollup-29199960-w4n8d", w, tc.lines)
				ls.Subject, ls.Namespace, ls.Host = "revenue-rollup", "analytics", false
				ev.Logs = []LogSet{ls}
			}
			fs := detectBatchSizeCut(ev, nil)
			if (len(fs) == 1) != (tc.want != nil) {
				t.Fatalf("findings %+v", fs)
			}
			if tc.want == nil {
				return
			}
			h := &Hypothesis{Kind: KindBatchSizeCut, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, tc.want...)
			if fs[0].fact("why") == "" || len(fs[0].Evidence) < 2 {
				t.Errorf("%+v", fs[0])
			}
			c := &Finding{Kind: KindConfigChange, Summary: cut.Description}
			if !batchSizeCut.fitsChange(h, c) || batchSizeCut.fitsChange(h, &Finding{Kind: KindDeploy, Summary: deploy.Description}) {
				t.Error("fitsChange: only the size cut fits")
			}
		})
	}
}
