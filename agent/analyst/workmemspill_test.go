package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// Spills read from psql (an external merge sort, a hash in batches,
// pg_stat_database's temp files), the server log's temporary file lines
// (RDS's log prefix), pg_settings or SHOW work_mem and the parameter
// groups the AWS CLI printed; a large work_mem and no spill are not it.
func TestWorkMemSpill(t *testing.T) {
	end := time.Date(2026, 11, 12, 10, 0, 0, 0, time.UTC)
	settings := []string{
		"   name   | setting | unit | source",
		"----------+---------+------+---------",
		" work_mem |    4096 | kB   | default",
		"(1 row)",
	}
	show := []string{" work_mem ", "----------", " 4MB", "(1 row)"}
	bigShow := []string{" work_mem ", "----------", " 256MB", "(1 row)"}
	sort := []string{
		" Sort  (cost=1.0..2.0 rows=10 width=8) (actual time=9120.1..9800.2 rows=2110442 loops=1)",
		"   Sort Key: o.created_at, ol.id",
		"   Sort Method: external merge  Disk: 812240kB",
	}
	hash := []string{"                     Buckets: 131072 (originally 131072)  Batches: 32 (originally 32)  Memory Usage: 8187kB"}
	stats := []string{
		" datname | temp_files | temp_bytes",
		"---------+------------+------------",
		" reports |      48211 | 3912 GB",
		"(1 row)",
	}
	logLine := `2026-11-12 09:11:20 UTC:10.20.3.41(44120):reports_api@reports:[18220]:LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp18220.19", size 1073741824`
	groups := []evidence.CommandOutput{
		{Run: `aws rds describe-db-parameters --db-parameter-group-name reports-pg15 --query "Parameters[?ParameterName=='work_mem']"`, Lines: []string{`[`, `  {`, `    "ParameterName": "work_mem",`, `    "ParameterValue": "262144",`, `  }`, `]`}},
		{Run: `aws rds describe-db-parameters --db-parameter-group-name reports-pg15-v2 --source user --query "Parameters[?ParameterName=='work_mem']"`, Lines: []string{`[]`}},
	}
	for _, tc := range []struct {
		name  string
		psql  string
		lines []string
		logs  bool
		extra []evidence.CommandOutput
		want  []string // nil: no finding
	}{
		{"pg_settings, external merge, temp stats", `psql "host=reports-db.abc.eu-central-1.rds.amazonaws.com dbname=reports user=dba"`, append(append(append([]string{}, settings...), sort...), stats...), false, nil,
			[]string{"work_mem is 4MB, source default", "spill to temporary files", "48211 files, 3912 GB"}},
		{"SHOW work_mem, a hash in batches, the server log, parameter groups", "psql -h reports-db -U dba reports", append(append([]string{}, show...), hash...), true, groups,
			[]string{"work_mem is 4MB", "reports-pg15: work_mem 262144kB", "reports-pg15-v2: work_mem not set"}},
		{"a large work_mem", "psql -h reports-db -U dba reports", append(append([]string{}, bigShow...), sort...), false, nil, nil},
		{"no spill", "psql postgres://dba@reports-db:5432/reports", append([]string{}, settings...), false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gathered{Window: Window{Start: end.Add(-2 * time.Hour), End: end}, Scope: Scope{Service: "reports-api"}}
			g.Commands = append([]evidence.CommandOutput{{Command: tc.psql, Run: tc.psql, Lines: tc.lines, Source: "psql.txt:1"}}, tc.extra...)
			if tc.logs {
				g.Logs = []LogSet{{Source: "reports-db", Subject: "reports-db", Templates: []analysis.LogTemplate{{Example: logLine, Count: 6, Incident: 6, FirstIncident: end.Add(-50 * time.Minute)}}}}
			}
			fs := detectWorkMemSpill(g, nil)
			if tc.want == nil {
				onlyFinding(t, fs, "")
				return
			}
			f := onlyFinding(t, fs, "reports-api")
			if f.fact("instance") != "reports-db" {
				t.Errorf("instance %q", f.fact("instance"))
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := workMemSpill.describe(h, Scope{})
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
