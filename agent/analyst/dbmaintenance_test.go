package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A managed database restarted by its provider's maintenance, read from
// RDS events delivered to a log group by EventBridge, from `aws rds
// describe-events` in text and JSON form, with the clients' errors in
// pgx's, the MySQL JDBC driver's and psycopg2's words and the server's own
// startup line: the maintenance is the root, named with the instance, the
// version it started and the clients. A maintenance with no client losing
// its database, or client errors long after it, is not an incident of it.
func TestDetectDBMaintenance(t *testing.T) {
	at := func(d time.Duration) string { return win.Start.Add(d).UTC().Format("2006-01-02T15:04:05.000000+00:00") }
	eventBridge := func(msg string) string {
		return `{"version": "0", "detail-type": "RDS DB Instance Event", "source": "aws.rds", "resources": ["arn:aws:rds:eu-west-1:123456789012:db:ledger-db"], "detail": {"EventCategories": ["maintenance"], "SourceType": "DB_INSTANCE", "Message": "` + msg + `", "SourceIdentifier": "ledger-db", "EventID": "RDS-EVENT-0026"}}`
	}
	pgx := []string{
		`2026-11-25T03:00:04.000Z ledger-api-84d6c9b7f-kv8xd level=ERROR msg="request failed" status=503 err="FATAL: terminating connection due to administrator command (SQLSTATE 57P01)"`,
		`2026-11-25T03:00:53.000Z ledger-api-84d6c9b7f-kv8xd level=ERROR msg="request failed" status=503 err="failed to connect to ` + "`host=ledger-db.c8x1kq2m9z4p.eu-west-1.rds.amazonaws.com user=ledger database=ledger`" + `: dial error (dial tcp 10.80.33.201:5432: connect: connection refused)"`,
	}
	jdbc := []string{
		`2026-11-25 03:00:12.118 ERROR 1 --- [nio-8080-exec-4] o.h.engine.jdbc.spi.SqlExceptionHelper   : Communications link failure`,
		`2026-11-25 03:00:22.118 ERROR 1 --- [nio-8080-exec-7] com.zaxxer.hikari.pool.HikariPool        : HikariPool-1 - Exception during pool initialization. com.mysql.cj.jdbc.exceptions.CommunicationsException: Communications link failure`,
	}
	psycopg := []string{
		`psycopg2.OperationalError: server closed the connection unexpectedly This probably means the server terminated abnormally before or while processing the request.`,
		`psycopg2.OperationalError: connection to server at "inventory-db.cxyz.us-east-1.rds.amazonaws.com" (10.0.3.4), port 5432 failed: FATAL:  the database system is shutting down`,
	}
	pgServer := minedSet("postgresql", false, 6*time.Minute,
		`2026-11-25 03:00:38 UTC::@:[588]:LOG:  received fast shutdown request`,
		`2026-11-25 03:07:02 UTC::@:[412]:LOG:  starting PostgreSQL 15.10 on aarch64-unknown-linux-gnu, compiled by aarch64-unknown-linux-gnu-gcc (GCC) 10.5.0, 64-bit`)
	text := []evidence.CommandOutput{{Command: "aws rds describe-events --source-type db-instance --source-identifier orders-mysql --duration 1440 --output text", Lines: []string{
		"EVENTS\t" + at(-time.Minute) + "\tUpgrading database engine version.\torders-mysql\tdb-instance",
		"EVENTS\t" + at(7*time.Minute) + "\tFinished upgrading database engine version.\torders-mysql\tdb-instance"}}}
	jsonOut := []evidence.CommandOutput{{Command: "aws rds describe-events --source-identifier inventory-db --source-type db-instance", Lines: strings.Split(`{
    "Events": [
        {
            "SourceIdentifier": "inventory-db",
            "SourceType": "db-instance",
            "Message": "Applying off-line patches to DB instance.",
            "EventCategories": ["maintenance"],
            "Date": "`+at(-30*time.Second)+`"
        },
        {
            "SourceIdentifier": "inventory-db",
            "SourceType": "db-instance",
            "Message": "DB instance restarted.",
            "EventCategories": ["availability"],
            "Date": "`+at(6*time.Minute)+`"
        }
    ]
}`, "\n")}}
	// Cloud SQL's operations list, a table whose rows lead with the
	// operation's id; the clients' burst came before the hour asked about.
	gcloudOps := []evidence.CommandOutput{{Command: "gcloud sql operations list --instance=orders-pg --limit=3", Lines: []string{
		"NAME                                  TYPE         START                          END                            ERROR  STATUS",
		"0c5e2d7a-1b9f-4e3c-8a6d-2f7b9c1e4a08  MAINTENANCE  " + at(-25*time.Minute) + "  " + at(-22*time.Minute) + "  -      DONE",
		"7a2f4c19-3e8d-4b6a-9c1f-5d0e8b7a2c36  BACKUP_VOLUME  " + at(-9*time.Hour) + "  " + at(-9*time.Hour+4*time.Minute) + "  -      DONE"}}}
	nodePg := []string{
		`{"level":50,"time":1795900000000,"msg":"query failed","err":"Connection terminated unexpectedly","code":"57P01"}`,
		`Error: connect ECONNREFUSED 10.61.0.7:5432 connection refused`,
	}
	cases := []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		subject string // "" for no finding
		want    []string
	}{
		{"EventBridge events in a log group, pgx client, server log",
			[]LogSet{minedSet("ledger-api", false, 0, pgx...), minedSet("rds-events", false, -30*time.Second, eventBridge("Applying off-line patches to DB instance."), eventBridge("DB instance shutdown.")), pgServer},
			nil, "ledger-db", []string{"ledger-db was shut down and restarted", "minor version upgrade to 15.10", "ledger-api lost the database", "Applying off-line patches"}},
		{"describe-events text output, MySQL JDBC client",
			[]LogSet{minedSet("orders-api", false, 0, jdbc...)}, text, "orders-mysql", []string{"orders-mysql", "engine minor version upgrade", "orders-api lost the database"}},
		{"describe-events JSON output, psycopg2 client",
			[]LogSet{minedSet("inventory-worker", false, 10*time.Second, psycopg...)}, jsonOut, "inventory-db", []string{"inventory-db", "off-line patches", "inventory-worker"}},
		{"Cloud SQL operations list, Node client errors before the window",
			[]LogSet{minedSet("cart-api", false, -24*time.Minute, nodePg...)}, gcloudOps, "orders-pg", []string{"orders-pg was shut down and restarted", "operation MAINTENANCE from", "cart-api lost the database"}},
		{"maintenance with no client losing the database",
			[]LogSet{minedSet("orders-api", false, 0, `2026-11-25 03:00:12.118 INFO 1 --- [main] o.s.b.w.embedded.tomcat.TomcatWebServer : Tomcat started on port(s): 8080`)}, text, "", nil},
		{"client errors forty minutes after the maintenance",
			[]LogSet{minedSet("orders-api", false, 45*time.Minute, jdbc...)}, text, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectDBMaintenance(&Gathered{Logs: c.sets, Commands: c.cmds, Window: win}, nil)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("finding %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("findings: %+v", fs)
			}
			if fs[0].Subject != c.subject {
				t.Errorf("subject %q, want %q", fs[0].Subject, c.subject)
			}
			h := &Hypothesis{Kind: KindDBMaintenance, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "maintenance window") {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
