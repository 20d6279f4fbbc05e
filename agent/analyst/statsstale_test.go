package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Stale planner statistics read from psql's aligned, expanded (\x) and
// pgcli's boxed outputs of pg_stat_user_tables and pg_class, an EXPLAIN
// ANALYZE filtering millions of rows, and a loader's log; a table analyzed
// after its load, and a stale table nothing shows misplanned, are none.
func TestDetectStatsStale(t *testing.T) {
	aligned := evidence.CommandOutput{Command: "kubectl -n billing exec -it ledger-db-0 -- psql -U postgres ledger", Exec: true, Pod: "ledger-db-0", Run: "psql -U postgres ledger", Lines: []string{
		"ledger=# SELECT relname, n_live_tup, n_mod_since_analyze, last_analyze, last_autoanalyze FROM pg_stat_user_tables WHERE relname = 'entries';",
		" relname | n_live_tup | n_mod_since_analyze | last_analyze |       last_autoanalyze",
		"---------+------------+---------------------+--------------+-------------------------------",
		" entries |   21408812 |            17920411 |              | 2026-11-18 02:11:40.332+00",
		"(1 row)",
		"",
		"ledger=# EXPLAIN ANALYZE SELECT * FROM entries WHERE account_id = 4411 ORDER BY booked_at DESC LIMIT 20;",
		"                                                                 QUERY PLAN",
		"---------------------------------------------------------------------------------------------------------------------------------------------",
		" Limit  (cost=0.44..812.18 rows=20 width=88) (actual time=2210.402..2210.455 rows=20 loops=1)",
		"   ->  Index Scan Backward using entries_booked_at_idx on entries  (cost=0.44..9126611.20 rows=224 width=88) (actual time=2210.400..2210.450 rows=20 loops=1)",
		"         Filter: (account_id = 4411)",
		"         Rows Removed by Filter: 14260118",
		" Planning Time: 0.190 ms",
		" Execution Time: 2210.501 ms",
		"(6 rows)",
	}}
	expanded := evidence.CommandOutput{Command: `psql -h orders-db.internal -U app orders -x -c "select relname, n_live_tup, n_mod_since_analyze, last_autoanalyze from pg_stat_user_tables where relname='order_lines'"`, Run: `psql -h orders-db.internal -U app orders -x -c "select ..."`, Lines: []string{
		"-[ RECORD 1 ]--------+------------------------------",
		"relname             | order_lines",
		"n_live_tup          | 8812004",
		"n_mod_since_analyze | 6900230",
		"last_autoanalyze    | 2026-11-20 04:00:12.5+00",
	}}
	reloptions := evidence.CommandOutput{Command: `psql -h orders-db.internal -U app orders -c "select relname, reltuples::bigint, reloptions from pg_class where relname='order_lines'"`, Run: "psql -h orders-db.internal -U app orders -c ...", Lines: []string{
		"   relname   | reltuples |         reloptions",
		"-------------+-----------+----------------------------",
		" order_lines |   1912004 | {autovacuum_enabled=false}",
		"(1 row)",
	}}
	boxed := evidence.CommandOutput{Command: "pgcli -h events-db -U app events", Run: "pgcli -h events-db -U app events", Lines: []string{
		"app@events-db:events> select relname, n_live_tup, n_mod_since_analyze, last_analyze, last_autoanalyze from pg_stat_user_tables where relname = 'clicks';",
		"+---------+------------+---------------------+--------------+-------------------------------+",
		"| relname | n_live_tup | n_mod_since_analyze | last_analyze | last_autoanalyze              |",
		"|---------+------------+---------------------+--------------+-------------------------------|",
		"| clicks  | 52114019   | 50002311            | <null>       | 2026-11-01 01:12:09.11+00     |",
		"+---------+------------+---------------------+--------------+-------------------------------+",
		"app@events-db:events> explain analyze select * from clicks where campaign_id = 91 and created_at > now() - interval '1 hour';",
		"+-----------------------------------------------------------------------------------------------------------------------+",
		"| QUERY PLAN                                                                                                            |",
		"|-----------------------------------------------------------------------------------------------------------------------|",
		"| Seq Scan on clicks  (cost=0.00..41201.20 rows=3 width=64) (actual time=0.031..6120.880 rows=1840 loops=1)             |",
		"|   Filter: ((campaign_id = 91) AND (created_at > (now() - '01:00:00'::interval)))                                      |",
		"|   Rows Removed by Filter: 52112179                                                                                    |",
		"+-----------------------------------------------------------------------------------------------------------------------+",
	}}
	fresh := evidence.CommandOutput{Command: "psql -U postgres ledger", Exec: true, Pod: "ledger-db-0", Run: "psql -U postgres ledger", Lines: []string{
		" relname | n_live_tup | n_mod_since_analyze | last_analyze |       last_autoanalyze",
		"---------+------------+---------------------+--------------+-------------------------------",
		" entries |   21408812 |               41220 |              | 2026-11-20 10:11:40.332+00",
		"(1 row)",
		"",
		"   ->  Index Scan Backward using entries_booked_at_idx on entries  (cost=0.44..9126611.20 rows=224 width=88) (actual time=2210.400..2210.450 rows=20 loops=1)",
		"         Rows Removed by Filter: 14260118",
	}}
	staleOnly := evidence.CommandOutput{Command: "psql -U postgres ledger", Exec: true, Pod: "ledger-db-0", Run: "psql -U postgres ledger", Lines: aligned.Lines[:5]}
	pyLoader := []string{
		"2026-11-20 09:00:02,114 INFO backfill: ALTER TABLE order_lines SET (autovacuum_enabled = false)",
		"2026-11-20 09:41:55,902 INFO backfill: inserted 6,880,120 rows into order_lines in 41m53s",
	}
	goLoader := []string{
		`{"time":"2026-11-20T09:41:55Z","level":"INFO","msg":"copied 17880412 rows into public.entries","job":"ledger-import"}`,
	}
	for _, tc := range []struct {
		name    string
		cmds    []evidence.CommandOutput
		sets    []LogSet
		subject string
		want    []string
	}{
		{"psql aligned views and a backward index scan, a JSON loader log", []evidence.CommandOutput{aligned}, []LogSet{minedSet("ledger-import", false, 0, goLoader...)}, "ledger-db",
			[]string{"statistics of table entries on ledger-db are stale", "17920411 rows modified", "since ledger-import loaded 17880412 rows into entries", "Index Scan Backward using entries_booked_at_idx on entries removes 14260118 rows by filter (estimated 224 rows, actual 20)", "so orders-api is slow"}},
		{"psql expanded view, pg_class reloptions, a Python loader log", []evidence.CommandOutput{expanded, reloptions}, []LogSet{minedSet("order-lines-backfill", false, 0, pyLoader...)}, "orders-db.internal",
			[]string{"table order_lines", "6900230 rows modified", "(pg_class.reltuples) 1912004", "autovacuum is disabled on it", "loaded 6880120 rows", "after turning autovacuum off"}},
		{"pgcli boxed view and a Seq Scan", []evidence.CommandOutput{boxed}, nil, "events-db",
			[]string{"table clicks", "50002311 rows modified", "Seq Scan on clicks removes 52112179 rows by filter"}},
		{"analyzed since its load", []evidence.CommandOutput{fresh}, nil, "", nil},
		{"stale, but no plan nor setting shows it matters", []evidence.CommandOutput{staleOnly}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectStatsStale(&Gathered{Logs: tc.sets, Commands: tc.cmds, Window: win, Scope: Scope{Service: "orders-api"}}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindStatsStale, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}

// Tables never analyzed after a major version upgrade: both analyze times
// empty (psql aligned) or reltuples -1, the upgrade read from a change, and
// an Ansible log whose analyze task was skipped; a table analyzed once is
// not said to be never analyzed.
func TestStatsNeverAnalyzedAfterUpgrade(t *testing.T) {
	stats := func(lastAuto string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "psql -h pg-main-01 -U postgres shop", Run: "psql -h pg-main-01 -U postgres shop", Lines: []string{
			"  relname  | n_live_tup | n_mod_since_analyze | last_analyze | last_autoanalyze",
			"-----------+------------+---------------------+--------------+------------------",
			" invoices  |     401004 |              404881 |              | " + lastAuto,
			" customers |       3120 |                9120 |              |",
			"(2 rows)",
			"",
			" Parallel Seq Scan on invoices  (cost=0.00..41201.20 rows=61941 width=64) (actual time=0.031..6120.880 rows=2 loops=3)",
			"   Rows Removed by Filter: 13404122",
		}}
	}
	ansible := evidence.CommandOutput{Command: "sudo grep TASK /var/log/ansible/upgrade.log", Run: "sudo grep TASK /var/log/ansible/upgrade.log", Lines: []string{
		"2026-11-15 02:04:20,101 p=88120 u=deploy n=ansible | TASK [pg_upgrade_role : run vacuumdb --analyze-only] ******",
		"2026-11-15 02:04:20,133 p=88120 u=deploy n=ansible | skipping: [pg-main-01]",
	}}
	upgrade := evidence.Change{Timestamp: time.Date(2026, 11, 15, 2, 0, 0, 0, time.UTC), Service: "pg-main", Kind: "infra", Description: "pg-main-01 major version upgrade 13 -> 16"}
	w := Window{Start: time.Date(2026, 11, 16, 8, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 16, 10, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name     string
		lastAuto string
		want     []string
		not      []string
	}{
		{"never analyzed, upgrade and skipped task", "", []string{"never been analyzed", "nor have customers", "pg_upgrade does not carry", `the task "pg_upgrade_role : run vacuumdb --analyze-only" was skipped`}, nil},
		{"analyzed once", "2026-11-16 07:12:44+00", nil, []string{"never been analyzed", "pg_upgrade"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gathered{Window: w, Commands: []evidence.CommandOutput{stats(tc.lastAuto), ansible}, Earlier: []evidence.Change{upgrade}}
			fs := detectStatsStale(g, nil)
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: fs[0].Kind, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := statsStale.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(d, s) {
					t.Errorf("description has %q:\n%s", s, d)
				}
			}
		})
	}
}
