package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestXIDWraparound reads PostgreSQL refusing writes for transaction ID
// wraparound, in the words of the server and of clients (pgx with its
// SQLSTATE, JDBC with the older wording, the multixact form), with the
// holder of the oldest snapshot from pg_stat_activity (idle in
// transaction for days) or pg_prepared_xacts, and the databases' ages. A
// session open for minutes is no holder; a warning alone, with writes
// still accepted, is not this cause.
func TestXIDWraparound(t *testing.T) {
	server := `2026-03-14 10:12:40.604 UTC [918233] ledger_app@ledger ERROR:  database is not accepting commands that assign new XIDs to avoid wraparound data loss in database "ledger"`
	pgx := `{"level":"error","ts":"2026-03-14T10:12:41.160Z","msg":"post failed","error":"insert journal_entries: ERROR: database is not accepting commands that assign new XIDs to avoid wraparound data loss in database \"ledger\" (SQLSTATE 54000)"}`
	jdbc := `2026-03-14 10:12:41.377 ERROR 1 --- [nio-8080-exec-3] o.h.e.j.s.SqlExceptionHelper : ERROR: database is not accepting commands to avoid wraparound data loss in database "billing"`
	multixact := `2026-03-14 10:12:41 UTC [4411] app@orders ERROR:  database is not accepting commands that assign new MultiXactIds to avoid wraparound data loss in database "orders"`
	warnOnly := `2026-03-14 10:12:40.552 UTC [2117] WARNING:  database "ledger" must be vacuumed within 38112904 transactions`
	cmd := func(host, run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "ssh " + host + " '" + run + "'", Run: run, Host: host, Source: "session.txt:1", Lines: strings.Split(out, "\n")}
	}
	ages := cmd("pg-ledger-01", `sudo -u postgres psql -d ledger -c "SELECT datname, age(datfrozenxid) FROM pg_database"`, `  datname  |    age
-----------+------------
 ledger    | 2144483648
 postgres  |  139990212
(2 rows)`)
	idle := cmd("pg-ledger-01", `sudo -u postgres psql -d ledger -c "SELECT pid, usename, application_name, client_addr, state, xact_start, age(backend_xmin) AS xmin_age FROM pg_stat_activity"`, `  pid   |   usename   | application_name | client_addr |        state        |          xact_start           |  xmin_age
--------+-------------+------------------+-------------+---------------------+-------------------------------+------------
 311907 | metabase_ro | Metabase v0.50.2 | 10.20.4.17  | idle in transaction | 2026-03-07 16:42:08.311277+00 | 2006212904
 919412 | postgres    | psql             |             | active              | 2026-03-14 10:41:51.02231+00  |          1
(2 rows)`)
	recent := cmd("pg-ledger-01", `sudo -u postgres psql -c "SELECT pid, usename, state, xact_start FROM pg_stat_activity"`, ` pid  | usename | state               | xact_start
------+---------+---------------------+-------------------------------
 4411 | app     | idle in transaction | 2026-03-14 10:35:00.000000+00
(1 row)`)
	prepared := cmd("pg-billing-01", `psql -c "SELECT gid, prepared, owner FROM pg_prepared_xacts"`, `        gid         |           prepared            | owner
--------------------+-------------------------------+-------
 txn-settle-88121   | 2026-02-28 03:12:44.118+00    | app
(1 row)`)
	cases := []struct {
		name    string
		logs    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string
		holder  bool
	}{
		{"server log and pgx client, the idle-in-transaction holder", []LogSet{logSet("pg-ledger-01.postgresql", true, server), logSet("ledger-api", false, pgx)},
			[]evidence.CommandOutput{ages, idle}, "pg-ledger-01",
			[]string{"transaction ID (XID) wraparound", `database "ledger"`, "age(datfrozenxid) 2144483648", "Metabase v0.50.2", "idle in transaction", "held back the oldest xmin", "ledger-api", "SQLSTATE 54000"}, true},
		{"JDBC client with the older wording, a prepared transaction holds it", []LogSet{logSet("billing-api", false, jdbc)},
			[]evidence.CommandOutput{prepared}, "pg-billing-01",
			[]string{`database "billing"`, `prepared transaction "txn-settle-88121"`}, true},
		{"multixact form, nothing read of the holder", []LogSet{logSet("orders-db.postgresql", true, multixact)}, nil, "orders-db",
			[]string{"something holds back the oldest xmin"}, false},
		{"a transaction open for minutes is no holder", []LogSet{logSet("pg-ledger-01.postgresql", true, server)}, []evidence.CommandOutput{recent}, "pg-ledger-01",
			[]string{"something holds back the oldest xmin"}, false},
		{"a warning alone: writes still accepted", []LogSet{logSet("pg-ledger-01.postgresql", true, warnOnly)}, nil, "", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectXIDWraparound(ev, nil), c.subject)
			if f == nil {
				return
			}
			if (f.fact("holder") != "") != c.holder || (f.fact("why") != "") != c.holder {
				t.Errorf("holder %q why %q", f.fact("holder"), f.fact("why"))
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := recommend(h, Scope{})
			if len(recs) < 2 || !strings.Contains(recs[1].Action, "VACUUM") {
				t.Errorf("recommendations: %+v", recs)
			}
			if c.holder && strings.Contains(c.name, "idle") && !strings.Contains(recs[0].Action, "pg_terminate_backend(311907)") {
				t.Errorf("first recommendation: %+v", recs[0])
			}
		})
	}
	// A client's release is no trigger; a change naming the holder is.
	f := detectXIDWraparound(&Gathered{Logs: []LogSet{logSet("pg-ledger-01.postgresql", true, server)}, Commands: []evidence.CommandOutput{idle}, Window: win}, nil)[0]
	h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}
	deploy := &Finding{Kind: KindDeploy, Subject: "ledger-api", Summary: "deploy of ledger-api: ledger-api 2.31.0: add memo length validation, bump pgx"}
	bi := &Finding{Kind: KindConfigChange, Subject: "metabase", Summary: "metabase: add ledger database (read-only user metabase_ro)"}
	if xidWraparound.fitsChange(h, deploy) || !xidWraparound.fitsChange(h, bi) {
		t.Errorf("fitsChange: deploy %v, metabase %v", xidWraparound.fitsChange(h, deploy), xidWraparound.fitsChange(h, bi))
	}
}
