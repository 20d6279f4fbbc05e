package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A volume filling with WAL that an inactive replication slot retains is
// read from the exporter's slot series or from pg_replication_slots as
// psql prints it, and names the failing consumer the slot is named after
// (or the change-data consumer among the failing workloads); an active
// slot, a slot retaining little, or a slot's position series are not.
func TestDetectSlotFilling(t *testing.T) {
	start := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: start, Start: start.Add(2 * time.Hour), End: start.Add(4 * time.Hour)}
	stop := start.Add(time.Hour)
	series := func(name string, labels evidence.Labels, f func(t time.Time) float64) MetricSet {
		l := evidence.Labels{"__name__": name}
		for k, v := range labels {
			l[k] = v
		}
		s := evidence.Series{Labels: l}
		for t := start; !t.After(w.End); t = t.Add(5 * time.Minute) {
			s.Points = append(s.Points, evidence.Point{T: t, V: f(t)})
		}
		return MetricSet{Name: name, Class: MetricSaturation, Series: []evidence.Series{s}}
	}
	slot := evidence.Labels{"namespace": "orders", "pod": "orders-db-0", "server": "orders-db:5432", "slot_name": "orders_cdc", "slot_type": "logical"}
	active := func(stops bool) func(time.Time) float64 {
		return func(t time.Time) float64 {
			if stops && !t.Before(stop) {
				return 0
			}
			return 1
		}
	}
	retained := func(t time.Time) float64 {
		if t.Before(stop) {
			return 3e5
		}
		return t.Sub(stop).Hours() * 7.2 * (1 << 30)
	}
	small := func(time.Time) float64 { return 3e5 }
	lsn := func(t time.Time) float64 { return 2.9e12 + t.Sub(start).Seconds()*2e6 }
	volume := []MetricSet{
		series("kubelet_volume_stats_used_bytes", evidence.Labels{"namespace": "orders", "persistentvolumeclaim": "data-orders-db-0"}, func(t time.Time) float64 { return 150 << 30 }),
		series("kubelet_volume_stats_capacity_bytes", evidence.Labels{"namespace": "orders", "persistentvolumeclaim": "data-orders-db-0"}, func(time.Time) float64 { return 200 << 30 }),
	}
	authFail := Finding{Kind: KindAuth, Subject: "orders-cdc", Summary: "orders-cdc logs authentication failure",
		Facts: map[string]string{"line": "org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"}}
	crash := Finding{Kind: KindCrashLoop, Subject: "orders-cdc", Summary: "pod orders/orders-cdc-0 in CrashLoopBackOff"}
	debezium := Finding{Kind: KindCrashLoop, Subject: "inventory-connect", Summary: "pod data/inventory-connect-0 in CrashLoopBackOff",
		Facts: map[string]string{"last_log": "io.debezium.DebeziumException: Couldn't obtain encoding for database inventory"}}
	unrelated := Finding{Kind: KindCrashLoop, Subject: "label-printer", Summary: "pod label-printer in CrashLoopBackOff"}
	psql := evidence.CommandOutput{Command: `kubectl exec -n data inventory-db-0 -c postgres -- psql -U postgres -c "select slot_name, active, pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)) as retained from pg_replication_slots;"`,
		Exec: true, Pod: "inventory-db-0", Namespace: "data",
		Lines: strings.Split(`      slot_name      | active | retained
---------------------+--------+----------
 debezium_inventory  | f      | 61 GB
 inventory_db_1_phys | t      | 312 kB
(2 rows)`, "\n")}
	for _, c := range []struct {
		name     string
		metrics  []MetricSet
		cmds     []evidence.CommandOutput
		found    []Finding
		subject  string
		consumer string
		want     []string
	}{
		{"exporter series, consumer named after the slot, refused for its credentials",
			append([]MetricSet{series("pg_replication_slots_active", slot, active(true)), series("pg_replication_slots_pg_wal_lsn_diff", slot, retained)}, volume...),
			nil, []Finding{unrelated, crash, authFail}, "orders-db", "orders-cdc",
			[]string{"replication slot orders_cdc is inactive since 06:00 UTC and retains 21.6 GiB of WAL", "data-orders-db-0 is 75% full", "its consumer orders-cdc is down: orders-cdc logs authentication failure", "SaslAuthenticationException"}},
		{"psql's pg_replication_slots, a Debezium consumer by its words",
			nil, []evidence.CommandOutput{psql}, []Finding{unrelated, debezium}, "inventory-db", "inventory-connect",
			[]string{"replication slot debezium_inventory is inactive and retains 61.0 GiB of WAL", "its consumer inventory-connect is down"}},
		{"no consumer found: the slot alone",
			[]MetricSet{series("pg_replication_slots_active", slot, active(true)), series("pg_replication_slots_pg_wal_lsn_diff", slot, retained)},
			nil, []Finding{unrelated}, "orders-db", "", []string{"replication slot orders_cdc is inactive"}},
		{"an active slot behind", []MetricSet{series("pg_replication_slots_active", slot, active(false)), series("pg_replication_slots_pg_wal_lsn_diff", slot, retained)},
			nil, []Finding{crash}, "", "", nil},
		{"an inactive slot retaining little", []MetricSet{series("pg_replication_slots_active", slot, active(true)), series("pg_replication_slots_pg_wal_lsn_diff", slot, small)},
			nil, []Finding{crash}, "", "", nil},
		{"a slot's position is not what it retains", []MetricSet{series("pg_replication_slot_slot_is_active", slot, active(true)), series("pg_replication_slot_slot_current_wal_lsn", slot, lsn)},
			nil, []Finding{crash}, "", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: c.metrics, Commands: c.cmds, Window: w}
			fs := detectWALRetained(ev, c.found)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != KindWALRetained || fs[0].Subject != c.subject || fs[0].fact("consumer") != c.consumer {
				t.Fatalf("findings %+v, want one on %s with consumer %q", fs, c.subject, c.consumer)
			}
			h := &Hypothesis{Kind: KindWALRetained, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := recommend(h, Scope{})
			if len(recs) < 2 || c.consumer != "" && !strings.Contains(recs[0].Action, c.consumer) {
				t.Errorf("recommendations %+v", recs)
			}
			if c.consumer != "" && !walRetained.related(h, &Finding{Kind: KindCrashLoop, Subject: c.consumer}) {
				t.Error("the consumer's crash is not related")
			}
		})
	}
}
