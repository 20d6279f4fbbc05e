package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestReplicaStopped reads a read replica whose replication stopped: MySQL
// 8's SHOW REPLICA STATUS\G (Replica_SQL_Running: No on a duplicate key),
// MariaDB's SHOW SLAVE STATUS with its I/O thread stopped, the server's
// own error log, and mysqld_exporter's running gauge falling to 0. The
// readers named in a ConfigMap and a writable replica are part of the
// answer; a replica whose threads run (lagging or not) is not this cause.
func TestReplicaStopped(t *testing.T) {
	status := func(sql, io, errno, errText, at string) string {
		return `*************************** 1. row ***************************
             Replica_IO_State: Waiting for source to send event
                  Source_Host: catalog-primary
           Replica_IO_Running: ` + io + `
          Replica_SQL_Running: ` + sql + `
               Last_SQL_Errno: ` + errno + `
               Last_SQL_Error: ` + errText + `
        Seconds_Behind_Source: NULL
     Last_SQL_Error_Timestamp: ` + at
	}
	coordinator := "Coordinator stopped because there were error(s) in the worker(s). The most recent failure being: Worker 1 failed executing transaction 'f1:8841' at source log mysql-bin.004211, end_log_pos 88213345. See error log and/or performance_schema.replication_applier_status_by_worker table for more details about this failure or others, if any."
	mariadb := `*************************** 1. row ***************************
               Slave_IO_State:
                  Master_Host: orders-db-0
             Slave_IO_Running: No
            Slave_SQL_Running: Yes
                Last_IO_Errno: 1236
                Last_IO_Error: Got fatal error 1236 from master when reading data from binary log: 'Could not find first log file name in binary log index file'
        Seconds_Behind_Master: NULL`
	readOnly := `+-------------+-------------------+
| @@read_only | @@super_read_only |
+-------------+-------------------+
|           0 |                 0 |
+-------------+-------------------+`
	cmd := func(run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Source: "session.txt:1", Lines: strings.Split(out, "\n")}
	}
	configmap := cmd("kubectl get configmap shop-web -n shop -o yaml | grep DB_", "  DB_READ_HOST: catalog-replica-2.db.internal\n  DB_WRITE_HOST: catalog-primary.db.internal")
	mysqlLog := `2026-03-14T10:02:17.331842Z 14 [ERROR] [MY-010584] [Repl] Replica SQL for channel '': Worker 1 failed executing transaction 'f1:8841' at source log mysql-bin.004211, end_log_pos 88213345; Could not execute Write_rows event on table catalog.prices; Duplicate entry '88123-EUR' for key 'prices.uq_product_currency', Error_code: 1062; handler error HA_ERR_FOUND_DUPP_KEY; the event's source log mysql-bin.004211, end_log_pos 88213345, Error_code: MY-001062`
	mariadbLog := `2026-03-14 10:02:17 14 [ERROR] Slave SQL: Could not execute Delete_rows_v1 event on table shop.carts; Can't find record in 'carts', Error_code: 1032; handler error HA_ERR_KEY_NOT_FOUND; the event's master log mysql-bin.000212, end_log_pos 4412, Gtid 0-1-8812, Internal MariaDB error code: 1032`
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		logs    []LogSet
		subject string // "" for none
		want    []string
		errno   string
	}{
		{"MySQL 8: SQL thread stopped on a duplicate key, writable, one reader", []evidence.CommandOutput{
			configmap,
			cmd("mysql -h catalog-replica-2.db.internal -u ops -p -e 'SHOW REPLICA STATUS\\G'", status("No", "Yes", "1062", coordinator, "260314 10:02:17")),
			cmd("mysql -h catalog-replica-2.db.internal -u ops -p -e 'SELECT @@read_only, @@super_read_only'", readOnly)}, nil,
			"catalog-replica-2", []string{"stopped replicating", "error 1062", "Worker 1 failed executing transaction", "(shop-web)", "written to directly", "accepts writes"}, "1062"},
		{"MySQL 8 error log only", nil, []LogSet{logSet("catalog-replica-2.error", true, mysqlLog)},
			"catalog-replica-2", []string{"error 1062", "Duplicate entry '88123-EUR'"}, "1062"},
		{"MariaDB error log: a missing row", nil, []LogSet{logSet("orders-db-1.err", true, mariadbLog)},
			"orders-db-1", []string{"error 1032", "Can't find record in 'carts'"}, "1032"},
		{"MariaDB: I/O thread stopped on a purged binary log", []evidence.CommandOutput{
			cmd("mariadb -h orders-db-1 -e 'SHOW SLAVE STATUS\\G'", mariadb)}, nil,
			"orders-db-1", []string{"I/O (receiver) thread", "error 1236"}, "1236"},
		{"running and lagging: not stopped", []evidence.CommandOutput{
			cmd("mysql -h catalog-replica-2 -e 'SHOW REPLICA STATUS\\G'", status("Yes", "Yes", "0", "", ""))}, nil,
			"", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Logs: c.logs, Window: win}
			f := onlyFinding(t, detectReplicaStopped(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("errno") != c.errno || f.fact("why") == "" {
				t.Errorf("errno %q why %q", f.fact("errno"), f.fact("why"))
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) < 2 || !strings.Contains(recs[1].Action, "START REPLICA") {
				t.Errorf("recommendations: %+v", recs)
			}
		})
	}
}

// TestReplicaStoppedMetrics reads mysqld_exporter's SQL-thread gauge
// falling to 0 and staying there; a gauge back at 1 is no stop.
func TestReplicaStoppedMetrics(t *testing.T) {
	series := func(vals ...float64) []MetricSet {
		s := evidence.Series{Labels: evidence.Labels{"instance": "catalog-replica-2:9104"}}
		for i, v := range vals {
			s.Points = append(s.Points, evidence.Point{T: win.Start.Add(time.Duration(i) * time.Minute), V: v})
		}
		return []MetricSet{{Name: "mysql_slave_status_slave_sql_running", Series: []evidence.Series{s}}}
	}
	fs := replicaStoppedMetrics(series(1, 1, 1, 0, 0, 0), win)
	if len(fs) != 1 || fs[0].Subject != "catalog-replica-2" || !fs[0].Time.Equal(win.Start.Add(3*time.Minute)) {
		t.Fatalf("stopped: %+v", fs)
	}
	if fs := replicaStoppedMetrics(series(1, 0, 0, 1, 1), win); len(fs) != 0 {
		t.Errorf("restarted: %+v", fs)
	}
}

// TestStatusTime places MySQL's two-digit-year timestamps on the
// investigation's clock.
func TestStatusTime(t *testing.T) {
	now := time.Date(2026, 11, 21, 14, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		in   time.Time
		want time.Time
	}{
		{time.Date(2026, 11, 21, 11, 2, 17, 0, time.UTC), time.Date(2026, 11, 21, 11, 2, 17, 0, time.UTC)},
		{time.Date(2025, 11, 21, 11, 2, 17, 0, time.UTC), time.Date(2026, 11, 21, 11, 2, 17, 0, time.UTC)},
		{time.Date(2027, 11, 21, 16, 0, 0, 0, time.UTC), time.Date(2025, 11, 21, 16, 0, 0, 0, time.UTC)},
	} {
		if got := statusTime(c.in, now); !got.Equal(c.want) {
			t.Errorf("statusTime(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
