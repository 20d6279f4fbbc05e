package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestDiskFull(t *testing.T) {
	testLines(t, diskFull, []lineCase{
		{`2026-03-01 11:40:02.117 UTC [1] PANIC:  could not write to file "pg_wal/xlogtemp.63": No space left on device`, KindDiskFull},
		{`ERROR: could not extend file "base/16384/16402": No space left on device`, KindDiskFull},
		{`Error: ENOSPC: no space left on device, write`, KindDiskFull},
		{`disk usage 41% of 100GiB`, ""},
	})
	h := &Hypothesis{Kind: KindDiskFull, Subject: "postgres", Primary: []*Finding{{Kind: KindDiskFull, Subject: "postgres",
		Facts: map[string]string{"line": `PANIC:  could not write to file "pg_wal/xlogtemp.63": No space left on device`}}}}
	d := describe(h, Scope{})
	if !strings.Contains(d, "postgres ran out of disk space (no space left on device, disk full)") || !strings.Contains(d, "pg_wal") {
		t.Errorf("description %q", d)
	}
	if recs := recommend(h, Scope{}); len(recs) == 0 {
		t.Errorf("no recommendations")
	}
}

// TestDatabasePodDiskFullExplainsCallers checks the chain from a caller
// stuck at start-up to its database: a Postgres pod's own log (not a
// host's) that says its disk is full is what the caller's refused
// connections to "postgresql" at an address are about, and a deploy of
// the caller just before is a coincidence, not the root.
func TestDatabasePodDiskFullExplainsCallers(t *testing.T) {
	db := logSet("catalog-db", false,
		`2026-12-10 13:47:56.602 UTC [29] FATAL:  could not write to file "pg_wal/xlogtemp.29": No space left on device`,
		`2026-12-10 13:47:56.606 UTC [1] LOG:  startup process (PID 29) exited with exit code 1`,
		`2026-12-10 13:47:56.611 UTC [1] LOG:  database system is shut down`)
	client := logSet("search-indexer", false,
		`2026/12/10 13:49:43 migrate: database not reachable after 30s: dial tcp 10.43.87.201:5432: connect: connection refused`)
	fs := DetectLogs([]LogSet{db, client}, win)
	(&gatherer{}).attachServices(fs) // 10.43.87.201:5432 → postgresql
	attachHosts(fs)
	fs = append(fs, DetectChanges([]evidence.Change{{Timestamp: win.Start.Add(-10 * time.Minute), Service: "search-indexer", Kind: "deploy",
		Description: "search-indexer 8.1.0: new migrate init container, reindex job", Revision: "c2e91b0"}}, win)...)
	for _, f := range fs {
		if f.Kind == KindConnRefused && f.Subject != "catalog-db" {
			t.Errorf("refused connections name %q, want catalog-db", f.Subject)
		}
	}
	a := Reason(fs, Scope{Service: "search-indexer", Window: win})
	if a.Healthy || a.Hypotheses[0].Kind != KindDiskFull || a.Hypotheses[0].Subject != "catalog-db" {
		t.Fatalf("root %s on %s, want disk_full on catalog-db", a.Hypotheses[0].Kind, a.Hypotheses[0].Subject)
	}
}
