package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestRowLockIdleHolder reads row-lock waits behind a transaction its
// client left idle: PostgreSQL's pg_stat_activity (aligned and expanded)
// with pg_blocking_pids naming the holder, or without it the one session
// idle in transaction; MySQL's sys.innodb_lock_waits with the blocking
// thread sleeping in an open InnoDB transaction. Waits whose holder is
// running a statement (a long UPDATE) are not this cause.
func TestRowLockIdleHolder(t *testing.T) {
	cmd := func(run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Source: "session.txt:1", Lines: strings.Split(out, "\n")}
	}
	activity := func(holderState string) string {
		return ` pid  | application_name |        state        | wait_event_type |  wait_event   |   xact_age   | query
------+------------------+---------------------+-----------------+---------------+--------------+-----------------------------------------------------------
 5001 | stock-api        | ` + holderState + ` | Client          | ClientRead    | 00:00:04.120 | SELECT id FROM reservations WHERE order_id = $1
 5002 | stock-api        | active              | Lock            | transactionid | 00:00:03.900 | UPDATE stock_levels SET reserved = reserved + $1 WHERE sku = $2
 5003 | stock-api        | active              | Lock            | transactionid | 00:00:03.100 | UPDATE stock_levels SET reserved = reserved + $1 WHERE sku = $2
 5004 | stock-api        | active              | Lock            | tuple         | 00:00:02.050 | UPDATE stock_levels SET reserved = reserved + $1 WHERE sku = $2
 5005 | reports          | active              |                 |               | 00:00:00.010 | SELECT sku, on_hand FROM stock_levels LIMIT 100
(5 rows)`
	}
	blocking := ` waiting_pid | blocked_by | waiting_for
-------------+------------+--------------
        5002 | {5001}     | 00:00:03.890
        5003 | {5001}     | 00:00:03.090
        5004 | {5003}     | 00:00:02.040
(3 rows)`
	expanded := `-[ RECORD 1 ]----+---------------------------------------------------
pid              | 811
application_name | ledger
state            | idle in transaction
wait_event_type  | Client
wait_event       | ClientRead
query            | SELECT balance FROM accounts WHERE id = $1 FOR UPDATE
-[ RECORD 2 ]----+---------------------------------------------------
pid              | 812
application_name | ledger
state            | active
wait_event_type  | Lock
wait_event       | transactionid
query            | SELECT balance FROM accounts WHERE id = $1 FOR UPDATE
-[ RECORD 3 ]----+---------------------------------------------------
pid              | 813
application_name | ledger
state            | active
wait_event_type  | Lock
wait_event       | transactionid
query            | SELECT balance FROM accounts WHERE id = $1 FOR UPDATE
-[ RECORD 4 ]----+---------------------------------------------------
pid              | 814
application_name | ledger
state            | active
wait_event_type  | Lock
wait_event       | transactionid
query            | UPDATE accounts SET balance = balance - $1 WHERE id = $2`
	lockWaits := `+--------------------+-------------+--------------+----------------------------------------------------+--------------+----------------+
| locked_table       | waiting_pid | blocking_pid | waiting_query                                      | blocking_pid | blocking_query |
+--------------------+-------------+--------------+----------------------------------------------------+--------------+----------------+
| ` + "`shop`.`coupons`" + ` |         311 |          290 | UPDATE coupons SET used = used + 1 WHERE code = ?  |          290 | NULL           |
| ` + "`shop`.`coupons`" + ` |         312 |          290 | UPDATE coupons SET used = used + 1 WHERE code = ?  |          290 | NULL           |
| ` + "`shop`.`coupons`" + ` |         315 |          290 | UPDATE coupons SET used = used + 1 WHERE code = ?  |          290 | NULL           |
+--------------------+-------------+--------------+----------------------------------------------------+--------------+----------------+`
	processlist := `+-----+----------+-----------------+------+---------+------+----------+------+
| Id  | User     | Host            | db   | Command | Time | State    | Info |
+-----+----------+-----------------+------+---------+------+----------+------+
| 290 | checkout | 10.2.0.7:41000  | shop | Sleep   |    4 |          | NULL |
+-----+----------+-----------------+------+---------+------+----------+------+`
	trx := `*************************** 1. row ***************************
             trx_id: 998812
          trx_state: RUNNING
        trx_started: 2026-05-04 10:59:56
trx_mysql_thread_id: 290
1 row in set (0.00 sec)`
	psql := "psql -h stock-db.internal -U dba stock"
	mysql := "mysql -h shop-mysql -u admin -p -e 'SELECT * FROM sys.innodb_lock_waits'"
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"PostgreSQL: pg_blocking_pids names the idle holder", []evidence.CommandOutput{cmd(psql, activity("idle in transaction")), cmd(psql, blocking)},
			"stock-db", []string{"stock_levels", "session 5001 (application stock-api)", "idle in transaction", "inside the transaction", "3 sessions wait"}},
		{"PostgreSQL, expanded, without pg_blocking_pids: the one idle session", []evidence.CommandOutput{cmd("psql -h ledger-db -U dba ledger", expanded)},
			"ledger-db", []string{"accounts", "session 811", "FOR UPDATE"}},
		{"MySQL: sys.innodb_lock_waits behind a sleeping open transaction", []evidence.CommandOutput{cmd(mysql, lockWaits), cmd(mysql, processlist), cmd(mysql, trx)},
			"shop-mysql", []string{"coupons", "session 290 (user checkout)", "3 sessions wait"}},
		{"the holder is running a statement", []evidence.CommandOutput{cmd(psql, activity("active             ")), cmd(psql, blocking)}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectRowLockIdleHolder(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "transaction") {
				t.Errorf("first recommendation: %+v", recs)
			}
		})
	}
}
