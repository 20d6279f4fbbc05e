package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestBulkWriteLocks reads writers waiting for the row locks of one long
// bulk write from MySQL's lock views: sys.innodb_lock_waits (boxed and
// \G vertical), SHOW ENGINE INNODB STATUS naming the blocking thread's
// client and its row locks, EXPLAIN of the statement and SHOW INDEX of its
// table. A short update of one row by its key blocking two writers is a
// hot row, not this cause.
func TestBulkWriteLocks(t *testing.T) {
	cmd := func(run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Source: "session.txt:1", Lines: strings.Split(out, "\n")}
	}
	waits := func(q, age string) string {
		return `+----------+-----------------------+-------------+---------------------------------------------+--------------+--------------------------------------------------------+------------------+
| wait_age | locked_table          | waiting_pid | waiting_query                               | blocking_pid | blocking_query                                         | blocking_trx_age |
+----------+-----------------------+-------------+---------------------------------------------+--------------+--------------------------------------------------------+------------------+
| 00:00:31 | ` + "`crm`.`events`" + `      |        7001 | INSERT INTO events (kind, at) VALUES (?, ?) |         6500 | ` + q + ` | ` + age + `         |
| 00:00:12 | ` + "`crm`.`events`" + `      |        7009 | INSERT INTO events (kind, at) VALUES (?, ?) |         6500 | ` + q + ` | ` + age + `         |
+----------+-----------------------+-------------+---------------------------------------------+--------------+--------------------------------------------------------+------------------+`
	}
	vertical := `*************************** 1. row ***************************
                wait_age: 00:00:44
            locked_table: ` + "`crm`.`events`" + `
             waiting_pid: 7001
           waiting_query: UPDATE events SET seen = 1 WHERE id = 991
            blocking_pid: 6500
          blocking_query: UPDATE events SET archived = 1 WHERE at < '2026-01-01'
        blocking_trx_age: 00:21:40
*************************** 2. row ***************************
                wait_age: 00:00:10
            locked_table: ` + "`crm`.`events`" + `
             waiting_pid: 7004
           waiting_query: UPDATE events SET seen = 1 WHERE id = 992
            blocking_pid: 6500
          blocking_query: UPDATE events SET archived = 1 WHERE at < '2026-01-01'
        blocking_trx_age: 00:21:40
2 rows in set (0.01 sec)`
	status := `---TRANSACTION 5120001, ACTIVE 1300 sec fetching rows
mysql tables in use 1, locked 1
90211 lock struct(s), heap size 10612344, 9120443 row lock(s), undo log entries 402211
MySQL thread id 6500, OS thread handle 1398201, query id 77120 10.1.7.9 crm_cleanup updating
DELETE FROM events WHERE at < NOW() - INTERVAL 90 DAY`
	explain := `+----+-------------+--------+------------+------+---------------+------+---------+------+---------+----------+-------------+
| id | select_type | table  | partitions | type | possible_keys | key  | key_len | ref  | rows    | filtered | Extra       |
+----+-------------+--------+------------+------+---------------+------+---------+------+---------+----------+-------------+
|  1 | DELETE      | events | NULL       | ALL  | NULL          | NULL | NULL    | NULL | 9120443 |   100.00 | Using where |
+----+-------------+--------+------------+------+---------------+------+---------+------+---------+----------+-------------+`
	index := `+--------+------------+----------+--------------+-------------+
| Table  | Non_unique | Key_name | Seq_in_index | Column_name |
+--------+------------+----------+--------------+-------------+
| events |          0 | PRIMARY  |            1 | id          |
+--------+------------+----------+--------------+-------------+`
	mysql := "mysql -h crm-db.internal -u dba -p -e 'SELECT * FROM sys.innodb_lock_waits'"
	del := "DELETE FROM events WHERE at < NOW() - INTERVAL 90 DAY    "
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"a purge without an index: lock waits, InnoDB status, EXPLAIN, SHOW INDEX", []evidence.CommandOutput{
			cmd(mysql, waits(del, "00:21:40")), cmd("mysql -h crm-db.internal -e 'SHOW ENGINE INNODB STATUS\\G'", status),
			cmd("mysql -h crm-db.internal crm -e 'EXPLAIN DELETE FROM events WHERE at < NOW() - INTERVAL 90 DAY'", explain),
			cmd("mysql -h crm-db.internal crm -e 'SHOW INDEX FROM events'", index)},
			"crm-db", []string{"DELETE FROM events", "user crm_cleanup", "9120443", "no index on at", "full table scan", "2 other writers"}},
		{"vertical lock waits of a long UPDATE", []evidence.CommandOutput{cmd(mysql, vertical)},
			"crm-db", []string{"UPDATE events SET archived = 1", "open 00:21:40", "2 other writers"}},
		{"one row's short update", []evidence.CommandOutput{cmd(mysql, waits("UPDATE events SET n = n + 1 WHERE id = 5          ", "00:00:02"))}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectBulkWriteLocks(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "batches") {
				t.Errorf("first recommendation: %+v", recs)
			}
		})
	}
}
