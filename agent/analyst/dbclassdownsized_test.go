package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDBClassDownsized reads connections refused (PostgreSQL, MySQL,
// pgx) after a change to a smaller instance class (Terraform's plan
// arrow, a console modification) as the lowered connection limit; a
// larger class, or a change after the refusals, is not this cause.
func TestDBClassDownsized(t *testing.T) {
	cases := []struct {
		name, line, change string
		before             time.Duration
		want               bool
	}{
		{"PostgreSQL, Terraform", `FATAL:  remaining connection slots are reserved for non-replication superuser connections`, `terraform apply: aws_db_instance.main instance_class "db.r6g.4xlarge" -> "db.r6g.xlarge"`, 10 * time.Hour, true},
		{"MySQL, console", `ERROR 1040 (08004): Too many connections`, `RDS modify-db-instance orders-db: instance class from db.m5.2xlarge to db.t3.large (cost review)`, 3 * time.Hour, true},
		{"pgx client", `failed to connect to host=db user=app: server error (FATAL: sorry, too many clients already (SQLSTATE 53300))`, `aws_rds_cluster_instance.writer instance_class: db.r5.large => db.t4g.medium`, 20 * time.Hour, true},
		{"upsized", `FATAL:  remaining connection slots are reserved for non-replication superuser connections`, `aws_db_instance.main instance_class db.m6g.large -> db.r6g.2xlarge`, 2 * time.Hour, false},
		{"change after the refusals", `ERROR 1040 (08004): Too many connections`, `instance class from db.m5.2xlarge to db.t3.large`, -time.Hour, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Gathered{Window: win,
				Changes: []evidence.Change{{Service: "orders-db", Timestamp: win.Start.Add(-c.before), Description: c.change}},
				Logs:    []LogSet{{Source: "api-6d9f-x2", Subject: "api", Templates: []analysis.LogTemplate{{Example: c.line, Incident: 9, FirstIncident: win.Start}}}}}
			f, ok := oneFinding(t, detectDBClassDownsized(&ev, nil), c.want)
			if !ok {
				return
			}
			checkWritten(t, dbClassDownsized, &f, f.fact("from_class"), "instance class", "max_connections", f.fact("to_class"))
		})
	}
}
