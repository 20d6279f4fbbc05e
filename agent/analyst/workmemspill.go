package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Sorts and hashes spilling to disk because PostgreSQL's work_mem is
// small. Each sort, hash join and hash aggregate may use work_mem of
// memory before it writes temporary files; when work_mem falls (a new
// parameter group that no longer sets it, so the 4MB default applies; an
// ALTER SYSTEM; a role setting), reports and exports that sorted in memory
// spill gigabytes to disk: the database's read/write IOPS rise, its CPU
// does not, and statements run several times longer or hit the statement
// timeout. A bigger instance does not help. It is read from EXPLAIN
// ANALYZE ("Sort Method: external merge  Disk: …kB", a Hash's "Batches:
// 32", a HashAggregate's "Disk Usage"), the server log's "temporary file:
// path …, size …" lines (log_temp_files), pg_stat_database's temp_files
// and temp_bytes, and the setting itself (pg_settings' work_mem row with
// its source, SHOW work_mem, the parameter groups' work_mem as the AWS CLI
// printed them); a change of the database's parameter group or work_mem
// dates it.

// KindWorkMemSpill is sorts and hashes spilling to temporary files.
const KindWorkMemSpill Kind = "work_mem_spill"

var workMemSpill = &mechanism{
	kind:    KindWorkMemSpill,
	class:   classCause,
	label:   "sorts and hash joins spilling to temporary files on disk (work_mem too small)",
	detect:  detectWorkMemSpill,
	related: relatedToTop(KindWorkMemSpill),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(workMemChangeRE, changeText(c))
	},
	strictTriggers: true,
	describe:       describeWorkMemSpill,
	recommend:      recommendWorkMemSpill,
}

var (
	workMemChangeRE = regexp.MustCompile(`(?i)work_mem|parameter group|parameter-group|db parameter|postgresql\.conf|alter system`)
	externalSortRE  = regexp.MustCompile(`Sort Method: external (?:merge|sort)\s+Disk: (\d+)kB`)
	hashBatchesRE   = regexp.MustCompile(`Batches: (\d+)(?: \(originally \d+\))?\s+(?:Memory Usage: \d+kB\s+)?(?:Disk Usage: (\d+)kB)?`)
	tempFileLogRE   = regexp.MustCompile(`temporary file: path "?[^",]+"?, size (\d+)`)
	awsParamGroupRE = regexp.MustCompile(`--db-(?:cluster-)?parameter-group-name[= ](\S+)`)
	awsParamValueRE = regexp.MustCompile(`"ParameterValue":\s*"(\d+)"`)
	pgLogUserRE     = regexp.MustCompile(`:(\w+)@\w+:\[\d+\]:`)
)

// spill is what the evidence says of one instance's temporary files.
type spill struct {
	inst, where, source string
	signs               []string // the evidence of spills
	workMem, wmSource   string   // pg_settings' work_mem (kB) and its source
	groups              map[string]string
	groupOrder          []string
	tempFiles           string
	user                string
	first               time.Time
}

func detectWorkMemSpill(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	for _, cmds := range groupSQLCommands(ev.Commands) {
		s := readSpill(cmds, ev)
		if s == nil {
			continue
		}
		out = append(out, s.finding(ev))
	}
	return out
}

func readSpill(cmds []evidence.CommandOutput, ev *Gathered) *spill {
	inst, where := sqlInstanceOf(cmds[0])
	s := &spill{inst: shortDBHost(inst), where: where, source: cmds[0].Source, groups: map[string]string{}}
	var lines []string
	for _, c := range cmds {
		lines = append(lines, c.Lines...)
	}
	ext, batches := 0, 0
	for _, l := range lines {
		if m := externalSortRE.FindStringSubmatch(l); m != nil {
			ext++
			if ext == 1 {
				s.signs = append(s.signs, fmt.Sprintf("EXPLAIN ANALYZE: %s", strings.TrimSpace(l)))
			}
		}
		if m := hashBatchesRE.FindStringSubmatch(l); m != nil {
			if n, _ := strconv.Atoi(m[1]); n > 1 {
				batches++
				if batches == 1 {
					s.signs = append(s.signs, fmt.Sprintf("EXPLAIN ANALYZE: a hash in %d batches (it did not fit in work_mem and spilled to temporary files): %s", n, strings.TrimSpace(l)))
				}
			}
		}
	}
	for _, t := range sqlTables(lines) {
		for r := range t.rows {
			if strings.EqualFold(t.cell(r, "name"), "work_mem") && t.cell(r, "setting") != "" {
				s.workMem, s.wmSource = t.cell(r, "setting"), t.cell(r, "source")
			}
			if len(t.cols) == 1 && t.cols[0] == "work_mem" {
				s.workMem = showToKB(t.cell(r, "work_mem")) // SHOW work_mem: "4MB"
			}
			if n := nullCell(t.cell(r, "temp_files")); n != "" && n != "0" {
				s.tempFiles = n
				if b := t.cell(r, "temp_bytes"); b != "" {
					s.tempFiles += " files, " + b
				}
				s.signs = append(s.signs, fmt.Sprintf("pg_stat_database: temp_files=%s, temp_bytes=%s", n, t.cell(r, "temp_bytes")))
			}
		}
	}
	// The parameter groups' work_mem as the AWS CLI printed them (an empty
	// answer: the group does not set it).
	for _, c := range ev.Commands {
		m := findSubmatch(awsParamGroupRE, c.Run)
		if m == nil || !strings.Contains(c.Run, "work_mem") {
			continue
		}
		g := strings.Trim(m[1], `"'`)
		v := "not set (the engine default)"
		for _, l := range c.Lines {
			if vm := awsParamValueRE.FindStringSubmatch(l); vm != nil {
				v = vm[1] + "kB"
			}
		}
		if _, ok := s.groups[g]; !ok {
			s.groupOrder = append(s.groupOrder, g)
		}
		s.groups[g] = v
	}
	// The server's log of temporary files.
	logged, size := 0, 0.0
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			m := findSubmatch(tempFileLogRE, t.Example)
			if m == nil {
				continue
			}
			n := max(t.Count, 1)
			logged += n
			b, _ := strconv.ParseFloat(m[1], 64)
			size = max(size, b)
			at := orTime(t.FirstIncident, t.FirstSeen)
			if !at.IsZero() && (s.first.IsZero() || at.Before(s.first)) {
				s.first = at
			}
			if u := findSubmatch(pgLogUserRE, t.Example); u != nil && s.user == "" {
				s.user = u[1]
			}
		}
	}
	if logged > 0 {
		s.signs = append(s.signs, fmt.Sprintf("the server log records %d temporary files (log_temp_files), up to %.0f MB each", logged, size/1e6))
	}
	if len(s.signs) == 0 {
		return nil
	}
	// A small work_mem, or a change of the setting named.
	kb, _ := strconv.Atoi(s.workMem)
	small := s.workMem != "" && kb > 0 && kb <= 8192
	if !small && len(s.groups) == 0 {
		return nil
	}
	return s
}

func (s *spill) finding(ev *Gathered) Finding {
	subject := ""
	if svc := ev.Scope.Service; svc != "" {
		subject = svc
	} else if s.user != "" {
		subject = strings.ReplaceAll(s.user, "_", "-")
	}
	subject = orWord(subject, s.inst)
	f := Finding{Kind: KindWorkMemSpill, Subject: subject, Object: "database " + s.inst, Source: SrcLogs,
		Time: orTime(s.first, ev.Window.End), Severity: SevCritical, Weight: 0.88}
	f.setFact("instance", s.inst)
	f.setFact("work_mem", s.workMem)
	f.setFact("work_mem_source", s.wmSource)
	f.setFact("temp", s.tempFiles)
	var gs []string
	for _, g := range s.groupOrder {
		gs = append(gs, fmt.Sprintf("%s: work_mem %s", g, s.groups[g]))
	}
	if len(gs) > 0 {
		f.setFact("groups", strings.Join(gs, "; "))
		f.Evidence = append(f.Evidence, "aws rds describe-db-parameters: "+strings.Join(gs, "; "))
		f.Weight = 0.92
	}
	f.Evidence = append(f.Evidence, s.signs...)
	if s.workMem != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("pg_settings on %s: work_mem = %s kB (source: %s)", s.where, s.workMem, orWord(s.wmSource, "?")))
	}
	// The change that set it: of the instance, naming its parameter group
	// or work_mem.
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if (c.Service == s.inst || strings.Contains(c.Description, s.inst)) && matchLine(workMemChangeRE, c.Description) {
			f.setFact("cause_at", c.Timestamp.UTC().Format(time.RFC3339))
			f.setFact("cause_event", fmt.Sprintf("change to %s: %s", s.inst, quote(c.Description, 200)))
			f.setFact("cause_change", fmt.Sprintf("%s (%s, %s)", quote(c.Description, 200), c.Kind, c.Timestamp.UTC().Format("2006-01-02 15:04 UTC")))
		}
	}
	if subject != s.inst {
		f.Related = appendNew(f.Related, s.inst)
	}
	f.Summary = fmt.Sprintf("sorts and hashes on %s spill to temporary files (work_mem %s)", s.inst, orWord(kbWords(s.workMem), "small"))
	return f
}

// showToKB reads a size SHOW prints ("4MB", "64kB", "1GB") in kB.
func showToKB(v string) string {
	v = strings.TrimSpace(v)
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"kB", 1}, {"MB", 1024}, {"GB", 1024 * 1024}} {
		if n, err := strconv.Atoi(strings.TrimSuffix(v, u.suffix)); err == nil && strings.HasSuffix(v, u.suffix) {
			return strconv.Itoa(n * u.mult)
		}
	}
	return v
}

// kbWords writes a kB setting as people say it ("4096" → "4MB").
func kbWords(kb string) string {
	n, err := strconv.Atoi(kb)
	if err != nil || n <= 0 {
		return kb
	}
	if n%1024 == 0 {
		return fmt.Sprintf("%dMB", n/1024)
	}
	return fmt.Sprintf("%dkB", n)
}

func describeWorkMemSpill(h *Hypothesis, sc Scope) string {
	inst := h.fact("instance")
	d := fmt.Sprintf("sorts, hash joins and aggregations on %s no longer fit in work_mem", inst)
	if wm := h.fact("work_mem"); wm != "" {
		d += fmt.Sprintf(" (work_mem is %s", kbWords(wm))
		d += h.clause(", source ", "work_mem_source")
		d += ")"
	}
	d += " and spill to temporary files on disk (external merge sorts, multi-batch hashes)"
	d += h.wrapped(": ", "temp", " written since the statistics were reset")
	d += h.wrapped("; the parameter groups say ", "groups", "")
	d += h.wrapped("; the setting fell with the change ", "cause_change", "")
	d += fmt.Sprintf("; the temporary file I/O is what raised the database's IOPS and slowed %s's queries several-fold (its CPU is not the limit), so a bigger instance would not help", h.Subject)
	return d
}

func recommendWorkMemSpill(h *Hypothesis, sc Scope, r *recommender) {
	inst := h.fact("instance")
	if g := h.fact("groups"); g != "" {
		r.high("Set work_mem back on %s's parameter group to the value the previous group had (%s); it is dynamic, no reboot needed", inst, g)
	} else {
		r.high("Raise work_mem on %s (its parameter group or ALTER SYSTEM / ALTER ROLE for the reporting user) to what the reports need", inst)
	}
	r.med("Check with EXPLAIN (ANALYZE, BUFFERS) of a slow report that its sorts say Memory, not external merge Disk, and that pg_stat_database.temp_bytes stops growing")
	r.low("Compare parameter groups before moving a database to a new one, and alert on temp_bytes")
}
