package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// Serialization failures as clients log them (Go pgx with its SQLSTATE,
// Java's PSQLException, Python psycopg's SerializationFailure) with the
// raised default read from the server log's ALTER DATABASE, SHOW
// default_transaction_isolation or a change; failures with no raised
// level, and the server's own log lines, are not it.
func TestIsolationRaised(t *testing.T) {
	end := time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)
	on := end.Add(-40 * time.Minute)
	alter := evidence.CommandOutput{Run: "aws rds download-db-log-file-portion --db-instance-identifier wallet-db", Lines: []string{
		"2026-11-23 10:18:30 UTC:10.20.9.31(60114):dba@wallet:[18802]:LOG:  statement: ALTER DATABASE wallet SET default_transaction_isolation = 'serializable';",
	}}
	show := evidence.CommandOutput{Run: "psql -h wallet-db -U dba wallet", Lines: []string{
		"wallet=> SHOW default_transaction_isolation;", " default_transaction_isolation", "-------------------------------", " serializable", "(1 row)",
	}}
	change := evidence.Change{Timestamp: on.Add(-3 * time.Minute), Service: "wallet-db", Kind: "config", Description: "set default isolation level to serializable on the wallet database"}
	for _, tc := range []struct {
		name    string
		line    string
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		want    []string
	}{
		{"pgx with the server log's ALTER", `{"level":"ERROR","msg":"topup failed","err":"commit: ERROR: could not serialize access due to read/write dependencies among transactions (SQLSTATE 40001)"}`,
			[]evidence.CommandOutput{alter}, nil, []string{"raised to serializable", "DATABASE wallet", "SQLSTATE 40001"}},
		{"java with SHOW", `2026-11-23 10:31:02.114 ERROR 1 --- [nio-8080-exec-3] o.h.engine.jdbc.spi.SqlExceptionHelper : ERROR: could not serialize access due to concurrent update`,
			[]evidence.CommandOutput{show}, nil, []string{"raised to serializable", "SHOW default_transaction_isolation answers serializable"}},
		{"psycopg with a change", `psycopg.errors.SerializationFailure: could not serialize access due to read/write dependencies among transactions`,
			nil, []evidence.Change{change}, []string{"the change \"set default isolation level", "not overloaded"}},
		{"no raised level", `ERROR: could not serialize access due to concurrent update (SQLSTATE 40001)`, nil, nil, nil},
		{"the server's own log", `2026-11-23 10:21:04 UTC:10.30.2.14(51522):wallet_app@wallet:[21877]:ERROR:  could not serialize access due to read/write dependencies among transactions`,
			[]evidence.CommandOutput{alter}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gathered{Window: Window{Start: end.Add(-2 * time.Hour), End: end}, Commands: tc.cmds, Changes: tc.changes}
			g.Logs = []LogSet{{Source: "wallet-api-6b7d9c8f5d-4mxq2", Subject: "wallet-api", Templates: []analysis.LogTemplate{{Example: tc.line, Count: 8, Incident: 8, FirstIncident: on, FirstSeen: on}}}}
			fs := detectIsolationRaised(g, nil)
			if tc.want == nil {
				onlyFinding(t, fs, "")
				return
			}
			f := onlyFinding(t, fs, "wallet-api")
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := isolationRaised.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
			if len(f.Evidence) < 2 {
				t.Errorf("evidence %v", f.Evidence)
			}
		})
	}
}
