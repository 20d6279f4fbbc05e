package analyst

import (
	"strings"
	"testing"
	"time"
)

func TestReadOnlyWrites(t *testing.T) {
	cases := []struct {
		name    string
		sets    []LogSet
		subject string // "" for no finding
		engine  string
		standby bool
	}{
		{"PostgreSQL writer demoted after a failover, its own log confirms",
			[]LogSet{
				minedSet("orders-api", false, 0,
					`Traceback (most recent call last):`,
					`psycopg2.errors.ReadOnlySqlTransaction: cannot execute INSERT in a read-only transaction`,
					`sqlalchemy.exc.InternalError: (psycopg2.errors.ReadOnlySqlTransaction) cannot execute INSERT in a read-only transaction`),
				minedSet("orders-db-instance-1", true, -time.Minute,
					`2026-11-13 02:10:52 UTC::@:[412]:LOG:  received fast shutdown request`,
					`2026-11-13 02:11:03 UTC::@:[511]:LOG:  entering standby mode`,
					`2026-11-13 02:11:04 UTC::@:[503]:LOG:  database system is ready to accept read-only connections`,
					`2026-11-13 02:11:48 UTC:10.30.2.77(44516):orders_app@orders:[22256]:ERROR:  cannot execute INSERT in a read-only transaction`),
			}, "orders-db-instance-1", "PostgreSQL database", true},
		{"MySQL replica, client only",
			[]LogSet{minedSet("billing-api", false, 0,
				`2024-04-02T03:11:09Z ERROR charge failed: Error 1290 (HY000): The MySQL server is running with the --read-only option so it cannot execute this statement`)},
			"MySQL database", "MySQL database", false},
		{"Redis replica",
			[]LogSet{minedSet("session-api", false, 0,
				`2024-04-02T03:11:09Z ERROR save session: READONLY You can't write against a read only replica.`)},
			"Redis", "Redis", false},
		{"reads from a replica on purpose are no failure",
			[]LogSet{minedSet("report-api", false, 0,
				`2024-04-02T03:11:09Z INFO opened reporting pool against replica db-ro.internal:5432 (default_transaction_read_only=on)`)},
			"", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectReadOnlyWrites(&Gathered{Logs: c.sets, Window: win}, nil)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("findings: %+v", fs)
			}
			f := fs[0]
			if f.Subject != c.subject || f.fact("engine") != c.engine || (f.fact("standby") != "") != c.standby {
				t.Errorf("subject %q engine %q standby %q; want %q %q %v", f.Subject, f.fact("engine"), f.fact("standby"), c.subject, c.engine, c.standby)
			}
			d := readOnlyDB.describe(&Hypothesis{Kind: KindReadOnlyDB, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range []string{"read-only", "replica", "writer"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if c.standby && !strings.Contains(d, "failover") {
				t.Errorf("description lacks the failover: %s", d)
			}
		})
	}
}
