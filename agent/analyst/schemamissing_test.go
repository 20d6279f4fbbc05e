package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSchemaMissing reads code using a column or table its database lacks
// in each engine's and client's words (Rails' PG::UndefinedColumn, an
// RDS-prefixed PostgreSQL log with the lock its migration's ALTER TABLE
// waited on, SQLAlchemy over psycopg2, Go's MySQL driver 1054, Prisma's
// P2022, SQLite, SQL Server), and follows it to the failed migration Job
// whose log ends on the lock timeout. A role or database that does not
// exist, and a migration failing on its own DDL, are not a schema behind
// its code.
func TestSchemaMissing(t *testing.T) {
	rails := `[0c7a1e55] ActiveRecord::StatementInvalid (PG::UndefinedColumn: ERROR:  column "newsletter" of relation "accounts" does not exist`
	rds := []string{
		`2026-03-14 10:31:21 UTC:10.0.4.17(51822):app@main:[31277]:LOG:  process 31277 still waiting for AccessExclusiveLock on relation 16422 of database 16401 after 1000.081 ms`,
		`2026-03-14 10:31:21 UTC:10.0.4.17(51822):app@main:[31277]:DETAIL:  Process holding the lock: 30112. Wait queue: 31277.`,
		`2026-03-14 10:31:25 UTC:10.0.4.17(51822):app@main:[31277]:ERROR:  canceling statement due to lock timeout`,
		`2026-03-14 10:58:12 UTC:10.0.4.40(51200):app@main:[31988]:ERROR:  column "newsletter" of relation "accounts" does not exist at character 58`,
	}
	sqlalchemy := `sqlalchemy.exc.ProgrammingError: (psycopg2.errors.UndefinedColumn) column orders.gift_note does not exist`
	mysql := `{"level":"error","msg":"create order","error":"Error 1054 (42S22): Unknown column 'gift_note' in 'field list'"}`
	prisma := "PrismaClientKnownRequestError: Invalid `prisma.user.create()` invocation: The column `users.referral_code` does not exist in the current database."
	sqlite := `sqlite3.OperationalError: no such column: referral_code`
	mssql := `Microsoft.Data.SqlClient.SqlException (0x80131904): Invalid column name 'LoyaltyTier'.`
	noRole := `FATAL:  role "reporting" does not exist`
	t0 := time.Date(2026, 3, 14, 10, 31, 0, 0, time.UTC)
	migrate := jobPod("web-migrate-4-2-0", "web-migrate-4-2-0-vb7xd", t0, corev1.PodFailed, 1)
	backoff := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Job", Name: "web-migrate-4-2-0", Namespace: "ops"},
		Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", Type: "Warning", FirstTimestamp: metav1.NewTime(t0.Add(2 * time.Minute))}
	migrateLog := map[string][]evidence.LogLine{"ops/web-migrate-4-2-0-vb7xd/backup": {
		{Text: `== 20260310091512 AddNewsletterToAccounts: migrating =========================`},
		{Text: `PG::LockNotAvailable: ERROR:  canceling statement due to lock timeout (PG::LockNotAvailable)`}}}
	cases := []struct {
		name    string
		logs    []LogSet
		k       K8sEvidence
		subject string
		want    []string
	}{
		{"Rails and an RDS log, the migration Job failed on the lock", []LogSet{logSet("web", false, rails), logSet("main-db", false, rds...)},
			K8sEvidence{Pods: []corev1.Pod{migrate}, Events: []corev1.Event{backoff}, PreviousLogs: migrateLog}, "web",
			[]string{`the column "newsletter" of "accounts"`, "does not exist", "the Job web-migrate-4-2-0 failed", "lock timeout", "process 30112"}},
		{"SQLAlchemy over psycopg2", []LogSet{logSet("orders", false, sqlalchemy)}, K8sEvidence{}, "orders",
			[]string{`the column "gift_note" of "orders"`, "has not run"}},
		{"Go's MySQL driver", []LogSet{logSet("orders", false, mysql)}, K8sEvidence{}, "orders", []string{`the column "gift_note"`}},
		{"Prisma", []LogSet{logSet("signup", false, prisma)}, K8sEvidence{}, "signup", []string{`the column "referral_code" of "users"`}},
		{"SQLite", []LogSet{logSet("signup", false, sqlite)}, K8sEvidence{}, "signup", []string{`the column "referral_code"`}},
		{"SQL Server", []LogSet{logSet("loyalty", false, mssql)}, K8sEvidence{}, "loyalty", []string{`the column "LoyaltyTier"`}},
		{"a migration failing on its own DDL", []LogSet{logSet("orders", false, `ERROR migration 0042 failed: pq: relation "orders_v2" does not exist`)}, K8sEvidence{}, "", nil},
		{"a role that does not exist", []LogSet{logSet("reports", false, noRole)}, K8sEvidence{}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, K8s: c.k, Window: win}
			f := onlyFinding(t, detectSchemaMissing(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := recommend(h, Scope{})
			if len(recs) < 2 || !strings.Contains(recs[0].Action, "migration") || !strings.Contains(recs[1].Action, "roll") {
				t.Errorf("recommendations: %+v", recs)
			}
		})
	}
}
