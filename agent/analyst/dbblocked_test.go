package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// tmpl is one mined template of a real log line, first seen at first and
// still seen at last.
func tmpl(line string, n int, first, last time.Time) analysis.LogTemplate {
	return analysis.LogTemplate{Template: line, Example: line, Count: n, Incident: n, FirstSeen: first, FirstIncident: first, LastSeen: last}
}

// TestDBBlocked: a database whose sessions wait on row locks, or whose
// replica's replay stalls, behind a long transaction is the root; the
// client holding the transaction is named, the callers are its victims.
func TestDBBlocked(t *testing.T) {
	w := testWindow()
	onset := w.Start.Add(10 * time.Minute)
	step := stepAt(onset)
	grow := func(at time.Time) float64 { // replay lag growing since the onset
		if at.Before(onset) {
			return 0.2
		}
		return at.Sub(onset).Seconds()
	}
	mysqlInst := evidence.Labels{"instance": "inventory-db-01:9104", "job": "mysqld"}
	pgInst := evidence.Labels{"instance": "orders-db-replica-1:9187", "job": "postgres", "server": "orders-db-replica-1:5432"}
	batch := LogSet{Source: "batch-02/stock-reconcile.log", Subject: "batch-02", Origin: SrcLogs, Host: true, Templates: []analysis.LogTemplate{
		tmpl("2026-05-01 11:08:00,112 INFO stock_reconcile: connected to inventory-db-01.shop.internal:3306 db=inventory user=reconcile autocommit=False isolation=REPEATABLE-READ", 1, onset.Add(-2*time.Minute), onset.Add(-2*time.Minute)),
		tmpl("2026-05-01 11:08:02,112 INFO stock_reconcile: begin transaction; SELECT ... FROM stock WHERE warehouse_id='ams-1' FOR UPDATE (412388 rows)", 1, onset.Add(-time.Minute), onset.Add(-time.Minute)),
		tmpl("2026-05-01 11:14:58,112 INFO stock_reconcile: reconciled 19441/412388 rows (ams-1), corrections so far 525, commit deferred until end of run", 12, onset.Add(5*time.Minute), w.End.Add(-3*time.Minute)),
	}}
	replicaLog := LogSet{Source: "orders-db-replica-1/postgresql.log", Subject: "orders-db-replica-1", Origin: SrcLogs, Host: true, Templates: []analysis.LogTemplate{
		tmpl("2026-05-01 11:10:13.004 UTC [614] LOG:  recovery still waiting after 1000.412 ms: recovery conflict on snapshot", 1, onset, onset),
	}}
	pgLockLog := LogSet{Source: "pg-main-01/postgresql.log", Subject: "pg-main-01", Origin: SrcLogs, Host: true, Templates: []analysis.LogTemplate{
		tmpl("2026-05-01 11:10:01.120 UTC [48211] app@shop LOG:  process 48211 still waiting for ShareLock on transaction 91822631 after 1000.052 ms", 14, onset, w.End),
	}}
	victim := Finding{Kind: KindLatency, Subject: "inventory-service", Source: SrcMetrics, Time: onset, Weight: 0.8}
	cases := []struct {
		name      string
		metrics   []MetricSet
		logs      []LogSet
		instance  string
		condition string
		blocker   string // part of the blocker's description
		victim    string
	}{
		{name: "row-lock waits behind a batch's FOR UPDATE transaction",
			metrics: []MetricSet{
				{Name: "mysql_global_status_innodb_row_lock_current_waits", Class: MetricSaturation, Series: []evidence.Series{wseries(w, mysqlInst, step(0, 22))}},
				{Name: "mysql_global_status_innodb_row_lock_time_avg", Class: MetricSaturation, Series: []evidence.Series{wseries(w, mysqlInst, step(2, 1353))}},
			},
			logs: []LogSet{batch}, instance: "inventory-db-01", condition: "lock", blocker: "stock-reconcile (on batch-02)", victim: "inventory-service"},
		{name: "replica replay stalled by a long report query",
			metrics: []MetricSet{
				{Name: "pg_replication_lag_seconds", Class: MetricSaturation, Unit: "s", Series: []evidence.Series{wseries(w, pgInst, grow)}},
				{Name: "pg_stat_activity_max_tx_duration", Class: MetricLatency, Unit: "s", Series: []evidence.Series{
					wseries(w, evidence.Labels{"instance": "orders-db-replica-1:9187", "usename": "bi_reader", "application_name": "Metabase v0.49.3"}, func(at time.Time) float64 { return at.Sub(w.BaselineStart).Seconds() }),
					wseries(w, evidence.Labels{"instance": "orders-db-replica-1:9187", "usename": "tracking_ro", "application_name": "order-tracking"}, step(0.1, 0.2)),
				}},
			},
			logs: []LogSet{replicaLog}, instance: "orders-db-replica-1", condition: "replication", blocker: "usename=bi_reader"},
		{name: "the database's own log of lock waits",
			logs: []LogSet{pgLockLog}, instance: "pg-main-01", condition: "lock"},
		{name: "a few lock waits are normal",
			metrics: []MetricSet{{Name: "mysql_global_status_innodb_row_lock_current_waits", Series: []evidence.Series{wseries(w, mysqlInst, step(0, 1))}}}},
		{name: "replication a few seconds behind is normal",
			metrics: []MetricSet{{Name: "pg_replication_lag_seconds", Series: []evidence.Series{wseries(w, pgInst, step(0.2, 4))}}}},
		{name: "a consumer's lag is not replication",
			metrics: []MetricSet{{Name: "kafka_consumergroup_lag", Series: []evidence.Series{wseries(w, evidence.Labels{"consumergroup": "email"}, step(10, 30000))}}}},
		{name: "one recovery conflict line alone",
			logs: []LogSet{replicaLog}},
	}
	for _, c := range cases {
		fs := detectDBBlocked(&Gathered{Metrics: c.metrics, Logs: c.logs, Window: w}, []Finding{victim})
		if c.instance == "" {
			if len(fs) != 0 {
				t.Errorf("%s: %d findings, want none: %+v", c.name, len(fs), fs[0])
			}
			continue
		}
		if len(fs) != 1 {
			t.Errorf("%s: %d findings, want 1", c.name, len(fs))
			continue
		}
		f := fs[0]
		if f.Subject != c.instance || f.fact("condition") != c.condition {
			t.Errorf("%s: subject %q condition %q, want %q %q", c.name, f.Subject, f.fact("condition"), c.instance, c.condition)
		}
		if c.blocker != "" && !strings.Contains(f.fact("blocker"), c.blocker) {
			t.Errorf("%s: blocker %q, want it to name %q", c.name, f.fact("blocker"), c.blocker)
		}
		if c.victim != "" && !containsStr(f.Related, c.victim) {
			t.Errorf("%s: related %v, want the victim %s", c.name, f.Related, c.victim)
		}
		h := &Hypothesis{Kind: KindDBBlocked, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
		d := dbBlocked.describe(h, Scope{})
		want := map[string][]string{"lock": {"row-lock waits", c.instance}, "replication": {"replication lag", "recovery conflict", c.instance}}[c.condition]
		for _, x := range append(want, c.blocker) {
			if !strings.Contains(d, x) {
				t.Errorf("%s: description %q does not say %q", c.name, d, x)
			}
		}
	}
}

// TestDBBlockedUnexplained: a replica's lag with nothing saying what holds
// replay back points at the database, with less weight, and says so.
func TestDBBlockedUnexplained(t *testing.T) {
	w := testWindow()
	onset := w.Start.Add(10 * time.Minute)
	lag := func(at time.Time) float64 {
		if at.Before(onset) {
			return 0.3
		}
		return at.Sub(onset).Seconds()
	}
	sets := []MetricSet{{Name: "mysql_slave_status_seconds_behind_master", Series: []evidence.Series{wseries(w, evidence.Labels{"instance": "orders-replica-2:9104"}, lag)}}}
	fs := detectDBBlocked(&Gathered{Metrics: sets, Window: w}, nil)
	if len(fs) != 1 || fs[0].Subject != "orders-replica-2" || fs[0].Weight > 0.6 {
		t.Fatalf("findings %+v, want one weak finding on orders-replica-2", fs)
	}
	h := &Hypothesis{Kind: KindDBBlocked, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
	if d := dbBlocked.describe(h, Scope{}); !strings.Contains(d, "replication lag") || !strings.Contains(d, "not in the evidence") {
		t.Errorf("description %q", d)
	}
}

func TestClassifyBlockingMetrics(t *testing.T) {
	for _, n := range []string{"mysql_global_status_innodb_row_lock_current_waits", "mysql_global_status_innodb_row_lock_time_avg", "mysql_slave_status_seconds_behind_master", "pg_replication_lag_seconds"} {
		if c, _ := ClassifyMetric(n); c != MetricSaturation {
			t.Errorf("ClassifyMetric(%q) = %q, want %q", n, c, MetricSaturation)
		}
	}
}

// TestDBBlockedStatedBySQLClient: with no lag series, psql run in the
// replica's pod (kubectl exec in a transcript) states the replay lag, the
// session holding replay back and a setting that lets it; the replica's
// own log line, said once, is then its line; a client whose change of the
// month before moved its reads to the replica's Service reads stale data
// from it. Without the client's output there is nothing to find.
func TestDBBlockedStatedBySQLClient(t *testing.T) {
	w := testWindow()
	exec := func(run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl exec -it profiles-db-1 -n profiles -- bash", Exec: true, Namespace: "profiles", Pod: "profiles-db-1",
			Run: run, ExitCode: -1, Lines: strings.Split(out, "\n"), Source: "dba-session.txt:667"}
	}
	cmds := []evidence.CommandOutput{
		exec(`psql -U postgres -d profiles -c "select pg_is_in_recovery(), now() - pg_last_xact_replay_timestamp() as replay_lag;"`,
			` pg_is_in_recovery |   replay_lag    
-------------------+-----------------
 t                 | 00:37:49.118204
(1 row)
`),
		exec(`psql -U postgres -d profiles -c "select pid, usename, application_name, now() - xact_start as xact_age from pg_stat_activity where state <> 'idle';"`,
			`  pid  |  usename  |   application_name   |    xact_age     
-------+-----------+----------------------+-----------------
 48211 | reporting | growth-weekly-report | 00:39:52.603117
 50377 | postgres  | psql                 | 00:00:00.000412
(2 rows)
`),
		exec(`psql -U postgres -c "show max_standby_streaming_delay;"`, ` max_standby_streaming_delay 
-----------------------------
 -1
(1 row)
`),
	}
	stallAt := w.End.Add(-(37*time.Minute + 49*time.Second))
	dbLog := LogSet{Source: "profiles-db-1", Subject: "profiles-db", Namespace: "profiles", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		tmpl("2026-05-01 11:22:12.902 UTC [61] LOG:  recovery still waiting after 1000.214 ms: recovery conflict on snapshot", 1, stallAt.Add(time.Second), stallAt.Add(time.Second)),
	}}
	svc := ServiceState{}
	svc.Service.Name, svc.Service.Namespace = "profiles-db-ro", "profiles"
	svc.Service.Spec.Selector = map[string]string{"app": "profiles-db", "role": "replica"}
	ev := &Gathered{Commands: cmds, Logs: []LogSet{dbLog}, Window: w, K8s: K8sEvidence{Services: []ServiceState{svc}},
		Earlier: []evidence.Change{{Timestamp: w.BaselineStart.Add(-6 * 24 * time.Hour), Service: "profile-api", Kind: "deploy", Description: "profile-api 2.9.0: reads served from profiles-db-ro"}}}
	fs := detectDBBlocked(ev, nil)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Subject != "profiles-db" || f.fact("condition") != "replication" || f.fact("blocker") != "growth-weekly-report" || f.Time.Sub(stallAt).Abs() > time.Second {
		t.Errorf("finding on %s (%s) blocked by %q since %s, want profiles-db replication behind growth-weekly-report since %s", f.Subject, f.fact("condition"), f.fact("blocker"), f.Time, stallAt)
	}
	if !containsStr(f.Related, "profile-api") || !strings.Contains(f.fact("line"), "recovery conflict") {
		t.Errorf("related %v, line %q", f.Related, f.fact("line"))
	}
	h := &Hypothesis{Kind: KindDBBlocked, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
	d := dbBlocked.describe(h, Scope{})
	for _, x := range []string{"replication lag on profiles-db", "37m49s", "growth-weekly-report", "max_standby_streaming_delay = -1", "stale data or wait with it: profile-api"} {
		if !strings.Contains(d, x) {
			t.Errorf("description %q does not say %q", d, x)
		}
	}
	ev.Commands = nil
	if fs := detectDBBlocked(ev, nil); len(fs) != 0 {
		t.Errorf("without the psql output: %+v", fs)
	}
}

// A lock queue in PostgreSQL's own log (log_lock_waits), with the default
// stderr prefix and RDS's: the session most waits name as the holder is
// read with its application and the job whose log names it, and the head
// of the queue waiting for an AccessExclusiveLock with its statement.
// Waits on row locks with no stronger request at the head are not a lock
// queue.
func TestLockQueueOf(t *testing.T) {
	stderr := []string{
		`2026-11-25 02:00:04.911 UTC [47102] backup@orders LOG:  connection authorized: user=backup database=orders application_name=pg_dump`,
		`2026-11-25 02:10:03.418 UTC [48211] partman@orders LOG:  process 48211 still waiting for AccessExclusiveLock on relation 16822 of database 16401 after 1000.051 ms`,
		`2026-11-25 02:10:03.418 UTC [48211] partman@orders DETAIL:  Process holding the lock: 47102. Wait queue: 48211.`,
		`2026-11-25 02:10:03.418 UTC [48211] partman@orders STATEMENT:  ALTER TABLE public.order_events ATTACH PARTITION public.order_events_p2026_12 FOR VALUES FROM ('2026-12-01') TO ('2027-01-01')`,
		`2026-11-25 02:10:05.027 UTC [48230] orders_api@orders LOG:  process 48230 still waiting for RowExclusiveLock on relation 16822 of database 16401 after 1000.112 ms`,
		`2026-11-25 02:10:05.027 UTC [48230] orders_api@orders DETAIL:  Process holding the lock: 47102. Wait queue: 48211, 48230.`,
	}
	rds := []string{
		`2026-11-25 01:30:00 UTC:10.0.7.12(50412):reporter@shop:[3310]:LOG:  connection authorized: user=reporter database=shop application_name=nightly-report`,
		`2026-11-25 01:40:02 UTC:10.0.3.4(41200):flyway@shop:[3412]:LOG:  process 3412 still waiting for AccessExclusiveLock on relation 20611 of database 16400 after 1000.045 ms`,
		`2026-11-25 01:40:02 UTC:10.0.3.4(41200):flyway@shop:[3412]:DETAIL:  Process holding the lock: 3310. Wait queue: 3412.`,
		`2026-11-25 01:40:02 UTC:10.0.3.4(41200):flyway@shop:[3412]:STATEMENT:  ALTER TABLE orders ADD COLUMN channel text`,
		`2026-11-25 01:40:09 UTC:10.0.3.9(41877):shop@shop:[3420]:LOG:  process 3420 still waiting for AccessShareLock on relation 20611 of database 16400 after 1000.201 ms`,
		`2026-11-25 01:40:09 UTC:10.0.3.9(41877):shop@shop:[3420]:DETAIL:  Process holding the lock: 3310. Wait queue: 3412, 3420.`,
	}
	rows := []string{
		`2026-11-25 02:10:05.027 UTC [48230] app@orders LOG:  process 48230 still waiting for ShareLock on transaction 88123 after 1000.112 ms`,
		`2026-11-25 02:10:05.027 UTC [48230] app@orders DETAIL:  Process holding the lock: 47102. Wait queue: 48230.`,
		`2026-11-25 02:10:06.027 UTC [48231] app@orders LOG:  process 48231 still waiting for ShareLock on transaction 88123 after 1000.112 ms`,
		`2026-11-25 02:10:06.027 UTC [48231] app@orders DETAIL:  Process holding the lock: 47102. Wait queue: 48230, 48231.`,
		`2026-11-25 02:00:04.911 UTC [47102] app@orders LOG:  statement: BEGIN`,
	}
	cases := []struct {
		name   string
		server []string
		job    LogSet
		holder string // "" for none
		want   []string
	}{
		{"stderr prefix, pg_dump run by a backup job, ATTACH PARTITION at the head", stderr,
			minedSet("pg-backup", false, 0, `2026-11-25T02:00:04Z starting pg_dump of orders from orders-db-0.orders-db (format=custom)`),
			"pg-backup", []string{"pg_dump (session 47102 of user backup)", "run by pg-backup", "requested an AccessExclusiveLock", "ATTACH PARTITION"}},
		{"RDS prefix, a report holding, a migration at the head", rds,
			minedSet("checkout", false, 0, `2026-11-25T01:40:00Z INFO started`),
			"nightly-report", []string{"nightly-report (session 3310 of user reporter)", "flyway (session 3412) requested an AccessExclusiveLock", "ADD COLUMN"}},
		{"row locks behind a transaction: no lock queue", rows, minedSet("checkout", false, 0, `x`), "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			server := minedSet("orders-db", false, 0, c.server...)
			ev := &Gathered{Logs: []LogSet{server, c.job}, Window: win}
			q := lockQueueOf(ev, &ev.Logs[0])
			if c.holder == "" {
				if q != nil {
					t.Fatalf("queue %+v", q)
				}
				return
			}
			if q == nil {
				t.Fatal("no lock queue")
			}
			if q.holder != c.holder {
				t.Errorf("holder %q, want %q", q.holder, c.holder)
			}
			h := &Hypothesis{Kind: KindDBBlocked, Subject: "orders-db", Primary: []*Finding{{Kind: KindDBBlocked, Facts: map[string]string{"condition": "lock", "blocker": q.holder, "blocker_detail": q.detail, "queue_head": q.head}}}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "lock_timeout") {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
