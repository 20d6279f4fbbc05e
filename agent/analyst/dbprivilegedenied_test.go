package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDBPrivilegeDenied reads a client refused a privilege on a database
// object (PostgreSQL 42501 through asyncpg and psycopg, MySQL 1142, SQL
// Server 229), the rebuild that recreated the object (dbt's log, DDL) and
// its ACL as psql \dp prints it; a refused login is not this cause.
func TestDBPrivilegeDenied(t *testing.T) {
	at := win.Start.Add(15 * time.Minute)
	client := func(line string) LogSet {
		return LogSet{Source: "reports-api-7f4b-8x", Subject: "reports-api", Namespace: "reporting",
			Templates: []analysis.LogTemplate{{Example: line, Incident: 30, FirstIncident: at, FirstSeen: at}}}
	}
	dbt := LogSet{Source: "analytics-dbt-nightly-2992-mx", Subject: "analytics-dbt-nightly", Namespace: "analytics",
		Templates: []analysis.LogTemplate{{Example: "06:14:36  43 of 46 OK created sql view model analytics.customer_ltv ........ [CREATE VIEW in 0.41s]", Incident: 1, FirstIncident: at.Add(-time.Minute)}}}
	rds := LogSet{Source: "/aws/rds/instance/analytics/postgresql", Subject: "analytics", Origin: SrcCloudWatch,
		Templates: []analysis.LogTemplate{{Example: `2026-11-27 06:16:05 UTC:10.44.2.70(51234):reports_api@analytics:[91060]:ERROR:  permission denied for view customer_ltv`, Incident: 20, FirstIncident: at, FirstSeen: at}}}
	dp := evidence.CommandOutput{Command: `psql -c '\dp analytics.customer_ltv' -c '\du reports_api'`, Lines: []string{
		"  Schema   |     Name     | Type |        Access privileges        | Column privileges | Policies",
		" analytics | customer_ltv | view | dbt_runner=arwdDxtm/dbt_runner  |                   |",
		" reports_api |            | {reporting_ro}",
	}}
	cases := []struct {
		name    string
		logs    []LogSet
		cmds    []evidence.CommandOutput
		objects string
		code    string
		rebuilt bool
		want    bool
	}{
		{"asyncpg traceback, dbt rebuild and ACL", []LogSet{client(`{"event": "unhandled exception", "exception": "Traceback (most recent call last):\n  File \"/app/reports_api/routes/ltv.py\", line 58, in get_report\nasyncpg.exceptions.InsufficientPrivilegeError: permission denied for view customer_ltv"}`), dbt, rds},
			[]evidence.CommandOutput{dp}, "customer_ltv", "SQLSTATE 42501", true, true},
		{"psycopg, no rebuild seen", []LogSet{client(`psycopg2.errors.InsufficientPrivilege: permission denied for table orders_daily`)}, nil, "orders_daily", "SQLSTATE 42501", false, true},
		{"MySQL 1142", []LogSet{client("java.sql.SQLSyntaxErrorException: SELECT command denied to user 'reports'@'10.2.0.14' for table `analytics`.`customer_ltv`"), dbt}, nil, "customer_ltv", "MySQL error 1142", true, true},
		{"SQL Server 229", []LogSet{client(`Microsoft.Data.SqlClient.SqlException (0x80131904): The SELECT permission was denied on the object 'invoices', database 'billing', schema 'dbo'.`)}, nil, "invoices", "SQL Server error 229", false, true},
		{"a refused login is not a privilege", []LogSet{client(`FATAL: password authentication failed for user "reports_api"`)}, nil, "", "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Gathered{Window: win, Logs: c.logs, Commands: c.cmds, Scope: Scope{Service: "reports-api"}}
			f, ok := oneFinding(t, detectDBPrivilegeDenied(&ev, nil), c.want)
			if !ok {
				return
			}
			if f.fact("objects") != c.objects || f.fact("code") != c.code || (f.fact("recreated") != "") != c.rebuilt {
				t.Errorf("objects %q code %q recreated %q", f.fact("objects"), f.fact("code"), f.fact("recreated"))
			}
			d := checkWritten(t, dbPrivilegeDenied, &f, "GRANT SELECT ON "+c.objects, "permission denied", "lacks a GRANT on "+c.objects, c.code)
			if strings.Contains(d, "Traceback") {
				t.Errorf("the quote should be the refusal, not the traceback's head: %s", d)
			}
			if c.rebuilt && !strings.Contains(d, "recreated") {
				t.Errorf("description lacks the rebuild: %s", d)
			}
			if c.cmds != nil && (f.fact("member_of") != "reporting_ro" || !strings.Contains(d, "only its owner dbt_runner")) {
				t.Errorf("member of %q, description %s", f.fact("member_of"), d)
			}
		})
	}
}
