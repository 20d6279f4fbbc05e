package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestDBSlotsSnapshot(t *testing.T) {
	cmd := func(run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Source: "session.txt:1", Lines: strings.Split(out, "\n")}
	}
	const psqlRun = `psql "host=pg-shared-prod.c9xk2mq7ab1z.eu-west-1.rds.amazonaws.com user=dba_admin dbname=postgres" -c "select usename, application_name, state, count(*) from pg_stat_activity group by 1,2,3 order by 4 desc"`
	psqlMax := cmd(`psql "host=pg-shared-prod.c9xk2mq7ab1z.eu-west-1.rds.amazonaws.com user=dba_admin dbname=postgres" -c "show max_connections"`,
		" max_connections\n-----------------\n 400\n(1 row)")
	psqlByApp := cmd(psqlRun, `    usename     | application_name | state  | count
----------------+------------------+--------+-------
 analytics_sync | analytics-sync   | idle   |   212
 analytics_sync | analytics-sync   | active |    88
 billing        | billing-worker   | idle   |    31
 ledger         | ledger-api       | idle   |    19
 ledger         | ledger-api       | active |     5
 rdsadmin       |                  | idle   |     2
(6 rows)`)
	// psql -h with sessions per user only, the refused client among them.
	psqlByUser := cmd(`psql -h orders-db.internal -U postgres -c "select usename, count(*) from pg_stat_activity group by usename"`, ` usename  | count
----------+-------
 reporting|   160
 orders   |    20
 airflow  |    12
(3 rows)`)
	mysqlByUser := cmd(`mysql -h mysql-shared.prod -u admin -e "select user, count(*) from information_schema.processlist group by user; show variables like 'max_connections'"`, `+-------------+----------+
| user        | count(*) |
+-------------+----------+
| cdc_ingest  |      431 |
| checkout    |       38 |
| event_sched |        1 |
+-------------+----------+
3 rows in set (0.00 sec)
+-----------------+-------+
| Variable_name   | Value |
+-----------------+-------+
| max_connections | 500   |
+-----------------+-------+
1 row in set (0.01 sec)`)
	balanced := cmd(psqlRun, ` usename | application_name | state | count
---------+------------------+-------+-------
 a       | svc-a            | idle  |    60
 b       | svc-b            | idle  |    50
 c       | svc-c            | idle  |    45
(3 rows)`)
	victimHolds := cmd(psqlRun, ` usename | application_name | state | count
---------+------------------+-------+-------
 ledger  | ledger-api       | idle  |   180
 billing | billing-worker   | idle  |    20
(2 rows)`)
	cases := []struct {
		name       string
		cmds       []evidence.CommandOutput
		victim     string
		want, text string
	}{
		{"psql by application and state, max_connections", []evidence.CommandOutput{psqlMax, psqlByApp}, "ledger-api", "analytics-sync",
			"300 of its sessions are analytics-sync's against 57 for all other clients"},
		{"psql by user, -h", []evidence.CommandOutput{psqlByUser}, "orders", "reporting", "160 of its sessions"},
		{"mysql processlist by user, boxed", []evidence.CommandOutput{mysqlByUser}, "checkout", "cdc_ingest", "max_connections is 500"},
		{"no client holds most: none", []evidence.CommandOutput{balanced}, "ledger-api", "", ""},
		{"the refused client holds most: none", []evidence.CommandOutput{victimHolds}, "ledger-api", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refused := Finding{Kind: KindDatabase, Subject: "postgresql", Facts: map[string]string{"caller": c.victim,
				"line": "FATAL:  remaining connection slots are reserved for non-replication superuser connections"}}
			ev := &Gathered{Commands: c.cmds}
			out := detectDBSlotsTaken(ev, []Finding{refused})
			if c.want == "" {
				if len(out) > 0 {
					t.Fatalf("want none, got %s", out[0].Summary)
				}
				return
			}
			if len(out) != 1 || out[0].Subject != c.want {
				t.Fatalf("want holder %q, got %+v", c.want, out)
			}
			h := &Hypothesis{Kind: KindDBSlotsTaken, Subject: out[0].Subject, Primary: []*Finding{&out[0]}}
			if d := describe(h, Scope{}); !strings.Contains(d, c.text) {
				t.Errorf("description %q, want %q", d, c.text)
			}
			if !strings.Contains(out[0].fact("affected"), c.victim) {
				t.Errorf("affected %q, want the refused %s", out[0].fact("affected"), c.victim)
			}
		})
	}
}
