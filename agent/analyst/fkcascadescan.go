package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A foreign key whose referencing column has no index. PostgreSQL checks
// (or, with ON DELETE CASCADE / SET NULL, applies) a referencing table's
// foreign key for every row deleted from the referenced table with a query
// on the referencing column; without an index on that column each deleted
// row costs a sequential scan of the referencing table. A purge that used
// to take minutes slows down as that table grows, its batches time out or
// its Job runs past its deadline, and the database is busy reading (the
// IOPS people want to raise are a symptom). It is read from EXPLAIN
// ANALYZE of the delete as psql printed it: "Trigger for constraint
// <name>: time=<ms> calls=<n>" taking most of the "Execution Time"; the
// constraint's table and column from \d of the referencing table (its
// "Foreign-key constraints:" and "Indexes:") or the constraint's default
// name (<table>_<column>_fkey), and pg_stat_user_tables' seq_scan counts.
// MySQL's InnoDB indexes a foreign key's column itself, so this is
// PostgreSQL's.

// KindFKCascadeScan is a delete slowed by an unindexed foreign key.
const KindFKCascadeScan Kind = "fk_cascade_scan"

var fkCascadeScan = &mechanism{
	kind:    KindFKCascadeScan,
	class:   classCause,
	label:   "deletes slowed by a foreign key without an index on its referencing column (a sequential scan per deleted row)",
	detect:  detectFKCascadeScan,
	related: relatedToTop(KindFKCascadeScan),
	refines: []Kind{KindJobFailed},
	// The release that added the referencing table or its foreign key.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		ref := h.fact("ref_table")
		return ref != "" && strings.Contains(t, strings.ReplaceAll(ref, "_", " ")) || ref != "" && strings.Contains(t, ref) || matchLine(fkChangeRE, t)
	},
	strictTriggers: true,
	describe:       describeFKCascadeScan,
	recommend:      recommendFKCascadeScan,
}

var (
	// EXPLAIN ANALYZE's per-constraint trigger line.
	fkTriggerRE = regexp.MustCompile(`^\s*Trigger for constraint (\S+?)(?: on (\S+))?: time=([\d.]+) calls=(\d+)`)
	fkExecRE    = regexp.MustCompile(`^\s*Execution Time: ([\d.]+) ms`)
	// \d's header and foreign key line.
	pgTableHeadRE = regexp.MustCompile(`^\s*Table "(?:\w+\.)?(\w+)"`)
	pgFKLineRE    = regexp.MustCompile(`^\s*"(\S+)" FOREIGN KEY \(([^)]+)\) REFERENCES (\w+)\(([^)]*)\)(.*)$`)
	pgIndexLineRE = regexp.MustCompile(`^\s*"(\S+)"(?: PRIMARY KEY,| UNIQUE,| UNIQUE CONSTRAINT,)? \w+ \(([^)]+)\)`)
	fkChangeRE    = regexp.MustCompile(`(?i)foreign key|\bfk\b|on delete cascade|migration|flyway|liquibase|alembic|\bV\d+\b`)
)

// fkScan is what the evidence says of one slow constraint trigger.
type fkScan struct {
	inst, where, source  string
	constraint, parent   string
	table, column, rule  string
	ms, total            float64
	calls                int
	indexes              []string // the referencing table's indexes (their columns)
	seqScans, seqTupRead string
}

func detectFKCascadeScan(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, cmds := range groupSQLCommands(ev.Commands) {
		if s := readFKScan(cmds); s != nil {
			out = append(out, s.finding(ev, found))
		}
	}
	return out
}

func readFKScan(cmds []evidence.CommandOutput) *fkScan {
	inst, where := sqlInstanceOf(cmds[0])
	var lines []string
	for _, c := range cmds {
		lines = append(lines, c.Lines...)
	}
	var best *fkScan
	total := 0.0
	for _, l := range lines {
		if m := fkExecRE.FindStringSubmatch(l); m != nil {
			total, _ = strconv.ParseFloat(m[1], 64)
			if best != nil && best.total == 0 {
				best.total = total
			}
		}
		m := fkTriggerRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		ms, _ := strconv.ParseFloat(m[3], 64)
		calls, _ := strconv.Atoi(m[4])
		if best == nil || ms > best.ms {
			best = &fkScan{inst: shortDBHost(inst), where: where, source: cmds[0].Source, constraint: m[1], parent: m[2], ms: ms, calls: calls}
		}
	}
	// The trigger takes most of the statement's time, and seconds.
	if best == nil || best.ms < 1000 || best.total > 0 && best.ms < 0.5*best.total {
		return nil
	}
	// \d of the referencing table: the constraint's columns and rule, and
	// its indexes.
	table := ""
	section := ""
	tableIdx := map[string][]string{}
	for _, l := range lines {
		if m := pgTableHeadRE.FindStringSubmatch(l); m != nil {
			table, section = m[1], ""
			continue
		}
		t := strings.TrimSpace(l)
		if strings.HasSuffix(t, ":") && l == strings.TrimLeft(l, " \t") {
			section = t
			continue
		}
		if table == "" {
			continue
		}
		switch section {
		case "Indexes:":
			if m := pgIndexLineRE.FindStringSubmatch(l); m != nil {
				tableIdx[table] = append(tableIdx[table], strings.ToLower(m[2]))
			}
		case "Foreign-key constraints:":
			if m := pgFKLineRE.FindStringSubmatch(l); m != nil && m[1] == best.constraint {
				best.table, best.column = table, strings.ToLower(strings.TrimSpace(m[2]))
				best.parent = orWord(best.parent, m[3])
				if r := strings.TrimSpace(m[5]); r != "" {
					best.rule = r
				}
			}
		}
	}
	if best.table == "" {
		// The default name: <table>_<column>_fkey; the table is the
		// longest prefix that a statistics row or \d names.
		name := strings.TrimSuffix(best.constraint, "_fkey")
		for t := range tableIdx {
			if strings.HasPrefix(name, t+"_") && len(t) > len(best.table) {
				best.table, best.column = t, strings.TrimPrefix(name, t+"_")
			}
		}
		if best.table == "" {
			for _, tb := range sqlTables(lines) {
				for r := range tb.rows {
					t := tb.cell(r, "relname")
					if t != "" && strings.HasPrefix(name, t+"_") && len(t) > len(best.table) {
						best.table, best.column = t, strings.TrimPrefix(name, t+"_")
					}
				}
			}
		}
	}
	best.indexes = tableIdx[best.table]
	// An index whose first column is the referencing column serves the
	// check: then the trigger is slow for another reason.
	for _, ix := range best.indexes {
		first, _, _ := strings.Cut(ix, ",")
		if best.column != "" && strings.TrimSpace(first) == best.column {
			return nil
		}
	}
	for _, tb := range sqlTables(lines) {
		for r := range tb.rows {
			if best.table != "" && tb.cell(r, "relname") == best.table {
				best.seqScans, best.seqTupRead = tb.cell(r, "seq_scan"), tb.cell(r, "seq_tup_read")
			}
		}
	}
	return best
}

func (s *fkScan) finding(ev *Gathered, found []Finding) Finding {
	// The client whose deletes it slows: a failing purge Job of the
	// evidence, else the service asked about, else the database.
	subject := ""
	for i := range ev.K8s.Jobs {
		j := &ev.K8s.Jobs[i]
		name := orWord(cronJobOf(j.Name), j.Name)
		if j.Status.Failed > 0 && (matchLine(bulkChangeRE, name) || s.parent != "" && strings.Contains(name, strings.TrimSuffix(s.parent, "s"))) {
			subject = name
			break
		}
	}
	subject = orWord(subject, orWord(ev.Scope.Service, s.inst))
	f := Finding{Kind: KindFKCascadeScan, Subject: subject, Object: "database " + s.inst, Source: SrcLogs,
		Time: ev.Window.End, Severity: SevCritical, Weight: 0.85}
	if s.table != "" && s.column != "" && len(s.indexes) > 0 {
		f.Weight = 0.92
	}
	f.setFact("instance", s.inst)
	f.setFact("constraint", s.constraint)
	f.setFact("parent", s.parent)
	f.setFact("ref_table", s.table)
	f.setFact("column", s.column)
	f.setFact("rule", s.rule)
	f.setFact("trigger_ms", fmt.Sprintf("%.0f", s.ms))
	f.setFact("total_ms", fmt.Sprintf("%.0f", s.total))
	f.setFact("calls", strconv.Itoa(s.calls))
	f.setFact("seq_scans", s.seqScans)
	if len(s.indexes) > 0 {
		f.setFact("indexes", strings.Join(s.indexes, "; "))
	}
	e := fmt.Sprintf("EXPLAIN ANALYZE on %s (%s): Trigger for constraint %s: time=%.0f ms calls=%d", s.where, s.source, s.constraint, s.ms, s.calls)
	if s.total > 0 {
		e += fmt.Sprintf(" of Execution Time %.0f ms (%.0f%%)", s.total, 100*s.ms/s.total)
	}
	f.Evidence = append(f.Evidence, e)
	if s.table != "" && len(s.indexes) > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("\\d %s: indexes on (%s) only, none on %s", s.table, strings.Join(s.indexes, "), ("), s.column))
	}
	if s.seqScans != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("pg_stat_user_tables: %s has seq_scan=%s, seq_tup_read=%s", s.table, s.seqScans, s.seqTupRead))
	}
	if subject != s.inst {
		f.Related = appendNew(f.Related, s.inst)
	}
	f.Summary = fmt.Sprintf("deletes from %s spend %.0f s of %.0f s in the foreign key check %s (no index on %s.%s)", orWord(s.parent, "the referenced table"), s.ms/1000, s.total/1000, s.constraint, orWord(s.table, "?"), orWord(s.column, "?"))
	return f
}

func describeFKCascadeScan(h *Hypothesis, sc Scope) string {
	t, col := orWord(h.fact("ref_table"), "the referencing table"), orWord(h.fact("column"), "its column")
	d := fmt.Sprintf("the deletes of %s on %s are slow because of the foreign key %s from %s(%s)", orWord(h.fact("parent"), "the referenced table"), h.fact("instance"), h.fact("constraint"), t, col)
	d += h.clause(" ", "rule")
	d += fmt.Sprintf(": there is no index on %s.%s, so for every deleted row PostgreSQL runs the constraint's trigger as a sequential scan of %s (EXPLAIN ANALYZE: %s ms in the trigger over %s calls, of %s ms)", t, col, t, h.fact("trigger_ms"), h.fact("calls"), h.fact("total_ms"))
	d += h.wrapped("; its table's indexes cover (", "indexes", ") only")
	d += h.wrapped("; pg_stat_user_tables counts ", "seq_scans", " sequential scans of it")
	d += fmt.Sprintf("; the cost grows with %s, so %s slows down run after run; the disk reads are a symptom, more IOPS or a bigger instance would not remove the scans", t, h.Subject)
	return d
}

func recommendFKCascadeScan(h *Hypothesis, sc Scope, r *recommender) {
	t, col := orWord(h.fact("ref_table"), "the referencing table"), orWord(h.fact("column"), "the foreign key column")
	r.high("Index the foreign key's column: CREATE INDEX CONCURRENTLY ON %s (%s); (as a migration of its own), then re-run %s", t, col, h.Subject)
	r.med("Check with EXPLAIN (ANALYZE, BUFFERS) of one delete batch inside BEGIN … ROLLBACK that the trigger time of %s falls to milliseconds", h.fact("constraint"))
	r.low("Review new foreign keys in migrations for an index on the referencing column (a lint of the schema), and do not resize the database for this")
}
