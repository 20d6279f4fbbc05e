package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestTableLockQueue reads sessions queued behind a schema change's table
// lock from what SQL clients print: PostgreSQL's pg_stat_activity and
// pg_locks (aligned and expanded formats) with a plain CREATE INDEX
// holding a ShareLock while writes wait, an ALTER TABLE waiting for its
// AccessExclusiveLock behind a session idle in transaction; MySQL's
// processlist with "Waiting for table metadata lock", the metadata_locks
// and innodb_trx tables naming the open transaction ahead of the DDL.
// Row-lock waits without a DDL, and an index built CONCURRENTLY, are not
// this cause.
func TestTableLockQueue(t *testing.T) {
	cmd := func(run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Source: "session.txt:1", Lines: strings.Split(out, "\n")}
	}
	pgActivity := func(ddl string) string {
		return ` pid  | usename  | application_name | client_addr |        state        | wait_event_type | wait_event |          xact_start           | query
------+----------+------------------+-------------+---------------------+-----------------+------------+-------------------------------+------------------------------------------------
 4410 | deployer | alembic          | 10.1.4.7    | active              | IO              | DataFileRead | 2026-05-04 10:02:11.12+00   | ` + ddl + `
 4521 | app      | api              | 10.1.2.3    | active              | Lock            | relation   | 2026-05-04 10:30:01.4+00      | INSERT INTO invoices (account_id, total) VALUES ($1, $2)
 4522 | app      | api              | 10.1.2.4    | active              | Lock            | relation   | 2026-05-04 10:30:02.9+00      | UPDATE invoices SET status = $1 WHERE id = $2
 4530 | app      | api              | 10.1.2.4    | active              |                 |            | 2026-05-04 10:30:03.1+00      | SELECT id, total FROM invoices WHERE account_id = $1
(4 rows)`
	}
	pgLocks := `  pid  |       mode       | granted
-------+------------------+---------
  4410 | ShareLock        | t
  4530 | AccessShareLock  | t
  4521 | RowExclusiveLock | f
  4522 | RowExclusiveLock | f
(4 rows)`
	// psql's expanded format: an ALTER TABLE at the head of the queue,
	// behind a session idle in transaction.
	pgExpanded := `-[ RECORD 1 ]----+------------------------------------------------------------
pid              | 9001
usename          | analyst
application_name | psql
client_addr      | 10.9.0.12
state            | idle in transaction
wait_event_type  | Client
wait_event       | ClientRead
xact_start       | 2026-05-04 07:12:40.5+00
query            | SELECT count(*) FROM accounts
-[ RECORD 2 ]----+------------------------------------------------------------
pid              | 9120
usename          | migrator
application_name | flyway
client_addr      | 10.1.4.9
state            | active
wait_event_type  | Lock
wait_event       | relation
xact_start       | 2026-05-04 10:00:03.2+00
query            | ALTER TABLE accounts ADD COLUMN tier text
-[ RECORD 3 ]----+------------------------------------------------------------
pid              | 9133
usename          | app
application_name | accounts-api
client_addr      | 10.1.2.8
state            | active
wait_event_type  | Lock
wait_event       | relation
xact_start       | 2026-05-04 10:20:11.7+00
query            | SELECT * FROM accounts WHERE id = $1
-[ RECORD 4 ]----+------------------------------------------------------------
pid              | 9134
usename          | app
application_name | accounts-api
client_addr      | 10.1.2.9
state            | active
wait_event_type  | Lock
wait_event       | relation
xact_start       | 2026-05-04 10:20:12.1+00
query            | UPDATE accounts SET last_login = now() WHERE id = $1`
	processlist := `+------+-----------+------------------+------+---------+-------+---------------------------------+---------------------------------------------------+
| Id   | User      | Host             | db   | Command | Time  | State                           | Info                                              |
+------+-----------+------------------+------+---------+-------+---------------------------------+---------------------------------------------------+
|  812 | bi_reader | 10.3.0.44:50122  | shop | Sleep   | 10412 |                                 | NULL                                              |
| 9001 | migrate   | 10.2.1.5:40210   | shop | Query   |   611 | Waiting for table metadata lock | ALTER TABLE orders ADD INDEX idx_status (status)  |
| 9040 | shop_app  | 10.2.3.8:51100   | shop | Query   |    12 | Waiting for table metadata lock | SELECT id, total FROM orders WHERE id = 77        |
| 9044 | shop_app  | 10.2.3.9:51188   | shop | Query   |     9 | Waiting for table metadata lock | UPDATE orders SET status = 'paid' WHERE id = 78   |
| 9050 | root      | localhost        | NULL | Query   |     0 | init                            | SHOW FULL PROCESSLIST                             |
+------+-----------+------------------+------+---------+-------+---------------------------------+---------------------------------------------------+`
	innodbTrx := `*************************** 1. row ***************************
                    trx_id: 421937118800001
                 trx_state: RUNNING
               trx_started: 2026-05-04 07:10:05
       trx_mysql_thread_id: 812
                 trx_query: NULL
1 row in set (0.00 sec)`
	mdl := `+-------------+-------------------+---------------+-------------+----------------+
| OBJECT_NAME | LOCK_TYPE         | LOCK_DURATION | LOCK_STATUS | PROCESSLIST_ID |
+-------------+-------------------+---------------+-------------+----------------+
| orders      | SHARED_READ       | TRANSACTION   | GRANTED     |            812 |
| orders      | EXCLUSIVE         | TRANSACTION   | PENDING     |           9001 |
| orders      | SHARED_READ       | TRANSACTION   | PENDING     |           9040 |
| orders      | SHARED_WRITE      | TRANSACTION   | PENDING     |           9044 |
+-------------+-------------------+---------------+-------------+----------------+`
	rowLocks := ` pid  | usename | state  | wait_event_type | wait_event    | query
------+---------+--------+-----------------+---------------+--------------------------------------------
 7001 | app     | active | Lock            | transactionid | UPDATE counters SET n = n + 1 WHERE id = 1
 7002 | app     | active | Lock            | transactionid | UPDATE counters SET n = n + 1 WHERE id = 1
 7003 | app     | active |                 |               | UPDATE counters SET n = n + 1 WHERE id = 1
(3 rows)`
	psql := "psql -h billing-db.internal -U postgres billing -c 'SELECT ... FROM pg_stat_activity'"
	mysql := "mysql -h shop-mysql.abc123.eu-west-1.rds.amazonaws.com -u admin -p -e 'SHOW FULL PROCESSLIST'"
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
		rec     string
	}{
		{"PostgreSQL: a plain CREATE INDEX holds a ShareLock, writes wait", []evidence.CommandOutput{
			cmd(psql, pgActivity("CREATE INDEX invoices_account_idx ON invoices (account_id)")), cmd(psql, pgLocks)},
			"billing-db", []string{"CREATE INDEX", "ShareLock", "without CONCURRENTLY", "while reads go on", "session 4410 (user deployer, application alembic"}, "CONCURRENTLY"},
		{"PostgreSQL, expanded: an ALTER TABLE queued behind an idle transaction", []evidence.CommandOutput{
			cmd("psql -h accounts-db -U postgres accounts", pgExpanded)},
			"accounts-db", []string{"table lock queue", "ALTER TABLE accounts", "session 9001 (user analyst", "idle (no statement running", "open since 2026-05-04T07:12:40Z"}, "pg_terminate_backend"},
		{"MySQL: the DDL waits for the metadata lock behind a sleeping transaction", []evidence.CommandOutput{
			cmd(mysql, processlist), cmd(mysql, innodbTrx), cmd(mysql, mdl)},
			"shop-mysql", []string{"metadata lock", "session 812 (user bi_reader", "open since 2026-05-04T07:10:05Z", "uncommitted"}, "KILL"},
		{"MySQL: the processlist and innodb_trx alone", []evidence.CommandOutput{
			cmd(mysql, processlist), cmd(mysql, innodbTrx)},
			"shop-mysql", []string{"metadata lock", "session 812", "ALTER TABLE orders"}, "KILL"},
		{"row-lock waits without a DDL", []evidence.CommandOutput{cmd(psql, rowLocks)}, "", nil, ""},
		{"an index built CONCURRENTLY", []evidence.CommandOutput{
			cmd(psql, pgActivity("CREATE INDEX CONCURRENTLY invoices_account_idx ON invoices (account_id)"))}, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectTableLockQueue(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, c.rec) {
				t.Errorf("first recommendation: %+v", recs)
			}
		})
	}
}
