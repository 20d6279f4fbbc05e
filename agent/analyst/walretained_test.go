package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestWALRetained follows a database's disk-full errors to what grew:
// the transaction log a replication slot retains, from RDS's CloudWatch
// metrics, postgres_exporter's slot lag, psql's pg_replication_slots and
// MySQL's binlog usage, with the change or look-up that says the slot's
// consumer is gone. A full disk with a WAL of the usual size, or on a
// service that is no database, is not this cause.
func TestWALRetained(t *testing.T) {
	gib := float64(1 << 30)
	series := func(name string, labels evidence.Labels, vals ...float64) MetricSet {
		s := evidence.Series{Labels: labels}
		for i, v := range vals {
			s.Points = append(s.Points, evidence.Point{T: win.Start.Add(time.Duration(i) * 15 * time.Minute), V: v})
		}
		return MetricSet{Name: name, Class: MetricSaturation, Series: []evidence.Series{s}}
	}
	rds := evidence.Labels{"DBInstanceIdentifier": "events-db"}
	pgFull := Finding{Kind: KindDiskFull, Subject: "postgresql", Time: win.Start.Add(20 * time.Minute), Weight: 0.9,
		Facts: map[string]string{"line": `psycopg2.errors.DiskFull: could not extend file "base/16401/2251803.42": No space left on device`}}
	goFull := Finding{Kind: KindDiskFull, Subject: "ledger-api", Time: win.Start.Add(20 * time.Minute), Weight: 0.9,
		Facts: map[string]string{"line": `level=error msg="insert entry" err="pq: could not write to file \"pg_wal/xlogtemp.412\": No space left on device"`}}
	mysqlFull := Finding{Kind: KindDiskFull, Subject: "mysql", Time: win.Start.Add(20 * time.Minute), Weight: 0.9,
		Facts: map[string]string{"line": `2026-03-14T10:02:11.000000Z 12 [ERROR] [MY-011072] [Server] Binlog has an error: disk full writing './binlog.000912' (Errcode: 28 - No space left on device)`}}
	appFull := Finding{Kind: KindDiskFull, Subject: "fluent-bit", Time: win.Start.Add(20 * time.Minute), Weight: 0.9,
		Facts: map[string]string{"line": `[error] [output:file:file.0] could not write to /buffer/tail.0: No space left on device`}}
	slots := evidence.CommandOutput{Run: `psql -h ledger-db -U postgres -c "select ..."`, Command: `psql -h ledger-db -U postgres -c "select slot_name, slot_type, active, pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)) as retained from pg_replication_slots"`,
		Lines: strings.Split(`   slot_name    | slot_type | active | retained
----------------+-----------+--------+----------
 debezium_orders | logical   | f      | 212 GB
 replica_1      | physical  | t      | 16 MB
(2 rows)`, "\n")}
	cases := []struct {
		name    string
		found   []Finding
		metrics []MetricSet
		cmds    []evidence.CommandOutput
		earlier []evidence.Change
		subject string // "" for no finding
		want    []string
	}{
		{"RDS metrics, a DMS task destroyed three days before",
			[]Finding{pgFull},
			[]MetricSet{series("AWS/RDS/TransactionLogsDiskUsage", rds, 140*gib, 150*gib, 151*gib), series("AWS/RDS/OldestReplicationSlotLag", rds, 139*gib, 150*gib)},
			nil,
			[]evidence.Change{{Timestamp: win.Start.Add(-72 * time.Hour), Kind: "infra", Service: "events-cdc", Description: "terraform destroy module.dms_events_cdc (DMS task events-cdc-to-redshift): pipeline retired"}},
			"events-db", []string{"WAL", "TransactionLogsDiskUsage reached 151.0 GiB", "OldestReplicationSlotLag", "Its consumer is gone", "terraform destroy"}},
		{"psql's pg_replication_slots: an inactive Debezium slot, its connector deleted",
			[]Finding{goFull}, nil, []evidence.CommandOutput{slots},
			[]evidence.Change{{Timestamp: win.Start.Add(-48 * time.Hour), Kind: "config", Service: "kafka-connect", Description: "Deleted Debezium connector orders-cdc"}},
			"ledger-db", []string{"debezium_orders is inactive", "212 GB", "Deleted Debezium connector"}},
		{"postgres_exporter's slot lag, no change known",
			[]Finding{pgFull},
			[]MetricSet{series("pg_replication_slots_pg_wal_lsn_diff", evidence.Labels{"slot_name": "airbyte_slot", "instance": "pg-main:9187"}, 80*gib, 96*gib)},
			nil, nil, "pg-main", []string{"pg_replication_slots_pg_wal_lsn_diff reached 96.0 GiB", "consumer no longer reads"}},
		{"MySQL binary logs kept for a replica that is gone",
			[]Finding{mysqlFull},
			[]MetricSet{series("AWS/RDS/BinLogDiskUsage", evidence.Labels{"DBInstanceIdentifier": "orders-mysql"}, 90*gib, 98*gib)},
			nil,
			[]evidence.Change{{Timestamp: win.Start.Add(-24 * time.Hour), Kind: "infra", Description: "read replica orders-mysql-replica-1 decommissioned"}},
			"orders-mysql", []string{"BinLogDiskUsage", "decommissioned"}},
		{"a WAL of its usual size: the disk filled with something else",
			[]Finding{pgFull},
			[]MetricSet{series("AWS/RDS/TransactionLogsDiskUsage", rds, 1*gib, 1.2*gib)},
			nil, nil, "", nil},
		{"a full buffer of a log shipper is no database's WAL",
			[]Finding{appFull},
			[]MetricSet{series("AWS/RDS/TransactionLogsDiskUsage", rds, 140*gib, 150*gib)},
			nil, nil, "", nil},
		{"no disk full at all: a growing slot alone is not an incident here",
			nil,
			[]MetricSet{series("AWS/RDS/OldestReplicationSlotLag", rds, 139*gib, 150*gib)},
			nil, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: c.metrics, Commands: c.cmds, Earlier: c.earlier, Window: win}
			fs := detectWALRetained(ev, c.found)
			f, ok := oneFinding(t, fs, c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject {
				t.Errorf("subject %q, want %q", f.Subject, c.subject)
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, append(c.want, "ran out of storage", "no space left on device")...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "replication slot") && !strings.Contains(recs[0].Action, "binary logs") {
				t.Errorf("first recommendation: %+v", recs)
			}
		})
	}
}
