package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDetectIndexInvalid finds an index left invalid by a failed concurrent
// build, from the database's statement log (RDS's log group, a server's
// stderr log), a migration tool's error, psql's \d and a pg_index query,
// names the index dropped before it and the instance, and stays silent on a
// build that finished or when nothing is slow.
func TestDetectIndexInvalid(t *testing.T) {
	w := testWindow()
	drop := w.Start.Add(5 * time.Minute)
	fail := w.Start.Add(35 * time.Minute)
	at := func(d time.Time, line string) analysis.LogTemplate { return tmpl(line, 1, d, d) }
	rdsLog := LogSet{Source: "/aws/rds/instance/orders-prod/postgresql", Subject: "postgresql", Origin: SrcCloudWatch, Templates: []analysis.LogTemplate{
		at(drop, "2026-05-01 11:05:00 UTC:10.30.7.201(41822):migrator@orders:[88123]:LOG:  statement: DROP INDEX CONCURRENTLY IF EXISTS orders_customer_id_idx"),
		at(drop.Add(2*time.Second), "2026-05-01 11:05:02 UTC:10.30.7.201(41822):migrator@orders:[88123]:LOG:  statement: CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_customer_id_created_at_idx ON orders (customer_id, created_at DESC)"),
		at(fail, "2026-05-01 11:35:00 UTC:10.30.7.201(41822):migrator@orders:[88123]:ERROR:  canceling statement due to statement timeout"),
		at(fail, "2026-05-01 11:35:00 UTC:10.30.7.201(41822):migrator@orders:[88123]:STATEMENT:  CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_customer_id_created_at_idx ON orders (customer_id, created_at DESC)"),
		tmpl("2026-05-01 11:07:00 UTC:10.30.4.19(50382):orders_app@orders:[93377]:LOG:  duration: 5079.006 ms  plan:\n\tQuery Text: SELECT ... FROM orders o WHERE o.customer_id = $1\n\t->  Parallel Seq Scan on orders o  (cost=0.00..1183000.00 rows=107 width=61)", 80, drop.Add(2*time.Minute), w.End),
	}}
	// A self-managed server's stderr log: a unique index whose build met a
	// duplicate key.
	stderrLog := LogSet{Source: "/var/log/postgresql/postgresql-16-main.log", Subject: "pg-billing", Templates: []analysis.LogTemplate{
		at(fail, "2026-05-01 11:35:00.120 UTC [4411] billing@billing ERROR:  could not create unique index \"invoices_number_uniq\""),
		at(fail, "2026-05-01 11:35:00.120 UTC [4411] billing@billing STATEMENT:  CREATE UNIQUE INDEX CONCURRENTLY invoices_number_uniq ON public.invoices (number)"),
	}}
	// golang-migrate quoting the failed statement with the driver's error.
	migrateLog := LogSet{Source: "orders-migrate", Subject: "orders-migrate", Templates: []analysis.LogTemplate{
		at(fail, "CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_customer_id_created_at_idx ON orders (customer_id, created_at DESC);"),
		at(fail, " (details: pq: canceling statement due to statement timeout)"),
	}}
	// A build that finished: the next statement is another one.
	finished := LogSet{Source: "/aws/rds/instance/orders-prod/postgresql", Subject: "postgresql", Templates: []analysis.LogTemplate{
		at(drop, "2026-05-01 11:05:02 UTC:10.30.7.201(41822):migrator@orders:[88123]:LOG:  statement: CREATE INDEX CONCURRENTLY orders_customer_id_created_at_idx ON orders (customer_id, created_at DESC)"),
		at(fail, "2026-05-01 11:35:00 UTC:10.30.4.19(50382):orders_app@orders:[93377]:ERROR:  canceling statement due to statement timeout"),
	}}
	psqlD := evidence.CommandOutput{Command: `kubectl exec -n orders deploy/orders-api -- psql "$DSN" -c '\d orders'`, Run: `psql "$DSN" -c '\d orders'`, Lines: []string{
		`                                    Table "public.orders"`,
		`Indexes:`,
		`    "orders_pkey" PRIMARY KEY, btree (id)`,
		`    "orders_customer_id_created_at_idx" btree (customer_id, created_at DESC) INVALID`,
	}}
	pgIndex := evidence.CommandOutput{Command: `psql -c "SELECT indexrelid::regclass, indrelid::regclass, indisvalid FROM pg_index WHERE NOT indisvalid"`, Lines: []string{
		`            indexrelid             | indrelid | indisvalid`,
		`-----------------------------------+----------+------------`,
		` invoices_number_uniq              | invoices | f`,
		`(1 row)`,
	}}
	slow := Finding{Kind: KindSlowQuery, Subject: "postgresql", Time: drop.Add(2 * time.Minute)}
	migration := evidence.Change{Timestamp: drop.Add(-10 * time.Second), Service: "orders-api", Kind: "deploy", Description: "orders-api 7.2.0 with migration 0142 (composite index for order history paging)"}
	cases := []struct {
		name              string
		logs              []LogSet
		cmds              []evidence.CommandOutput
		found             []Finding
		want              bool
		subject, index    string
		table, dropped    string
		says, related     string
		onsetAtDrop       bool
		failureMentioning string
	}{
		{name: "RDS statement log: dropped, then cancelled at the statement timeout", logs: []LogSet{rdsLog}, found: []Finding{slow}, want: true,
			subject: "orders-prod", index: "orders_customer_id_created_at_idx", table: "orders", dropped: "orders_customer_id_idx", onsetAtDrop: true,
			failureMentioning: "statement timeout", related: "orders-api", says: "Parallel Seq Scan on orders"},
		{name: "psql \\d shows it INVALID", logs: []LogSet{rdsLog}, cmds: []evidence.CommandOutput{psqlD}, found: []Finding{slow}, want: true,
			subject: "orders-prod", index: "orders_customer_id_created_at_idx", table: "orders", dropped: "orders_customer_id_idx", says: "psql \\d lists it INVALID"},
		{name: "a migration tool quotes the failed statement", logs: []LogSet{migrateLog}, found: []Finding{slow}, want: true,
			subject: "orders-migrate", index: "orders_customer_id_created_at_idx", table: "orders", failureMentioning: "statement timeout"},
		{name: "a unique index build meets a duplicate, pg_index says indisvalid f", logs: []LogSet{stderrLog}, cmds: []evidence.CommandOutput{pgIndex}, found: []Finding{slow}, want: true,
			subject: "pg-billing", index: "invoices_number_uniq", table: "invoices", failureMentioning: "could not create unique index", says: "pg_index.indisvalid is false"},
		{name: "a build that finished is no invalid index", logs: []LogSet{finished}, found: []Finding{slow}},
		{name: "nothing slow: the invalid index is not this incident's", logs: []LogSet{stderrLog}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Commands: c.cmds, Window: w, Changes: []evidence.Change{migration}}
			f, ok := oneFinding(t, detectIndexInvalid(ev, c.found), c.want)
			if !ok {
				return
			}
			if f.Kind != KindIndexInvalid || f.Subject != c.subject || f.fact("index") != c.index || f.fact("table") != c.table || f.fact("dropped") != c.dropped {
				t.Errorf("finding %s of %q: index %q table %q dropped %q; want %q %q %q %q", f.Kind, f.Subject, f.fact("index"), f.fact("table"), f.fact("dropped"), c.subject, c.index, c.table, c.dropped)
			}
			if c.onsetAtDrop && !f.Time.Equal(drop) {
				t.Errorf("onset %s, want the drop at %s", ts(f.Time), ts(drop))
			}
			if c.failureMentioning != "" && !strings.Contains(f.fact("failure"), c.failureMentioning) {
				t.Errorf("failure %q, want it to mention %q", f.fact("failure"), c.failureMentioning)
			}
			if c.related != "" && !f.relates(c.related) {
				t.Errorf("related %v, want %s (its migration's change)", f.Related, c.related)
			}
			if all := strings.Join(f.Evidence, " "); c.says != "" && !strings.Contains(all, c.says) {
				t.Errorf("evidence lacks %q: %s", c.says, all)
			}
			if f.fact("why") == "" {
				t.Error("no why")
			}
			h := &Hypothesis{Kind: KindIndexInvalid, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.index, "INVALID", c.table)
			recs := recommend(h, Scope{})
			if len(recs) == 0 || !strings.Contains(recs[0].Action, "CREATE INDEX CONCURRENTLY "+c.index) {
				t.Errorf("first action %v does not rebuild %s", recs, c.index)
			}
		})
	}
}

// TestRDSInstanceOfGroup names the instance or cluster of RDS, Aurora and
// DocumentDB log groups.
func TestRDSInstanceOfGroup(t *testing.T) {
	for g, want := range map[string]string{
		"/aws/rds/instance/orders-prod/postgresql": "orders-prod",
		"/aws/rds/cluster/ledger-aurora/error":     "ledger-aurora",
		"/aws/docdb/catalog/audit":                 "",
		"/aws/lambda/orders":                       "",
	} {
		if got := rdsInstanceOfGroup(g); got != want {
			t.Errorf("rdsInstanceOfGroup(%q) = %q, want %q", g, got, want)
		}
	}
}
