package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Prepared-statement errors as pgx, PgJDBC, asyncpg and the PostgreSQL
// server log them, with a pooler's transaction mode read from
// pgbouncer.ini, SHOW CONFIG, an environment variable or the change that
// switched it; a client whose errors are of another kind is none.
func TestDetectPooledPrepared(t *testing.T) {
	at := func(min int) string {
		return win.Start.Add(time.Duration(min) * time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	pgx := `{"level":"error","ts":"` + at(5) + `","caller":"store/orders.go:88","msg":"load cart","error":"ERROR: prepared statement \"stmtcache_3b1f9a\" does not exist (SQLSTATE 26000)"}`
	pgxConf := `{"level":"info","ts":"` + at(-30) + `","msg":"pgxpool configured","default_query_exec_mode":"cache_statement","statement_cache_capacity":512}`
	jdbc := at(6) + ` ERROR 1 --- [nio-8080-exec-7] o.h.engine.jdbc.spi.SqlExceptionHelper   : ERROR: prepared statement "S_4" already exists`
	asyncpg := at(7) + ` ERROR [app.db] asyncpg.exceptions.InvalidSQLStatementNameError: prepared statement "__asyncpg_stmt_2a__" does not exist`
	server := `2026-11-26 10:40:12.316 UTC [30112] app@shop ERROR:  prepared statement "S_4" already exists`
	other := at(5) + ` ERROR 1 --- [nio-8080-exec-7] o.h.engine.jdbc.spi.SqlExceptionHelper   : ERROR: duplicate key value violates unique constraint "orders_pkey"`
	ini := evidence.CommandOutput{Command: "kubectl -n db get configmap pgbouncer -o yaml", Lines: []string{"  pgbouncer.ini: |", "    [pgbouncer]", "    pool_mode = transaction", "    max_prepared_statements = 0"}}
	showConfig := evidence.CommandOutput{Command: "psql -p 6432 -U pgbouncer pgbouncer -c 'SHOW CONFIG;'", Lines: []string{" pool_mode                 | transaction                              | session                                  | yes"}}
	envInline := evidence.CommandOutput{Command: "kubectl -n db exec deploy/pooler -- env", Lines: []string{"PGBOUNCER_POOL_MODE=transaction"}}
	change := evidence.Change{Timestamp: win.Start.Add(2 * time.Minute), Service: "pooler-main", Kind: "config", Description: "pooler-main: pool_mode session -> transaction to cut server connections"}
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		subject string
		why     bool
		want    []string
	}{
		{"pgx statement cache behind PgBouncer in transaction mode", []LogSet{minedSet("cart-api", false, 0, pgxConf, pgx), minedSet("shop-pg", false, 0, server)}, []evidence.CommandOutput{ini}, nil, "cart-api", true,
			[]string{"transaction pooling", `"prepared statement ... does not exist"`, "cache_statement", "max_prepared_statements=0"}},
		{"PgJDBC, the pool mode from SHOW CONFIG and the change", []LogSet{minedSet("billing", false, 0, jdbc)}, []evidence.CommandOutput{showConfig}, []evidence.Change{change}, "billing", true,
			[]string{"behind pooler-main", "already exists"}},
		{"asyncpg, the pool mode from an environment variable", []LogSet{minedSet("notifier", false, 0, asyncpg)}, []evidence.CommandOutput{envInline}, nil, "notifier", true, []string{"notifier's prepared statements"}},
		{"the server's log only, no pooler seen", []LogSet{minedSet("shop-pg", false, 0, server)}, nil, nil, "shop-pg", false, []string{"already exists"}},
		{"other SQL errors", []LogSet{minedSet("billing", false, 0, other)}, []evidence.CommandOutput{ini}, nil, "", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := onlyFinding(t, detectPooledPrepared(&Gathered{Logs: tc.sets, Commands: tc.cmds, Changes: tc.changes, Window: win}, nil), tc.subject)
			if f == nil {
				return
			}
			if tc.why != (f.fact("why") != "") {
				t.Errorf("why %q", f.fact("why"))
			}
			h := &Hypothesis{Kind: KindPooledPrepared, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
