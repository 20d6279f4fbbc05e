package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestIDExhausted reads a table's generated key at its type's maximum in
// the words of each database and its clients: PostgreSQL's server log and
// a pgx client (SQLSTATE 2200H), JDBC's PSQLException, MySQL's duplicate
// primary key at the INT maximum, SQL Server's IDENTITY overflow, Oracle's
// ORA-08004 and ActiveRecord's RangeError; psql's \d and the sequence's
// last_value add the column's type. A duplicate key below any type's
// maximum and an out-of-range value outside an insert are not this cause.
func TestIDExhausted(t *testing.T) {
	server := `2026-03-14 10:12:40.604 UTC [918233] events_app@events ERROR:  nextval: reached maximum value of sequence "events_id_seq" (2147483647)`
	statement := `2026-03-14 10:12:40.604 UTC [918233] events_app@events STATEMENT:  INSERT INTO events (kind, payload) VALUES ($1, $2) RETURNING id`
	pgx := `{"level":"error","ts":"2026-03-14T10:12:41.160Z","msg":"insert failed","error":"ERROR: nextval: reached maximum value of sequence \"events_id_seq\" (2147483647) (SQLSTATE 2200H)"}`
	jdbc := `2026-03-14 10:12:41.377 ERROR 1 --- [nio-8080-exec-3] o.h.e.j.s.SqlExceptionHelper : ERROR: nextval: reached maximum value of sequence "order_lines_id_seq" (2147483647)`
	mysql := `2026-03-14T10:12:41.201Z ERROR [orders] create order failed: Error 1062 (23000): Duplicate entry '2147483647' for key 'orders.PRIMARY'`
	mssql := `[2026-03-14 10:12:41 ERR] Microsoft.EntityFrameworkCore.Update: Failed executing DbCommand: Microsoft.Data.SqlClient.SqlException (0x80131904): Arithmetic overflow error converting IDENTITY to data type int.`
	oracle := `2026-03-14 10:12:41,377 ERROR [ledger] java.sql.SQLException: ORA-08004: sequence LEDGER_SEQ.NEXTVAL exceeds MAXVALUE and cannot be instantiated`
	rails := `E, [2026-03-14T10:12:41.377 #1] ERROR -- : ActiveModel::RangeError (2147483648 is out of range for ActiveModel::Type::Integer with limit 4 bytes)`
	dupLow := `2026-03-14T10:12:41.201Z ERROR create user failed: Error 1062 (23000): Duplicate entry '88412' for key 'users.PRIMARY'`
	rangeElsewhere := `2026-03-14T10:12:41.201Z ERROR report failed: ERROR: integer out of range`
	psql := evidence.CommandOutput{Command: `psql "host=events-db.example.com dbname=events" -c '\d events' -c 'select last_value, is_called from events_id_seq'`,
		Run: `psql "host=events-db.example.com dbname=events" -c '\d events' -c 'select last_value, is_called from events_id_seq'`, Source: "session.txt:1",
		Lines: strings.Split(`                     Table "public.events"
 Column  |  Type   | Collation | Nullable |              Default
---------+---------+-----------+----------+------------------------------------
 id      | integer |           | not null | nextval('events_id_seq'::regclass)
 kind    | text    |           | not null |
 payload | jsonb   |           |          |

 last_value | is_called
------------+-----------
 2147483647 | t
(1 row)`, "\n")}
	cases := []struct {
		name    string
		logs    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"PostgreSQL's log with the statement, a pgx client and psql", []LogSet{logSet("events-db.postgresql", true, server, statement), logSet("events-writer", false, pgx)},
			[]evidence.CommandOutput{psql}, "events-db",
			[]string{`sequence "events_id_seq"`, "events.id", "2147483647, the largest 32-bit integer", "integer overflow", "the column id is integer", "events-writer cannot write"}},
		{"JDBC client only", []LogSet{logSet("billing-api", false, jdbc)}, nil, "database",
			[]string{`sequence "order_lines_id_seq"`, "order_lines.id", "2147483647"}},
		{"MySQL duplicate key at the INT maximum", []LogSet{logSet("orders-api", false, mysql)}, nil, "database",
			[]string{"generated id of orders", "2147483647"}},
		{"SQL Server IDENTITY overflow", []LogSet{logSet("inventory-api", false, mssql)}, nil, "database",
			[]string{"ran out of values"}},
		{"Oracle sequence past MAXVALUE", []LogSet{logSet("ledger-api", false, oracle)}, nil, "database",
			[]string{`sequence "LEDGER_SEQ"`}},
		{"ActiveRecord's integer limit", []LogSet{logSet("accounts-web", false, rails)}, nil, "database",
			[]string{"accounts-web cannot write"}},
		{"a duplicate key below every type's maximum", []LogSet{logSet("users-api", false, dupLow)}, nil, "", nil},
		{"integer out of range outside an insert", []LogSet{logSet("reports", false, rangeElsewhere)}, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectIDExhausted(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := recommend(h, Scope{})
			if len(recs) < 2 || !strings.Contains(strings.ToLower(recs[0].Action), "bigint") {
				t.Errorf("recommendations: %+v", recs)
			}
		})
	}
	// A client's release or a setting elsewhere is no trigger; a change
	// to the sequence or the key's width is.
	f := detectIDExhausted(&Gathered{Logs: []LogSet{logSet("events-db.postgresql", true, server, statement)}, Window: win}, nil)[0]
	h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}
	cfg := &Finding{Kind: KindConfigChange, Subject: "events-api", Summary: "config change of events-api: slow query threshold 5s -> 2s"}
	mig := &Finding{Kind: KindDeploy, Subject: "events-writer", Summary: "deploy of events-writer: migration: events_id_seq MAXVALUE"}
	if idExhausted.fitsChange(h, cfg) || !idExhausted.fitsChange(h, mig) {
		t.Errorf("fitsChange: config %v, migration %v", idExhausted.fitsChange(h, cfg), idExhausted.fitsChange(h, mig))
	}
}
