package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDetectIndexDropped reads a full scan in the forms the databases log
// it (MongoDB 4.4+ structured and 4.2 text slow-query lines, explain()
// output, PostgreSQL auto_explain, MySQL's slow log and EXPLAIN), finds the
// index dropped before it, and stays silent on scans of small collections,
// index scans, and an index left invalid by a failed build.
func TestDetectIndexDropped(t *testing.T) {
	w := testWindow()
	drop := w.Start.Add(5 * time.Minute)
	slowAt := drop.Add(10 * time.Minute)
	at := func(d time.Time, line string) analysis.LogTemplate { return tmpl(line, 1, d, d) }
	mongoDrop := at(drop, `{"t":{"$date":"2026-05-01T11:05:00.133+00:00"},"s":"I","c":"COMMAND","id":51806,"ctx":"conn8790","msg":"CMD: dropIndexes","attr":{"namespace":"shop.reviews","uuid":{"uuid":{"$uuid":"8a3e1f20-6c4b-4d7e-91a2-5b0c3d9e7f14"}},"indexes":"\"productId_1_createdAt_-1\""}}`)
	mongoSlow := tmpl(`{"t":{"$date":"2026-05-01T11:15:00.570+00:00"},"s":"I","c":"COMMAND","id":51803,"ctx":"conn9033","msg":"Slow query","attr":{"type":"command","ns":"shop.reviews","command":{"find":"reviews","filter":{"productId":"P-1"},"sort":{"createdAt":-1},"limit":20},"planSummary":"COLLSCAN","keysExamined":0,"docsExamined":18412343,"hasSortStage":true,"nreturned":20,"durationMillis":3284}}`, 40, slowAt, w.End)
	mongoJSON := LogSet{Source: "mongo-shop-0", Subject: "mongo-shop", Templates: []analysis.LogTemplate{mongoDrop, mongoSlow}}
	// MongoDB 4.2's text log.
	mongoText := LogSet{Source: "mongod.log", Subject: "mongo-legacy", Templates: []analysis.LogTemplate{
		at(drop, `2026-05-01T11:05:00.133+0000 I  COMMAND  [conn12] CMD: dropIndexes shop.orders: { dropIndexes: "orders", index: "customerId_1" }`),
		tmpl(`2026-05-01T11:15:00.570+0000 I  COMMAND  [conn31] command shop.orders command: find { find: "orders", filter: { customerId: 42 } } planSummary: COLLSCAN keysExamined:0 docsExamined:2500000 cursorExhausted:1 numYields:19531 nreturned:3 reslen:1200 protocol:op_msg 2210ms`, 25, slowAt, w.End),
	}}
	// PostgreSQL: the DROP INDEX in the statement log, auto_explain's plan.
	pg := LogSet{Source: "/var/log/postgresql/postgresql-16-main.log", Subject: "pg-orders", Templates: []analysis.LogTemplate{
		at(drop, `2026-05-01 11:05:00.120 UTC [4411] migrator@orders LOG:  statement: DROP INDEX orders_customer_id_idx`),
		tmpl("2026-05-01 11:15:00 UTC [93377] app@orders LOG:  duration: 4079.006 ms  plan:\n\tQuery Text: SELECT * FROM orders WHERE customer_id = $1\n\tSeq Scan on orders  (cost=0.00..1183000.00 rows=107 width=61) (actual time=0.03..4079.00 rows=12 loops=1)\n\t  Filter: (customer_id = 42)\n\t  Rows Removed by Filter: 9876543", 30, slowAt, w.End),
	}}
	// MySQL: ALTER TABLE ... DROP INDEX, then the slow log.
	mysql := LogSet{Source: "mysql-slow.log", Subject: "mysql-catalog", Templates: []analysis.LogTemplate{
		at(drop, `2026-05-01T11:05:00.120000Z	   88 Query	ALTER TABLE products DROP INDEX idx_sku`),
		tmpl(`# Query_time: 2.918311  Lock_time: 0.000102 Rows_sent: 1  Rows_examined: 4821330`, 50, slowAt, w.End),
	}}
	explain := evidence.CommandOutput{Command: `mongosh shop --eval 'db.reviews.find({productId:"P-1"}).explain("executionStats")'`, Lines: []string{
		`  executionStats: {`,
		`    nReturned: 20,`,
		`    totalDocsExamined: 18412343,`,
		`    executionStages: { stage: 'COLLSCAN', filter: { productId: { '$eq': 'P-1' } } }`,
	}}
	small := LogSet{Source: "mongo-shop-0", Subject: "mongo-shop", Templates: []analysis.LogTemplate{
		tmpl(`{"t":{"$date":"2026-05-01T11:15:00.570+00:00"},"s":"I","c":"COMMAND","id":51803,"msg":"Slow query","attr":{"ns":"shop.settings","planSummary":"COLLSCAN","keysExamined":0,"docsExamined":12,"nreturned":12,"durationMillis":140}}`, 5, slowAt, w.End),
	}}
	ixscan := LogSet{Source: "mongo-shop-0", Subject: "mongo-shop", Templates: []analysis.LogTemplate{mongoDrop,
		tmpl(`{"t":{"$date":"2026-05-01T11:15:00.570+00:00"},"s":"I","c":"COMMAND","id":51803,"msg":"Slow query","attr":{"ns":"shop.reviews","planSummary":"IXSCAN { productId: 1 }","keysExamined":20,"docsExamined":20,"nreturned":20,"durationMillis":140}}`, 5, slowAt, w.End),
	}}
	psqlInvalid := evidence.CommandOutput{Command: `psql -c '\d orders'`, Lines: []string{`Table "public.orders"`, `Indexes:`, `    "orders_customer_id_created_at_idx" btree (customer_id, created_at DESC) INVALID`}}
	migration := evidence.Change{Timestamp: drop.Add(-time.Minute), Service: "shop-migrate", Kind: "deploy", Description: "schema migration v14: moderation status index"}
	cases := []struct {
		name                  string
		logs                  []LogSet
		cmds                  []evidence.CommandOutput
		want                  bool
		subject, coll, plan   string
		dropped, examined     string
		onsetAtDrop, migrates bool
	}{
		{name: "MongoDB structured log: dropIndexes, then COLLSCAN", logs: []LogSet{mongoJSON}, want: true, subject: "mongo-shop", coll: "shop.reviews", plan: "COLLSCAN", dropped: "productId_1_createdAt_-1", examined: "18412343", onsetAtDrop: true, migrates: true},
		{name: "MongoDB 4.2 text log", logs: []LogSet{mongoText}, want: true, subject: "mongo-legacy", coll: "shop.orders", plan: "COLLSCAN", dropped: "customerId_1", examined: "2500000", onsetAtDrop: true},
		{name: "PostgreSQL auto_explain Seq Scan after DROP INDEX", logs: []LogSet{pg}, want: true, subject: "pg-orders", coll: "orders", plan: "Seq Scan", dropped: "orders_customer_id_idx", examined: "9876543", onsetAtDrop: true},
		{name: "MySQL slow log after ALTER TABLE DROP INDEX", logs: []LogSet{mysql}, want: true, subject: "mysql-catalog", plan: "full table scan", dropped: "idx_sku", examined: "4821330", onsetAtDrop: true},
		{name: "explain() output alone", cmds: []evidence.CommandOutput{explain}, want: true, plan: "COLLSCAN", examined: "18412343"},
		{name: "a small collection scanned is no cause", logs: []LogSet{small}},
		{name: "an index scan is no cause", logs: []LogSet{ixscan}},
		{name: "an index left invalid is its own cause", logs: []LogSet{pg}, cmds: []evidence.CommandOutput{psqlInvalid}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{Logs: tc.logs, Commands: tc.cmds, Window: w, Scope: Scope{Service: "shop-api"}}
			if tc.migrates {
				ev.Changes = []evidence.Change{migration}
			}
			f, ok := oneFinding(t, detectIndexDropped(ev, nil), tc.want)
			if !ok {
				return
			}
			if f.Kind != KindIndexDropped || tc.subject != "" && f.Subject != tc.subject {
				t.Errorf("kind/subject = %s %q, want %q", f.Kind, f.Subject, tc.subject)
			}
			if f.fact("collection") != tc.coll || !strings.Contains(f.fact("plan"), tc.plan) || f.fact("dropped") != tc.dropped || f.fact("examined") != tc.examined {
				t.Errorf("facts = coll %q plan %q dropped %q examined %q", f.fact("collection"), f.fact("plan"), f.fact("dropped"), f.fact("examined"))
			}
			if tc.onsetAtDrop && !f.Time.Equal(drop) {
				t.Errorf("onset %s, want the drop at %s", f.Time, drop)
			}
			if f.fact("why") == "" || len(f.Evidence) < 2 {
				t.Errorf("want a why and two evidence lines: %+v", f)
			}
			if !containsStr(f.Related, "shop-api") || tc.migrates && !containsStr(f.Related, "shop-migrate") {
				t.Errorf("related = %v", f.Related)
			}
			h := &Hypothesis{Kind: KindIndexDropped, Subject: f.Subject, Primary: []*Finding{&f}}
			if d := describe(h, Scope{}); !strings.Contains(d, tc.plan) || tc.dropped != "" && !strings.Contains(d, "dropped index") {
				t.Errorf("description %q", d)
			}
		})
	}
}
