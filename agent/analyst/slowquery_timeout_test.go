package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// A statement timeout set under statements that ran longer: the setting
// statement in the database's log, or a change naming it, before the first
// cancel, in PostgreSQL's and MySQL's words.
func TestTimeoutSetDetected(t *testing.T) {
	at := func(hm string) time.Time {
		v, _ := time.Parse(time.RFC3339, "2026-03-02T"+hm+":00Z")
		return v
	}
	cancel := func(line string, when time.Time) Finding {
		f := Finding{Kind: KindSlowQuery, Subject: "exports-api", Time: when, Summary: "exports-api logs slow queries"}
		f.setFact("line", line)
		return f
	}
	dbLog := func(line string, when time.Time) LogSet {
		return LogSet{Source: "db", Subject: "postgresql", Templates: []analysis.LogTemplate{{Example: line, FirstSeen: when}}}
	}
	pgCancel := "psycopg2.errors.QueryCanceled: canceling statement due to statement timeout"
	cases := []struct {
		name        string
		found       Finding
		logs        []LogSet
		changes     []evidence.Change
		scope, want string
	}{
		{"rds postgres log ALTER ROLE", cancel(pgCancel, at("09:20")),
			[]LogSet{dbLog("2026-03-02 09:12:01 UTC:10.0.1.4(4354):dba@app:[305]:LOG:  statement: ALTER ROLE analytics_ro SET statement_timeout = '5s';", at("09:12"))},
			nil, "role analytics_ro", "5s"},
		{"ALTER DATABASE ... SET ... TO", cancel(`{"level":"error","err":"ERROR: canceling statement due to statement timeout (SQLSTATE 57014)"}`, at("11:00")),
			[]LogSet{dbLog(`LOG:  statement: ALTER DATABASE billing SET statement_timeout TO '2s'`, at("10:40"))},
			nil, "database billing", "2s"},
		{"mysql SET GLOBAL max_execution_time", cancel("ERROR 3024 (HY000): Query execution was interrupted, maximum statement execution time exceeded", at("14:10")),
			[]LogSet{dbLog("2026-03-02T14:02:11.123456Z  812 Query\tSET GLOBAL max_execution_time=1000", at("14:02"))},
			nil, "the whole server", "1000"},
		{"parameter group change record", cancel(pgCancel, at("08:30")), nil,
			[]evidence.Change{{Timestamp: at("08:00"), Service: "orders-pg", Kind: "config", Description: "parameter group orders-pg-params: statement_timeout = 3000"}},
			"", "3000"},
		{"setting after the first cancel is not its cause", cancel(pgCancel, at("09:00")),
			[]LogSet{dbLog("LOG:  statement: ALTER ROLE app SET statement_timeout = '30s'", at("09:30"))}, nil, "", ""},
		{"a client's cancel line naming the setting sets nothing", cancel(pgCancel, at("09:20")),
			[]LogSet{{Source: "app", Subject: "invoice-api", Templates: []analysis.LogTemplate{{Example: `{"level": "ERROR", "message": "query exceeded statement_timeout: canceling statement due to statement timeout"}`, FirstSeen: at("09:10")}}}},
			nil, "", ""},
		{"no cancel, only slow statements", cancel("LOG:  duration: 4800.123 ms  statement: SELECT 1", at("09:20")),
			[]LogSet{dbLog("LOG:  statement: ALTER ROLE app SET statement_timeout = '5s'", at("09:00"))}, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, Changes: c.changes}
			f, ok := oneFinding(t, detectTimeoutSet(ev, []Finding{c.found}), c.want != "")
			if !ok {
				return
			}
			if f.fact("timeout_value") != c.want || f.fact("timeout_scope") != c.scope || f.fact("why") == "" {
				t.Fatalf("facts %v", f.Facts)
			}
			if !f.Time.Before(c.found.Time) {
				t.Fatalf("onset %v not at the setting before the cancels %v", f.Time, c.found.Time)
			}
			h := &Hypothesis{Kind: KindSlowQuery, Subject: f.Subject, Primary: []*Finding{&f}}
			if d := slowQuery.describe(h, Scope{}); !strings.Contains(d, c.want) || strings.Contains(d, "missing index") {
				t.Fatalf("describe: %s", d)
			}
		})
	}
}
