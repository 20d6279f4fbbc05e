package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// EXPLAIN ANALYZE of a delete as psql prints it, PostgreSQL 16 (the
// trigger line without its table) and 12 with several tables ("on
// <table>"), with \d of the referencing table or only the constraint's
// default name and pg_stat_user_tables; an index on the column, or a
// trigger that takes little of the statement, is not it.
func TestFKCascadeScan(t *testing.T) {
	end := time.Date(2026, 11, 25, 9, 20, 0, 0, time.UTC)
	explain16 := []string{
		" Delete on orders  (cost=0.43..2104.95 rows=0 width=0) (actual time=14.882..14.884 rows=0 loops=1)",
		"   ->  Index Scan using orders_created_idx on orders  (cost=0.43..2104.95 rows=500 width=6) (actual time=0.031..1.206 rows=500 loops=1)",
		" Planning Time: 0.388 ms",
		" Trigger for constraint order_lines_order_id_fkey: time=88.104 calls=500",
		" Trigger for constraint order_audit_order_id_fkey: time=41522.870 calls=500",
		" Execution Time: 41640.311 ms",
		"(6 rows)",
	}
	explain12 := []string{
		" Delete on orders  (cost=0.43..2104.95 rows=0 width=0) (actual time=14.882..14.884 rows=0 loops=1)",
		" Trigger for constraint order_audit_order_id_fkey on order_audit: time=9120.5 calls=200",
		" Execution Time: 9200.0 ms",
	}
	describe := func(idx string) []string {
		return []string{
			`                 Table "public.order_audit"`,
			"   Column   |  Type  | Collation | Nullable | Default",
			"------------+--------+-----------+----------+---------",
			" id         | bigint |           | not null |",
			" order_id   | bigint |           | not null |",
			"Indexes:",
			`    "order_audit_pkey" PRIMARY KEY, btree (id)`,
			idx,
			"Foreign-key constraints:",
			`    "order_audit_order_id_fkey" FOREIGN KEY (order_id) REFERENCES orders(id) ON DELETE CASCADE`,
		}
	}
	stats := []string{
		"   relname   | n_live_tup | seq_scan | seq_tup_read",
		"-------------+------------+----------+--------------",
		" order_audit |    1012233 |   871442 | 821004338120",
		" orders      |    2209871 |        3 |      6629613",
		"(2 rows)",
	}
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string // nil: no finding
	}{
		{"pg16 with \\d", append(append(slices2(explain16), describe(`    "order_audit_at_idx" btree (created_at)`)...), stats...),
			[]string{"foreign key order_audit_order_id_fkey from order_audit(order_id) ON DELETE CASCADE", "no index on order_audit.order_id", "sequential scan", "871442"}},
		{"pg12, the constraint's default name and statistics", append(slices2(explain12), stats...),
			[]string{"order_audit(order_id)", "no index on order_audit.order_id"}},
		{"an index on the column", append(slices2(explain16), describe(`    "order_audit_order_id_idx" btree (order_id, created_at)`)...), nil},
		{"a fast trigger", []string{" Trigger for constraint order_audit_order_id_fkey: time=12.3 calls=500", " Execution Time: 3000.0 ms"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gathered{Window: Window{Start: end.Add(-time.Hour), End: end}}
			g.Commands = []evidence.CommandOutput{{Command: "psql -h shop-db.internal -U dba shop", Run: "psql -h shop-db.internal -U dba shop", Lines: tc.lines, Source: "psql.txt:1"}}
			fs := detectFKCascadeScan(g, nil)
			if tc.want == nil {
				onlyFinding(t, fs, "")
				return
			}
			f := onlyFinding(t, fs, "shop-db")
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := fkCascadeScan.describe(h, Scope{})
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

func slices2(s []string) []string { return append([]string(nil), s...) }
