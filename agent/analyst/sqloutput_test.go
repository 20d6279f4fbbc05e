package analyst

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestSQLTables reads result tables as psql (aligned, \x expanded, border
// 2) and mysql (boxed, \G) print them.
func TestSQLTables(t *testing.T) {
	cases := []struct {
		name string
		out  string
		cols []string
		rows int
		cell [3]string // row 0: column, value
	}{
		{"psql aligned", ` pg_is_in_recovery |   replay_lag    | pg_last_wal_receive_lsn | pg_last_wal_replay_lsn 
-------------------+-----------------+-------------------------+------------------------
 t                 | 00:37:49.118204 | 3A/91C4E2A0             | 3A/5F0C21B8
(1 row)
`, []string{"pg_is_in_recovery", "replay_lag", "pg_last_wal_receive_lsn", "pg_last_wal_replay_lsn"}, 1, [3]string{"replay_lag", "00:37:49.118204"}},
		{"psql one column", ` max_standby_streaming_delay 
-----------------------------
 -1
(1 row)
`, []string{"max_standby_streaming_delay"}, 1, [3]string{"max_standby_streaming_delay", "-1"}},
		{"psql expanded", `-[ RECORD 1 ]----+------------------------------
pid              | 48211
application_name | growth-weekly-report
xact_age         | 00:39:52.603117
-[ RECORD 2 ]----+------------------------------
pid              | 50377
application_name | psql
xact_age         | 00:00:00.000412

`, []string{"pid", "application_name", "xact_age"}, 2, [3]string{"application_name", "growth-weekly-report"}},
		{"mysql boxed", `+------+-----------+-----------+------+---------+------+----------+------------------+
| Id   | User      | Host      | db   | Command | Time | State    | Info             |
+------+-----------+-----------+------+---------+------+----------+------------------+
| 7311 | reconcile | 10.0.3.17 | inv  | Query   | 1843 | updating | UPDATE stock SET |
|   12 | root      | localhost | NULL | Query   |    0 | init     | show processlist |
+------+-----------+-----------+------+---------+------+----------+------------------+
2 rows in set (0.00 sec)
`, []string{"id", "user", "host", "db", "command", "time", "state", "info"}, 2, [3]string{"time", "1843"}},
		{"mysql vertical", `*************************** 1. row ***************************
             Replica_IO_State: Waiting for source to send event
                  Source_Host: inventory-db-01
           Replica_IO_Running: Yes
          Replica_SQL_Running: Yes
        Seconds_Behind_Source: 2270
1 row in set, 1 warning (0.00 sec)
`, []string{"replica_io_state", "source_host", "replica_io_running", "replica_sql_running", "seconds_behind_source"}, 1, [3]string{"seconds_behind_source", "2270"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := sqlTables(strings.Split(c.out, "\n"))
			if len(ts) != 1 {
				t.Fatalf("%d tables, want 1: %+v", len(ts), ts)
			}
			if !slices.Equal(ts[0].cols, c.cols) || len(ts[0].rows) != c.rows {
				t.Fatalf("columns %q, %d rows; want %q, %d", ts[0].cols, len(ts[0].rows), c.cols, c.rows)
			}
			if got := ts[0].cell(0, c.cell[0]); got != c.cell[1] {
				t.Errorf("%s = %q, want %q", c.cell[0], got, c.cell[1])
			}
		})
	}
	// Text that is no table: a markdown heading's rule, a shell listing.
	if ts := sqlTables(strings.Split("total 8\n-rw-r--r-- 1 root root 4 a.txt\n", "\n")); len(ts) != 0 {
		t.Errorf("tables in a listing: %+v", ts)
	}
}

func TestSQLDuration(t *testing.T) {
	const bad = time.Duration(-1 << 62) // not a duration
	for in, want := range map[string]time.Duration{
		"00:37:49.118204":      37*time.Minute + 49*time.Second + 118204*time.Microsecond,
		"1 day 02:00:00":       26 * time.Hour,
		"2270":                 2270 * time.Second,
		"@ 37 mins 49.1 secs":  37*time.Minute + 49100*time.Millisecond,
		"-00:00:01":            -time.Second,
		"2 hours 5 minutes":    2*time.Hour + 5*time.Minute,
		"NULL":                 bad,
		"growth-weekly-report": bad,
	} {
		got, ok := sqlDuration(in)
		if want == bad {
			if ok {
				t.Errorf("%q read as %v", in, got)
			}
			continue
		}
		if !ok || got != want {
			t.Errorf("%q = %v %v, want %v", in, got, ok, want)
		}
	}
}

// TestSQLStates: what psql run in a replica's pod states about it — its
// replay lag, that it is a standby whose received WAL is not replayed, a
// setting that lets queries hold replay back, and the longest open
// transaction (not the psql session itself) — and mysql run against a
// host named with -h.
func TestSQLStates(t *testing.T) {
	exec := func(run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl exec -it profiles-db-1 -n profiles -- bash", Exec: true, Namespace: "profiles", Pod: "profiles-db-1",
			Run: run, ExitCode: -1, Lines: strings.Split(out, "\n"), Source: "dba-session.txt:667"}
	}
	cmds := []evidence.CommandOutput{
		exec(`psql -U postgres -d profiles -c "select pg_is_in_recovery(), now() - pg_last_xact_replay_timestamp() as replay_lag, pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn();"`,
			` pg_is_in_recovery |   replay_lag    | pg_last_wal_receive_lsn | pg_last_wal_replay_lsn 
-------------------+-----------------+-------------------------+------------------------
 t                 | 00:37:49.118204 | 3A/91C4E2A0             | 3A/5F0C21B8
(1 row)
`),
		exec(`psql -U postgres -d profiles -c "show max_standby_streaming_delay;" -c "show hot_standby_feedback;"`, ` max_standby_streaming_delay 
-----------------------------
 -1
(1 row)

 hot_standby_feedback 
----------------------
 off
(1 row)
`),
		exec(`psql -U postgres -d profiles -c "select pid, usename, application_name, state, now() - xact_start as xact_age, left(query, 60) as query from pg_stat_activity where state <> 'idle' order by xact_start;"`,
			`  pid  |  usename  |   application_name   | state  |    xact_age     |                            query                             
-------+-----------+----------------------+--------+-----------------+--------------------------------------------------------------
 48211 | reporting | growth-weekly-report | active | 00:39:52.603117 | select date_trunc('day', a.changed_at) as day, a.field, coun
 50377 | postgres  | psql                 | active | 00:00:00.000412 | select pid, usename, application_name, state, now() - xact_s
(2 rows)
`),
		// Not a SQL client: its table is not read.
		exec(`cat /proc/loadavg`, "0.41 0.37 0.30 2/611 50412"),
		{Command: "ssh db-replica-02 mysql -h inventory-db-02.shop.internal -e 'SHOW REPLICA STATUS\\G'", Host: "db-replica-02", ExitCode: -1,
			Run: "mysql -h inventory-db-02.shop.internal -e 'SHOW REPLICA STATUS\\G'", Source: "ops.txt:40", Lines: strings.Split(`*************************** 1. row ***************************
        Seconds_Behind_Source: 95
`, "\n")},
	}
	sts := sqlStates(cmds)
	if len(sts) != 2 {
		t.Fatalf("%d instances, want 2: %+v", len(sts), sts)
	}
	pg := sts[0]
	if pg.instance != "profiles-db" || pg.where != "profiles-db-1" || pg.lag.Round(time.Second) != 37*time.Minute+49*time.Second || !pg.standby {
		t.Errorf("postgres state %+v", pg)
	}
	if !strings.Contains(pg.stalled, "3A/5F0C21B8") || !slices.Equal(pg.settings, []string{"max_standby_streaming_delay = -1"}) {
		t.Errorf("replay %q, settings %q", pg.stalled, pg.settings)
	}
	if pg.holder != "growth-weekly-report" || !strings.Contains(pg.holderDetail, "pid 48211") || pg.holderAge < 39*time.Minute {
		t.Errorf("holder %q (%s) %v", pg.holder, pg.holderDetail, pg.holderAge)
	}
	if my := sts[1]; my.instance != "inventory-db-02.shop.internal" || my.lag != 95*time.Second || my.holder != "" {
		t.Errorf("mysql state %+v", my)
	}
}
