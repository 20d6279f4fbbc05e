package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Writes refused for want of a partition, in PostgreSQL's, MySQL's and
// Oracle's words as a Go (zap), a Java (Spring/Hibernate) and a Python
// writer log them, with the server's log, pg_cron's bookkeeping and the
// partitions' bounds from a psql session: the missing partition is the
// root, and a failing maintenance job the reason when it is shown.
func TestDetectPartitionMissing(t *testing.T) {
	zap := []string{
		`{"level":"error","ts":"2026-12-01T00:00:00.414Z","msg":"place order failed","error":"insert order_events: ERROR: no partition of relation \"order_events\" found for row (SQLSTATE 23514)","status":500}`,
		`{"level":"error","ts":"2026-12-01T00:00:03.106Z","msg":"update order status failed","error":"insert order_events: ERROR: no partition of relation \"order_events\" found for row (SQLSTATE 23514)","status":500}`,
	}
	pgLog := []string{
		`2026-12-01T00:00:00.413502+00:00 db-01 postgres[318880]: [5-1] ERROR:  no partition of relation "order_events" found for row`,
		`2026-12-01T00:00:00.413502+00:00 db-01 postgres[318880]: [5-2] DETAIL:  Partition key of the failing row contains (created_at) = (2026-12-01 00:00:00.409+00).`,
		`2026-12-01T00:17:00.016220+00:00 db-01 postgres[912]: [41260-1] LOG:  cron job 3 starting: CALL partman.run_maintenance_proc()`,
		`2026-12-01T00:17:00.019907+00:00 db-01 postgres[912]: [41261-1] LOG:  cron job 3 connection failed`,
	}
	failFrom := win.Start.Add(-32 * 24 * time.Hour).Truncate(time.Hour).Add(17 * time.Minute)
	pgTime := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000") + "+00" }
	psql := []evidence.CommandOutput{{Command: "psql -d shop", Lines: strings.Split(` relname                | bound
------------------------+---------------------------------------------------------------------------
 order_events_p20261101 | FOR VALUES FROM ('2026-11-01 00:00:00+00') TO ('2026-12-01 00:00:00+00')
 order_events_p20261001 | FOR VALUES FROM ('2026-10-01 00:00:00+00') TO ('2026-11-01 00:00:00+00')
 jobid | schedule   | command                             | nodename  | nodeport
-------+------------+-------------------------------------+-----------+----------
     3 | 17 * * * * | CALL partman.run_maintenance_proc() | localhost |     5432
 jobid |  status   |    return_message    |          start_time
-------+-----------+----------------------+-------------------------------
     3 | succeeded | CALL                 | `+pgTime(failFrom.Add(-time.Hour))+`
     3 | failed    | connection failed    | `+pgTime(failFrom)+`
  status   | count |              min              |              max
-----------+-------+-------------------------------+-------------------------------
 failed    |   759 | `+pgTime(failFrom)+` | `+pgTime(win.Start)+``, "\n")}}
	hibernate := []string{
		`2026-12-01 00:00:01.204 ERROR 1 --- [nio-8080-exec-3] o.h.engine.jdbc.spi.SqlExceptionHelper   : (conn=4411) Table has no partition for value 739951`,
		`2026-12-01 00:00:02.911 ERROR 1 --- [nio-8080-exec-9] o.h.engine.jdbc.spi.SqlExceptionHelper   : (conn=4412) Table has no partition for value 739951`,
	}
	oracle := []string{
		`cx_Oracle.DatabaseError: ORA-14400: inserted partition key does not map to any partition`,
		`oracledb.exceptions.IntegrityError: ORA-14400: inserted partition key does not map to any partition`,
	}
	hba := evidence.Change{Timestamp: failFrom.Add(-62 * time.Minute), Service: "db-01", Kind: "config", Description: "pg_hba.conf: host 127.0.0.1/32 trust -> scram-sha-256"}
	cases := []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		earlier []evidence.Change
		subject string
		want    []string
		not     []string
	}{
		{"PostgreSQL, pg_cron job failing since an auth change",
			[]LogSet{minedSet("orders-api", false, time.Minute, zap...), minedSet("db-01", true, time.Minute, pgLog...)}, psql, []evidence.Change{hba},
			"db-01", []string{"inserts into order_events on db-01 fail because no partition covers the rows", "(created_at) = 2026-12-01", "last partition ends at 2026-12-01 00:00:00+00", "pg_cron job 3: CALL partman.run_maintenance_proc()", "since " + ts(failFrom), "759 failed runs", `"connection failed"`, "pg_hba.conf", "orders-api's writes fail"}, nil},
		{"MySQL through Hibernate, no job shown",
			[]LogSet{minedSet("billing-api", false, time.Minute, hibernate...)}, nil, nil,
			"database", []string{"inserts into the partitioned table fail", "billing-api's writes fail", "did not create it"}, []string{"pg_cron"}},
		{"Oracle from a Python writer",
			[]LogSet{minedSet("ledger-worker", false, time.Minute, oracle...)}, nil, nil,
			"database", []string{"no partition covers the rows", "ledger-worker"}, nil},
		{"other constraint violations are not this",
			[]LogSet{minedSet("orders-api", false, time.Minute, `ERROR: new row for relation "orders" violates check constraint "orders_total_check" (SQLSTATE 23514)`, `ERROR: new row for relation "orders" violates check constraint "orders_total_check" (SQLSTATE 23514)`)}, nil, nil,
			"", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectPartitionMissing(&Gathered{Logs: c.sets, Commands: c.cmds, Earlier: c.earlier, Window: win}, nil)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("finding %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != c.subject {
				t.Fatalf("findings %+v, want one on %s", fs, c.subject)
			}
			h := &Hypothesis{Kind: KindPartitionMissing, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
			wantDescribed(t, h, Scope{}, c.want...)
			for _, n := range c.not {
				if strings.Contains(describe(h, Scope{}), n) {
					t.Errorf("description says %q", n)
				}
			}
			if recs := recommend(h, Scope{}); len(recs) < 3 || !strings.Contains(recs[0].Action, "missing partition") {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
