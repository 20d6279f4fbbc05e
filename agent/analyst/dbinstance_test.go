package analyst

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDatabaseInstanceInAffected checks that when the root cause is a
// database (connection exhaustion, deadlocks, slow statements), the
// database instance the evidence names is among the affected systems,
// whichever form names it: a JDBC or libpq URL in the caller's log, the
// caller's DATABASE_URL, the RDS instance of the CloudWatch metrics, the
// database server's own log. A failing call to a bare address names no
// instance.
func TestDatabaseInstanceInAffected(t *testing.T) {
	envPod := func(workload, name, value string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: workload + "-6d8f9c7b5-x2x9q", Namespace: "shop",
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: workload + "-6d8f9c7b5"}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: workload, Env: []corev1.EnvVar{{Name: name, Value: value}}}}}}
	}
	rds := func(id string) MetricSet {
		var pts []evidence.Point
		for i := -90; i <= 60; i += 5 {
			pts = append(pts, evidence.Point{T: now.Add(time.Duration(i) * time.Minute), V: 40})
		}
		return MetricSet{Name: "AWS/RDS/DatabaseConnections", Class: MetricSaturation, Origin: SrcCloudWatch,
			Series: []evidence.Series{{Labels: evidence.Labels{"DBInstanceIdentifier": id}, Points: pts}}}
	}
	cases := []struct {
		name    string
		logs    []LogSet
		pods    []corev1.Pod
		metrics []MetricSet
		want    string // "" : no instance may be named
	}{
		{"JDBC URL in the caller's log", []LogSet{logSet("order-worker", false,
			`2026-03-14 10:12:03.118 ERROR 1 --- [pool-2-thread-7] com.zaxxer.hikari.pool.HikariPool : HikariPool-1 - Exception during pool initialization. org.postgresql.util.PSQLException: FATAL: remaining connection slots are reserved for non-replication superuser connections`,
			`2026-03-14 10:02:41.007 INFO 1 --- [main] com.zaxxer.hikari.HikariDataSource : HikariPool-1 - Starting... url=jdbc:postgresql://orders-db.cluster-c8kq2x1vz3ab.us-west-2.rds.amazonaws.com:5432/orders`)}, nil, nil, "orders-db"},
		{"DATABASE_URL of the caller's pods", []LogSet{logSet("billing-api", false,
			`2026-03-14T10:12:03Z error charge failed: pq: sorry, too many clients already`)},
			[]corev1.Pod{envPod("billing-api", "DATABASE_URL", "postgres://billing_app:secret@billing-pg.db.svc.cluster.local:5432/billing?sslmode=require")}, nil, "billing-pg"},
		{"the RDS instance of the CloudWatch metrics", []LogSet{logSet("payments-api", false,
			`2026-03-14T10:12:03Z ERROR transfer failed: ERROR: deadlock detected (SQLSTATE 40P01)`)}, nil, []MetricSet{rds("payments-db-prod")}, "payments-db-prod"},
		{"the database server's own log", []LogSet{
			logSet("ledger-writer", false, `2026-03-14T10:12:03Z ERROR insert failed: pq: canceling statement due to lock timeout`),
			logSet("ledger-pg-01", true, `2026-03-14 10:12:01.311 UTC [48211] ERROR:  canceling statement due to lock timeout`, `2026-03-14 10:00:30.002 UTC [49108] LOG:  checkpoint starting: time`)},
			nil, nil, "ledger-pg-01"},
		{"a call to a bare address", []LogSet{
			logSet("billing-api", false, `2026-03-14T10:12:03Z error db query failed err=dial tcp 10.60.12.31:5432: connect: connection timed out`),
			logSet("billing-db-prod", true, `2026-03-14 10:00:30.002 UTC [3211] LOG:  checkpoint starting: time`)},
			nil, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := DetectLogs(c.logs, win)
			attachDatabaseInstances(fs, &Gathered{Logs: c.logs, Metrics: c.metrics, K8s: K8sEvidence{Pods: c.pods}, Window: win})
			sc := Scope{Window: win}
			a := Reason(fs, sc)
			if a.Healthy {
				t.Fatalf("no fault found in %+v", fs)
			}
			got := Build(a, sc, nil, "").AffectedSystems
			if c.want != "" && !slices.Contains(got, c.want) {
				t.Errorf("affected %q (root %s on %s), want %q among them", got, a.Hypotheses[0].Kind, a.Hypotheses[0].Subject, c.want)
			}
			if c.want == "" && slices.ContainsFunc(got, func(s string) bool { return s == "billing-db-prod" }) {
				t.Errorf("affected %q names an instance the calls do not", got)
			}
		})
	}
}
