package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestTooManyParts reads ClickHouse rejecting inserts for too many parts,
// as the server logs it and as clients quote it (a zap JSON line with
// code 252, clickhouse-go's "code: 252", the JDBC driver's
// TOO_MANY_PARTS), with system.parts and system.query_log in
// clickhouse-client's Pretty format and the writer's rows per flush. Large
// inserts rejected all the same are not blamed on the writer's batch.
func TestTooManyParts(t *testing.T) {
	zap := `{"level":"error","ts":1773483000.44,"caller":"sink/clickhouse.go:142","msg":"insert failed, will retry","rows":3,"table":"analytics.events","error":"code: 252, message: Too many parts (3001 with average size of 12.41 KiB) in table 'analytics.events (b7e20c4a-91d3-4f6e-a8b1-2c3d4e5f6a70)'. Merges are processing significantly slower than inserts"}`
	flushed := `{"level":"info","ts":1773482000.56,"caller":"sink/clickhouse.go:118","msg":"flushed","rows":4,"table":"analytics.events","took_ms":9}`
	bigFlush := `2026-03-14T10:00:00Z INFO flushed 48210 rows into metrics.samples`
	jdbc := `2026-03-14 10:12:41.377 ERROR 1 --- [pool-3-thread-1] c.a.Writer : insert failed: ru.yandex.clickhouse.except.ClickHouseException: ClickHouse exception, code: 252, host: ch-0, port: 8123; Code: 252. DB::Exception: Too many parts (600). Merges are processing significantly slower than inserts. (TOO_MANY_PARTS)`
	server := `2026.03.14 10:12:52.118220 [ 812 ] {d3f1} <Error> executeQuery: Code: 252. DB::Exception: Too many parts (3001 with average size of 12.41 KiB) in table 'analytics.events (b7e2)'. Merges are processing significantly slower than inserts. (TOO_MANY_PARTS) (version 24.3.5.46 (official build))`
	delay := `2026.03.14 10:02:41.552109 [ 644 ] {} <Information> analytics.events (b7e2): Delaying inserting block by 214.3 ms. because there are 2611 parts and their average size is 12.03 KiB`
	ch := func(q, out string) evidence.CommandOutput {
		run := `clickhouse-client -q "` + q + `"`
		return evidence.CommandOutput{Command: "kubectl exec -n analytics clickhouse-analytics-0 -- " + run, Run: run, Exec: true, Pod: "clickhouse-analytics-0", Lines: strings.Split(out, "\n")}
	}
	parts := ch("SELECT partition, count() AS parts, formatReadableSize(avg(bytes_on_disk)) AS avg_size FROM system.parts", `┌─partition─┬─parts─┬─avg_size──┐
│ 20261112  │  3001 │ 12.41 KiB │
│ 20261111  │     9 │ 1.88 GiB  │
└───────────┴───────┴───────────┘`)
	queryLog := ch("SELECT event_time, query_kind, written_rows FROM system.query_log", `┌──────────event_time─┬─query_kind─┬─written_rows─┐
│ 2026-03-14 10:14:50 │ Insert     │            2 │
│ 2026-03-14 10:14:49 │ Insert     │            1 │
└─────────────────────┴────────────┴──────────────┘`)
	cases := []struct {
		name    string
		logs    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string
		small   string // rows per insert read, "" for none
	}{
		{"zap client, server log, system.parts and query_log", []LogSet{logSet("events-ingest", false, zap, flushed), logSet("clickhouse-analytics", false, server, delay)},
			[]evidence.CommandOutput{parts, queryLog}, "events-ingest",
			[]string{"TOO_MANY_PARTS", "analytics.events", "3001 active parts averaging 12.41 KiB", "tiny inserts (at most 4 rows per INSERT)", "partition 20261112 has 3001 active parts"}, "4"},
		{"JDBC client alone", []LogSet{logSet("metrics-writer", false, jdbc)}, nil, "metrics-writer",
			[]string{"600 active parts", "metrics-writer's inserts fail"}, ""},
		{"server log alone", []LogSet{logSet("clickhouse-analytics", false, server)}, nil, "clickhouse-analytics",
			[]string{"rejects inserts into analytics.events"}, ""},
		{"large batches rejected all the same: not the writer's batch", []LogSet{logSet("metrics-writer", false, jdbc, bigFlush)}, nil, "metrics-writer",
			[]string{"600 active parts"}, ""},
		{"no rejection", []LogSet{logSet("events-ingest", false, flushed)}, nil, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectTooManyParts(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("rows_per_insert") != c.small {
				t.Errorf("rows per insert %q, want %q", f.fact("rows_per_insert"), c.small)
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "async_insert") {
				t.Errorf("recommendations: %+v", recs)
			}
		})
	}
	h := &Hypothesis{Kind: KindTooManyParts, Subject: "events-ingest"}
	batch := &Finding{Kind: KindDeploy, Subject: "events-ingest", Summary: "events-ingest 1.9.0: near-real-time mode, insert each event as it arrives (BATCH_MAX_ROWS=1)"}
	other := &Finding{Kind: KindConfigChange, Subject: "superset", Summary: "superset: chart cache timeout 300s -> 600s"}
	if !tooManyParts.fitsChange(h, batch) || tooManyParts.fitsChange(h, other) {
		t.Errorf("fitsChange: batch %v, other %v", tooManyParts.fitsChange(h, batch), tooManyParts.fitsChange(h, other))
	}
}
