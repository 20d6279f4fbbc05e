package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDBPasswordExpired reads a client refused by its database because
// its role's password expired: the server's or the driver's own words
// (PostgreSQL's DETAIL, MySQL 1862, SQL Server 18487, ORA-28001), or the
// refusals of a role beginning after the validity psql \du lists for it.
// A refusal with no expiry said, or a validity still running, is not it.
func TestDBPasswordExpired(t *testing.T) {
	at := win.Start.Add(20 * time.Minute)
	client := func(line string) LogSet {
		return LogSet{Source: "orders-api-7c9d-x2", Subject: "orders-api", Namespace: "shop",
			Templates: []analysis.LogTemplate{{Example: line, Incident: 40, FirstIncident: at, FirstSeen: at}}}
	}
	rds := LogSet{Source: "/aws/rds/instance/orders-db/postgresql", Subject: "orders-db", Origin: SrcCloudWatch,
		Templates: []analysis.LogTemplate{{Example: `2026-11-27 00:11:02 UTC:10.31.4.22(58357):orders_rw@orders:[14856]:DETAIL:  User "orders_rw" has an expired password.`, Incident: 12, FirstIncident: at, FirstSeen: at}}}
	du := func(until string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: `psql "host=orders-db dbname=orders user=dba" -c '\du'`, Lines: []string{
			"                              List of roles",
			"    Role name    |                         Attributes",
			"-----------------+------------------------------------------------------------",
			" dba             | Create role, Create DB                                    +",
			"                 | Password valid until 2099-01-01 00:00:00+00",
			" orders_rw       | Password valid until " + until,
		}}
	}
	pgRefused := `Caused by: org.postgresql.util.PSQLException: FATAL: password authentication failed for user "orders_rw"`
	cases := []struct {
		name    string
		logs    []LogSet
		cmds    []evidence.CommandOutput
		user    string
		until   string
		want    bool
		subject string
	}{
		{"PostgreSQL: the server's DETAIL and the client's refusal", []LogSet{client(pgRefused), rds}, nil, "orders_rw", "", true, "orders-api"},
		{"MySQL 1862 in the driver's error", []LogSet{client(`java.sql.SQLException: Your password has expired. To log in you must change it using a client that supports expired passwords.`)}, nil, "", "", true, "orders-api"},
		{"SQL Server 18487", []LogSet{client(`Login failed for user 'report_svc'. Reason: The password of the account has expired. ClientConnectionId:8a1c`)}, nil, "report_svc", "", true, "orders-api"},
		{"Oracle ORA-28001", []LogSet{client(`java.sql.SQLException: ORA-28001: the password has expired`)}, nil, "", "", true, "orders-api"},
		{"psql \\du: validity ended before the refusals", []LogSet{client(pgRefused)}, []evidence.CommandOutput{du(at.Add(-40*time.Minute).Format("2006-01-02 15:04:05") + "+00")}, "orders_rw", at.Add(-40 * time.Minute).Format("2006-01-02 15:04 UTC"), true, "orders-api"},
		{"psql \\du: validity still running", []LogSet{client(pgRefused)}, []evidence.CommandOutput{du("2099-02-22 09:14:00+00")}, "", "", false, ""},
		{"a wrong password, no expiry said", []LogSet{client(pgRefused)}, nil, "", "", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Gathered{Window: win, Logs: c.logs, Commands: c.cmds}
			f, ok := oneFinding(t, detectDBPasswordExpired(&ev, nil), c.want)
			if !ok {
				return
			}
			if f.Subject != c.subject || f.fact("user") != c.user || f.fact("valid_until") != c.until {
				t.Errorf("subject %q user %q valid until %q, want %q %q %q", f.Subject, f.fact("user"), f.fact("valid_until"), c.subject, c.user, c.until)
			}
			checkWritten(t, dbPasswordExpired, &f, "Set a new password", "expired", "refuses each new connection of "+c.subject)
		})
	}
}
