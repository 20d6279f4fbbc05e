package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A materialized view whose concurrent refresh fails: RDS PostgreSQL's
// log in CloudWatch with the migration's CREATE, pg_cron's
// job_run_details in psql with the job's schedule, a plain PostgreSQL
// log with the change that rebuilt the view; other refresh errors are
// none.
func TestDetectMatViewRefreshFailed(t *testing.T) {
	rds := []string{
		`2026-11-24 08:19:58 UTC:10.40.2.77(53118):flyway@shop:[27411]:LOG:  duration: 16912.440 ms  statement: CREATE MATERIALIZED VIEW public.daily_revenue AS SELECT day, shop_id, sum(total) FROM orders GROUP BY 1, 2`,
		`2026-11-24 08:20:00 UTC:127.0.0.1(47135):postgres@shop:[27135]:ERROR:  cannot refresh materialized view "public.daily_revenue" concurrently`,
		`2026-11-24 08:20:00 UTC:127.0.0.1(47135):postgres@shop:[27135]:HINT:  Create a unique index with no WHERE clause on one or more columns of the materialized view.`,
	}
	cron := []evidence.CommandOutput{
		{Command: `psql -c "select jobid, jobname, schedule, command from cron.job"`, Lines: []string{
			" jobid |     jobname      |   schedule   | command",
			"     3 | refresh-revenue  | */15 * * * * | REFRESH MATERIALIZED VIEW CONCURRENTLY reports.daily_revenue",
		}},
		{Command: `psql -c "select runid, jobid, status, return_message, start_time from cron.job_run_details order by start_time desc limit 2"`, Lines: []string{
			" runid  | jobid | status  |                                  return_message                                  |          start_time",
			" 418230 |     3 | failed  | ERROR:  cannot refresh materialized view \"reports.daily_revenue\" concurren | 2026-11-26 10:15:00.011204+00",
		}},
	}
	plain := []string{`2026-11-25 03:00:00.118 CET [4711] ERROR:  cannot refresh materialized view "stock_summary" concurrently`}
	change := evidence.Change{Timestamp: win.Start.Add(-24 * time.Hour), Service: "stock-api", Kind: "deploy", Description: "stock-api 2.0.0: migration V40 recreates stock_summary with warehouse_id"}
	other := []string{`2026-11-25 03:00:00.118 CET [4711] ERROR:  "stock_summary" is not a materialized view`}
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		subject string
		want    []string
	}{
		{"RDS PostgreSQL in CloudWatch", []LogSet{minedSet("shop-db", false, 0, rds...)}, nil, nil, "reports-api",
			[]string{"materialized view public.daily_revenue", "no unique index", "dropped and recreated"}},
		{"pg_cron in psql", nil, cron, nil, "reports-api", []string{"reports.daily_revenue", "(*/15 * * * *)", "CONCURRENTLY"}},
		{"a PostgreSQL log and the change", []LogSet{minedSet("postgres", false, 0, plain...)}, nil, []evidence.Change{change}, "stock-api",
			[]string{"stock_summary", "rebuilt without its unique index by stock-api's change"}},
		{"another error", []LogSet{minedSet("postgres", false, 0, other...)}, nil, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectMatViewRefreshFailed(&Gathered{Logs: tc.sets, Commands: tc.cmds, Changes: tc.changes, Window: win, Scope: Scope{Service: "reports-api"}}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindMatViewRefreshFailed, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
