package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestReplicaDDL reads a replica lagging because its own applier runs a
// schema change replicated from the primary: MySQL's processlist of
// "system user" threads (one "altering table"), MariaDB's SHOW SLAVE STATUS
// in state "copy to tmp table", and names the change on the primary. A
// lag whose applier threads only wait, a PostgreSQL standby held by a
// client's query, is not this cause; and a MySQL lag is never described in
// PostgreSQL's words (WAL replay, recovery conflict) nor blamed on the
// applier's own "system user" session.
func TestReplicaDDL(t *testing.T) {
	status := func(lag, state string) string {
		return `*************************** 1. row ***************************
             Replica_IO_State: Waiting for source to send event
                  Source_Host: stock-db-primary
           Replica_IO_Running: Yes
          Replica_SQL_Running: Yes
        Seconds_Behind_Source: ` + lag + `
    Replica_SQL_Running_State: ` + state
	}
	processlist := `+----+-------------+------+----------------------------------------------+----------------------------------------------------------------------------------+
| ID | USER        | TIME | STATE                                        | INFO                                                                             |
+----+-------------+------+----------------------------------------------+----------------------------------------------------------------------------------+
| 11 | system user | 2188 | Waiting for source to send event             | NULL                                                                             |
| 13 | system user | 2217 | altering table                               | ALTER TABLE stock_movements ADD INDEX idx_sku_created (sku, created_at)          |
| 14 | system user | 2217 | Waiting for preceding transaction to commit  | NULL                                                                             |
+----+-------------+------+----------------------------------------------+----------------------------------------------------------------------------------+`
	idle := `+----+-------------+------+----------------------------------------------+------+
| ID | USER        | TIME | STATE                                        | INFO |
+----+-------------+------+----------------------------------------------+------+
| 11 | system user | 2188 | Waiting for source to send event             | NULL |
| 14 | system user | 2217 | Waiting for dependent transaction to commit  | NULL |
+----+-------------+------+----------------------------------------------+------+`
	mariadb := `*************************** 1. row ***************************
               Slave_IO_State: Waiting for master to send event
                  Master_Host: orders-mariadb-0
             Slave_IO_Running: Yes
            Slave_SQL_Running: Yes
        Seconds_Behind_Master: 1460
      Slave_SQL_Running_State: copy to tmp table`
	cmd := func(host, run string, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Host: host, Source: "session.txt:1", Lines: strings.Split(out, "\n")}
	}
	ddl := evidence.Change{Timestamp: win.Start.Add(-40 * 60e9), Kind: "infra", Service: "stock-db", Description: "ALTER TABLE stock_movements ADD INDEX idx_sku_created (sku, created_at), ALGORITHM=INPLACE, LOCK=NONE on stock-db-primary"}
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string // "" for no finding
		want    []string
	}{
		{"MySQL 8: the processlist shows the applier altering a table", []evidence.CommandOutput{
			cmd("stock-db-replica-1", "mysql -h stock-db-replica-1 -u dba -p -e 'SHOW REPLICA STATUS\\G'", status("2217", "Waiting for dependent transaction to commit")),
			cmd("stock-db-replica-1", "mysql -h stock-db-replica-1 -u dba -p -e \"SELECT ID, USER, TIME, STATE, INFO FROM information_schema.PROCESSLIST WHERE USER='system user'\"", processlist)},
			"stock-db-replica-1", []string{"ALTER TABLE stock_movements", "altering table", "single-threaded", "stale data", "the schema change: stock-db"}},
		{"MariaDB: the SQL thread copying to a temporary table", []evidence.CommandOutput{
			cmd("orders-mariadb-1", "mariadb -h orders-mariadb-1 -e 'SHOW SLAVE STATUS\\G'", mariadb)},
			"orders-mariadb-1", []string{"copy to tmp table", "applier is executing the DDL"}},
		{"the applier threads only wait: no DDL", []evidence.CommandOutput{
			cmd("stock-db-replica-1", "mysql -h stock-db-replica-1 -e 'SHOW REPLICA STATUS\\G'", status("900", "Waiting for dependent transaction to commit")),
			cmd("stock-db-replica-1", "mysql -h stock-db-replica-1 -e 'SHOW PROCESSLIST'", idle)},
			"", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Changes: []evidence.Change{ddl}, Window: win}
			f := onlyFinding(t, detectReplicaDDL(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "primary") {
				t.Errorf("first recommendation: %+v", recs)
			}
		})
	}
	// The lag itself (db_blocked) in MySQL's words, not blamed on the
	// applier's own session.
	ev := &Gathered{Commands: []evidence.CommandOutput{
		cmd("stock-db-replica-1", "mysql -h stock-db-replica-1 -e 'SHOW REPLICA STATUS\\G'", status("900", "Waiting for dependent transaction to commit")),
		cmd("stock-db-replica-1", "mysql -h stock-db-replica-1 -e 'SHOW PROCESSLIST'", idle)}, Window: win}
	fs := detectDBBlocked(ev, nil)
	f, ok := oneFinding(t, fs, true)
	if !ok {
		return
	}
	if b := f.fact("blocker"); b != "" {
		t.Errorf("the applier's own session blamed: %q", b)
	}
	h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
	d := describe(h, Scope{})
	for _, w := range []string{"WAL", "recovery conflict"} {
		if strings.Contains(d, w) {
			t.Errorf("a MySQL replica described with %q:\n%s", w, d)
		}
	}
	if !strings.Contains(d, "MySQL replica's applier") {
		t.Errorf("description: %s", d)
	}
	if recs := recommend(h, Scope{}); len(recs) == 0 || strings.Contains(recs[0].Action, "pg_cancel_backend") {
		t.Errorf("first recommendation: %+v", recs)
	}
}
