package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A query that names a column its source table no longer has, because
// the source was renamed upstream. A transformation job (a dbt model, a
// Spark or SQL job, a report query) reads a table that another system
// owns and reloads: when that system's release renames a column
// (total_amount becomes total_amount_minor in a migration), the loader
// recreates the table from the new schema and every query naming the old
// column fails to compile, in each engine's words (Snowflake's 000904
// "invalid identifier 'X'", BigQuery's "Unrecognized name: x", Spark's
// UNRESOLVED_COLUMN with its "Did you mean" list, PostgreSQL's and
// Redshift's `column "x" does not exist`, Trino's "Column 'x' cannot be
// resolved"), so the job fails run after run and all that depends on it
// is skipped. The warehouse is fine. The answer names the query and the
// column, the column that replaced it (read from a loader's log, a
// column listing or the engine's suggestion) and the upstream change
// that renamed it; it differs from code ahead of its own migration
// (schemamissing.go): here the schema moved on and the reader did not.

// KindSchemaDrift is a query naming a column its source renamed.
const KindSchemaDrift Kind = "schema_drift"

var schemaDrift = &mechanism{
	kind:   KindSchemaDrift,
	class:  classCause,
	label:  "query naming a column its source table renamed (upstream schema change)",
	detect: detectSchemaDrift,
	// The failed runs of the job whose query it is belong to it.
	related: exceptOwnAndChanges(KindSchemaDrift, func(h *Hypothesis, f *Finding) bool {
		top := h.top()
		return f.Subject == top.Subject || slices.Contains(top.Related, f.Subject)
	}),
	// Only the change that renamed the column triggers it (a migration, a
	// schema change of the source); a deploy of the reader that did not
	// touch the query is a coincidence.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.fact("upstream_service") || matchLine(migrationChangeRE, changeText(c)) || strings.Contains(changeText(c), "renam")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s fails on every run because its query %sselects the column %s, which its source table no longer has",
			h.Subject, h.wrapped("(", "model", ") "), h.fact("column"))
		if l := h.fact("line"); l != "" {
			d += " (" + quote(ReadableLine(l), 160) + ")"
		}
		if n := h.fact("successor"); n != "" {
			d += fmt.Sprintf(": the column was renamed upstream to %s", n)
			d += h.wrapped(" (", "successor_where", ")")
		}
		if c := h.fact("upstream_change"); c != "" {
			d += "; the rename came with " + c
		}
		d += ", so the query no longer compiles and what depends on it is skipped; the warehouse itself is up"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		col, succ := h.fact("column"), orWord(h.fact("successor"), "its new name")
		r.high("Update the query %s to read %s instead of %s (convert units if the new column changed them), then re-run %s and what it skipped", orWord(h.fact("model"), "of "+h.Subject), succ, col, h.Subject)
		r.med("Or have the loader keep the old column (a view or an alias %s AS %s) until the readers are updated", succ, col)
		r.low("Add a source contract or a schema test on the source table (dbt source freshness and column tests, a schema registry check) so an upstream rename fails its release, not the nightly run")
	},
}

var (
	// A query engine saying a column does not exist, with the column.
	driftColumnRE = []*regexp.Regexp{
		regexp.MustCompile(`(?i)invalid identifier '(?:[\w$]+\.)?"?([\w$]+)"?'`),
		regexp.MustCompile(`(?i)Unrecognized name: ([\w$]+)`),
		regexp.MustCompile("(?i)UNRESOLVED_COLUMN[^\\]]*\\][^\\x60]*\\x60(?:[\\w$]+\\x60\\.\\x60)?([\\w$]+)\\x60"),
		regexp.MustCompile("(?i)cannot resolve '\\x60?(?:[\\w$]+\\.)?([\\w$]+)\\x60?' given input columns"),
		regexp.MustCompile(`(?i)column "?(?:[\w$]+\.)?([\w$]+)"? does not exist`),
		regexp.MustCompile(`(?i)Column '(?:[\w$]+\.)?([\w$]+)' cannot be resolved`),
		regexp.MustCompile(`(?i)Unknown column '(?:[\w$]+\.)?([\w$]+)' in 'field list'`),
	}
	// The model or query a failing run names (dbt, a SQL runner).
	driftModelRE = regexp.MustCompile(`(?i)\b(?:Database|Compilation|Runtime) Error in (?:model|snapshot|test|seed) ([\w.]+)|\bfailed (?:query|model) ([\w.]+)`)
	// A change that reshapes a source's schema.
	driftChangeRE = regexp.MustCompile(`(?i)migrat|schema|renam|column|\bddl\b`)
)

// driftColumn reads the missing column from a line.
func driftColumn(line string) string {
	c, _ := driftColumnOf(line)
	return c
}

// driftColumnOf reads the missing column from a line, and whether the
// words are an analytical engine's (Snowflake, BigQuery, Spark), whose
// queries read tables others load, rather than an OLTP database's, whose
// missing column is as often code ahead of its own migration.
func driftColumnOf(line string) (string, bool) {
	for i, re := range driftColumnRE {
		if m := findSubmatch(re, line); m != nil {
			return m[1], i < 4
		}
	}
	return "", false
}

// successorRE finds names that extend a column (X_MINOR, X_V2, NEW_X).
func successorRE(col string) *regexp.Regexp {
	q := regexp.QuoteMeta(col)
	return regexp.MustCompile(`(?i)(?:^|[^\w$])((?:[a-z][a-z0-9]*_)+` + q + `|` + q + `(?:_[a-z][a-z0-9]*)+)(?:[^\w$]|$)`)
}

func detectSchemaDrift(ev *Gathered, _ []Finding) []Finding {
	var set *LogSet
	var line, col, model string
	var at time.Time
	analytical := false
	for x := range incidentMatches(ev, regexp.MustCompile(`(?i)invalid identifier|Unrecognized name|UNRESOLVED_COLUMN|given input columns|does not exist|cannot be resolved|Unknown column`)) {
		c, an := driftColumnOf(x.line)
		if c == "" || len(c) < 4 || x.set.Host || matchLine(pgAnyServerLineRE, x.line) {
			continue
		}
		if matchLine(migrationWordRE, x.set.Source) {
			continue
		}
		if col == "" {
			set, line, col, analytical = x.set, x.line, c, an
			at = firstOf(x.t.FirstIncident, x.t.FirstSeen)
		}
		if strings.EqualFold(c, col) {
			at = earliest(at, firstOf(x.t.FirstIncident, x.t.FirstSeen))
		}
	}
	if col == "" {
		return nil
	}
	// The column that replaced it: the engine's own suggestion, a
	// loader's log of the columns it created, a listing of the table's
	// columns. A line that also names the old column as a column of its
	// own does not say it is gone.
	succRE := successorRE(col)
	oldRE := regexp.MustCompile(`(?i)(?:^|[^\w$])` + regexp.QuoteMeta(col) + `(?:[^\w$]|$)`)
	successor, where, listed := "", "", false
	if i := strings.Index(strings.ToLower(line), "did you mean"); i >= 0 {
		if m := findSubmatch(succRE, line[i:]); m != nil {
			successor, where = m[1], "the engine suggests it"
		}
	}
	for i := range ev.Logs {
		if successor != "" {
			break
		}
		s := &ev.Logs[i]
		for _, t := range s.Templates {
			l := t.Example
			if driftColumn(l) != "" {
				continue
			}
			if m := findSubmatch(succRE, l); m != nil && !matchLine(oldRE, strings.ReplaceAll(l, m[1], "")) {
				successor, where = m[1], fmt.Sprintf("the log of %s: %s", s.Subject, quote(ReadableLine(l), 200))
				break
			}
		}
	}
	for _, c := range ev.Commands {
		if successor != "" {
			break
		}
		for _, l := range c.Lines {
			if m := findSubmatch(succRE, l); m != nil && driftColumn(l) == "" && !matchLine(oldRE, strings.ReplaceAll(l, m[1], "")) {
				successor, where, listed = m[1], fmt.Sprintf("%s lists %s", truncate(c.Command, 120), m[1]), true
				break
			}
		}
	}
	// Without the column that replaced it, a missing column is as well
	// code ahead of its migration (schemamissing.go): not this cause.
	if successor == "" {
		return nil
	}
	for _, t := range set.Templates {
		if m := findSubmatch(driftModelRE, t.Example); m != nil {
			model = orWord(m[1], m[2])
			break
		}
	}
	// The runs that failed on it: a Job's pod whose log it is, and the
	// other failed runs of its CronJob; the first of them is the onset
	// (a tail of the log often carries no date).
	var jobs []Finding
	cronjob := ""
	for _, j := range detectFailedJobs(ev.K8s, ev.Logs) {
		if p := j.fact("pod"); p != "" && (p == set.Subject || p == set.Source) || j.fact("job") != "" && strings.HasPrefix(set.Source, j.fact("job")) {
			cronjob = j.fact("cronjob")
			jobs = append(jobs, j)
		}
	}
	if cronjob != "" {
		for _, j := range detectFailedJobs(ev.K8s, ev.Logs) {
			if j.fact("cronjob") == cronjob && !slices.ContainsFunc(jobs, func(x Finding) bool { return x.fact("job") == j.fact("job") }) {
				jobs = append(jobs, j)
			}
		}
	}
	// An OLTP database's missing column read by a service may as well be
	// code ahead of its own migration or a column dropped under old code:
	// only a batch run's query, or a listing of the table, says the
	// source moved on.
	if !analytical && len(jobs) == 0 && !listed {
		return nil
	}
	current := false
	for _, j := range jobs {
		if !j.Time.IsZero() && j.Time.Before(at) {
			at = j.Time
		}
		// The last run failed: the failure is the job's current state
		// however long ago it began.
		current = current || j.fact("current") != ""
	}
	subject := set.Subject
	if cronjob != "" {
		subject = cronjob
	}
	if s := ev.Scope.Service; s != "" && strings.HasPrefix(subject, s) {
		subject = s
	}
	f := Finding{Kind: KindSchemaDrift, Subject: subject, Object: "query of " + subject, Namespace: orWord(set.Namespace, ev.Scope.Namespace), Time: at,
		Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	if subject != set.Subject {
		f.Related = append(f.Related, set.Subject)
	}
	if current {
		f.setFact("current", "true")
	}
	f.setFact("column", col)
	f.setFact("successor", successor)
	f.setFact("model", model)
	f.setFact("line", line)
	f.Evidence = append(f.Evidence, fmt.Sprintf("log of %s: %s", set.Subject, quote(ReadableLine(line), 200)))
	if strings.HasPrefix(where, "the log of ") || strings.Contains(where, " lists ") {
		f.Evidence = append(f.Evidence, "the source table now has "+successor+" instead: "+where)
	} else {
		f.setFact("successor_where", where)
	}
	// The upstream change that renamed it: the latest one before the
	// first failure that reshapes a schema, preferring one that names the
	// new column's words.
	suffix := strings.ToLower(strings.Trim(strings.Replace(strings.ToLower(successor), strings.ToLower(col), "", 1), "_"))
	var best *Finding
	bestScore := 0
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if !at.IsZero() && c.Timestamp.After(at) {
			continue
		}
		text := strings.ToLower(c.Description + " " + c.Revision)
		score := 0
		if matchLine(driftChangeRE, text) {
			score += 2
		}
		for _, w := range strings.Split(suffix, "_") {
			if len(w) >= 3 && strings.Contains(text, w) {
				score++
			}
		}
		if score >= 2 && score >= bestScore {
			cf := Finding{Subject: c.Service, Time: c.Timestamp}
			cf.setFact("description", c.Description)
			cf.setFact("revision", c.Revision)
			best, bestScore = &cf, score
		}
	}
	if best != nil {
		f.setFact("upstream_service", best.Subject)
		f.setFact("upstream_change", fmt.Sprintf("%s's change at %s: %s", best.Subject, ts(best.Time), quote(best.fact("description"), 160)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("change to %s at %s: %s", best.Subject, ts(best.Time), best.fact("description")))
	}
	f.Summary = fmt.Sprintf("%s's query selects %s, renamed upstream to %s", subject, col, successor)
	return []Finding{f}
}
