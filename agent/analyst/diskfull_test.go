package analyst

import (
	"strings"
	"testing"
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
