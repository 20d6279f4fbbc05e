package analyst

import (
	"strings"
	"testing"
)

// TestCauseLineNotHeader: the line a failed run's log says why with is
// the most specific message (the exception with its host, key or value),
// never the header that introduces it ("Caused by:" alone, "rake
// aborted!", Python's chained-exception banner) nor a stack frame or a
// runner's trailer, in the formats Ruby, Python, Node, Go and the JVM
// print.
func TestCauseLineNotHeader(t *testing.T) {
	cases := []struct {
		name  string
		log   string
		want  string // a part of the line chosen
		never []string
	}{
		{"ruby rake, cause on the line after a bare Caused by", `I, [2026-11-19T02:01:54.207713 #1]  INFO -- : [sync] run started
E, [2026-11-19T02:01:55.740388 #1] ERROR -- : [sync] database connection failed (try 3/3): could not translate host name "pg-main.db.svc.cluster.local" to address: Name or service not known
rake aborted!
ActiveRecord::ConnectionNotEstablished: could not translate host name "pg-main.db.svc.cluster.local" to address: Name or service not known (ActiveRecord::ConnectionNotEstablished)
/usr/local/bundle/gems/activerecord-7.1.5/lib/active_record/connection_adapters/postgresql_adapter.rb:59:in ` + "`" + `rescue in new_client'
/app/lib/tasks/sync.rake:14:in ` + "`" + `block (2 levels) in <main>'

Caused by:
PG::ConnectionBad: could not translate host name "pg-main.db.svc.cluster.local" to address: Name or service not known (PG::ConnectionBad)
/usr/local/bundle/gems/pg-1.5.9/lib/pg/connection.rb:701:in ` + "`" + `async_connect_or_reset'
Tasks: TOP => sync:run
(See full trace by running task with --trace)`, "pg-main.db.svc.cluster.local", []string{"Caused by:", "rake aborted!", "Tasks: TOP", "See full trace"}},
		{"python chained exceptions", `Traceback (most recent call last):
  File "/app/export.py", line 41, in run
    conn = psycopg2.connect(dsn)
psycopg2.OperationalError: could not translate host name "reports-db" to address: Temporary failure in name resolution

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/app/main.py", line 12, in <module>
    run()
RuntimeError: export failed`, `"reports-db"`, []string{"The above exception", "Traceback"}},
		{"node stack", `Error: getaddrinfo ENOTFOUND search-primary.search.svc.cluster.local
    at GetAddrInfoReqWrap.onlookup [as oncomplete] (node:dns:107:26)
    at /app/node_modules/pg-pool/index.js:45:11
    at async Indexer.run (/app/src/indexer.js:88:5)`, "search-primary.search.svc.cluster.local", []string{"    at "}},
		{"go panic with frames", `2026/11/19 02:01:55 starting warm-up
panic: dial tcp: lookup cache-main.cache.svc.cluster.local on 10.96.0.10:53: no such host

goroutine 1 [running]:
main.main()
	/src/cmd/warm/main.go:57 +0x1d4`, "cache-main.cache.svc.cluster.local", []string{"goroutine", "main.go:57"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := bestCauseLine(strings.Split(c.log, "\n"))
			if !strings.Contains(got, c.want) {
				t.Errorf("chose %q, want the line naming %q", got, c.want)
			}
			for _, n := range c.never {
				if strings.HasPrefix(strings.TrimSpace(got), strings.TrimSpace(n)) || strings.Contains(got, n) && n != "    at " {
					t.Errorf("chose a header or frame: %q", got)
				}
			}
		})
	}
	for _, l := range []string{"Caused by:", "rake aborted!", "Tasks: TOP => feeds:import", "/app/lib/tasks/feeds.rake:14:in `block (2 levels) in <main>'",
		"    at async Indexer.run (/app/src/indexer.js:88:5)", "\t/src/cmd/warm/main.go:57 +0x1d4", "During handling of the above exception, another exception occurred:"} {
		if s := RootCauseScore(l); s >= 0 {
			t.Errorf("RootCauseScore(%q) = %d, want a header's -1", l, s)
		}
	}
	if s := RootCauseScore(`PG::ConnectionBad: could not translate host name "x" to address: Name or service not known (PG::ConnectionBad)`); s != 3 {
		t.Errorf("a Ruby exception line scores %d, want 3", s)
	}
}
