package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Code that uses a column or a table its database does not have. A
// release whose code reads or writes a new column needs the migration
// that adds it to have run first; when that migration failed (a Job that
// gave up on a lock timeout behind a long transaction, a pre-deploy hook
// that errored), was skipped, or ran against another database, every
// statement that names the column fails with the database's own "does not
// exist" (PostgreSQL's UndefinedColumn 42703 / UndefinedTable 42P01,
// MySQL's 1054 "Unknown column" and 1146, SQLite's "no such column", SQL
// Server's "Invalid column name", Oracle's ORA-00904/ORA-00942) and only
// the requests that touch it fail (sign-ups, not logins). The answer names
// the column and its table, the service whose code uses it, and one hop
// further why the schema is behind: the failed migration Job and the line
// its log ends with, and the session that held the lock its DDL waited on
// when the database's log says so.

// KindSchemaMissing is code using a column or table the database lacks.
const KindSchemaMissing Kind = "schema_missing"

var schemaMissing = &mechanism{
	kind:   KindSchemaMissing,
	class:  classCause,
	label:  "code using a column or table its database lacks (migration not applied)",
	detect: detectSchemaMissing,
	// The failed migration Job, the database's log and the service's own
	// errors and crashes belong to it.
	related: exceptOwnAndChanges(KindSchemaMissing, func(h *Hypothesis, f *Finding) bool {
		top := h.top()
		return f.Subject == top.Subject || slices.Contains(top.Related, f.Subject) || f.Kind == KindJobFailed && f.fact("job") != "" && f.fact("job") == top.fact("migration_job")
	}),
	// The release of the code that uses the column, or a change that
	// ships or runs a migration.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy && c.Subject == h.Subject || matchLine(migrationChangeRE, changeText(c))
	},
	describe:  describeSchemaMissing,
	recommend: recommendSchemaMissing,
}

var (
	// The database saying a column or table does not exist, in each
	// engine's words.
	schemaMissingRE = regexp.MustCompile(`(?i)column \\?"[^"\\]+\\?"(?: of relation \\?"[^"\\]+\\?")? does not exist|column [a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]* does not exist|relation \\?"[^"\\]+\\?" does not exist|UndefinedColumn|UndefinedTable|SQLSTATE 42703|SQLSTATE 42P01|Unknown column '[^']+' in '[^']+'|Table '[^']+' doesn't exist|no such column: \S+|no such table: \S+|Invalid column name '[^']+'|Invalid object name '[^']+'|ORA-00904: \S+: invalid identifier|ORA-00942: table or view does not exist|The column \x60[^\x60]+\x60 does not exist in the current database`)
	// The column (and its table) a line names: the pattern, the group of
	// the column and that of its table (0: none).
	schemaColumnRE = []struct {
		re         *regexp.Regexp
		col, table int
	}{
		{regexp.MustCompile(`column \\?"([^"\\]+)\\?" of relation \\?"([^"\\]+)\\?" does not exist`), 1, 2},
		{regexp.MustCompile(`column ([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*) does not exist`), 2, 1},
		{regexp.MustCompile(`column \\?"([^"\\]+)\\?" does not exist`), 1, 0},
		{regexp.MustCompile(`Unknown column '(?:([^'.]+)\.)?([^'.]+)' in`), 2, 1},
		{regexp.MustCompile(`no such column: ([^\s,;]+)`), 1, 0},
		{regexp.MustCompile(`Invalid column name '([^']+)'`), 1, 0},
		{regexp.MustCompile(`ORA-00904: "?([^":\s]+)"?: invalid identifier`), 1, 0},
		{regexp.MustCompile("The column `(?:([^`.]+)\\.)?([^`.]+)` does not exist in the current database"), 2, 1},
	}
	schemaTableRE = regexp.MustCompile(`relation \\?"([^"\\]+)\\?" does not exist|Table '(?:[^'.]+\.)?([^'.]+)' doesn't exist|no such table: ([^\s,;]+)|Invalid object name '([^']+)'|(?i:insert into|update|from) [\x60"]?([a-z_][a-z0-9_]*)`)
	// A migration's run: a Job's name or its log.
	migrationWordRE = regexp.MustCompile(`(?i)migrat|db:migrate|alembic|flyway|liquibase|schema`)
	// A PostgreSQL server line, with either prefix (the default
	// "TIME [PID] user@db LEVEL:" and RDS's "TIME:HOST(PORT):user@db:[PID]:LEVEL:").
	pgAnyServerLineRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \w+(?: \[\d+\](?: \S+@\S+)? |:[^ ]*:\S*@\S*:\[\d+\]:)(?:ERROR|WARNING|FATAL|LOG|DETAIL|STATEMENT|HINT|PANIC):`)
	// The session a waiting DDL queued behind.
	lockHolderRE = regexp.MustCompile(`Process holding the lock: (\d+)`)
	ddlWaitRE    = regexp.MustCompile(`(?i)still waiting for AccessExclusiveLock|canceling statement due to lock timeout|Lock wait timeout exceeded|LockNotAvailable|could not obtain lock`)
)

// schemaColumn reads the column and its table from a line; sure is
// whether the table is the database's own name for it (a relation), not
// a qualifier that may be a query's alias ("column o.discount_code").
func schemaColumn(line string) (col, table string, sure bool) {
	for i, x := range schemaColumnRE {
		if m := findSubmatch(x.re, line); m != nil {
			col = m[x.col]
			if x.table > 0 {
				table = m[x.table]
				sure = i == 0
				if i == 1 && len(table) <= 2 {
					table = ""
				}
			}
			return col, table, sure
		}
	}
	if table == "" {
		if m := findSubmatch(schemaTableRE, line); m != nil {
			for _, v := range m[1:] {
				if v != "" {
					table = v
					break
				}
			}
		}
	}
	return col, table, false
}

func detectSchemaMissing(ev *Gathered, found []Finding) []Finding {
	type client struct {
		lines   int
		first   time.Time
		line    string
		why     string
		col, tb string
	}
	var clients keyed[client]
	var server *LogSet
	var serverWhy, col, table string
	var sure bool
	for x := range incidentMatches(ev, schemaMissingRE) {
		// A migration failing on its own DDL is not code ahead of
		// its schema.
		if matchLine(migrationWordRE, x.line) || matchLine(migrationWordRE, x.set.Source) {
			continue
		}
		c, t, ok := schemaColumn(x.line)
		if c != "" && (col == "" || ok && !sure) {
			col, table, sure = c, t, ok
		}
		if table == "" && (c == "" || c == col) {
			table = t
		}
		if x.set.Host || matchLine(pgAnyServerLineRE, x.line) {
			if server == nil {
				server, serverWhy = x.set, templateEvidence(*x.set, x.t, x.line)
			}
			continue
		}
		cl := clients.get(x.set.Subject)
		at := firstOf(x.t.FirstIncident, x.t.FirstSeen)
		if cl.first.IsZero() || at.Before(cl.first) {
			cl.first = at
		}
		cl.lines += x.t.Incident
		if cl.line == "" || cl.col == "" && c != "" {
			cl.line, cl.why, cl.col, cl.tb = x.line, templateEvidence(*x.set, x.t, x.line), c, t
		}
	}
	if len(clients.order) == 0 {
		return nil
	}
	// The service whose code uses the column: the one asked about when
	// it is among them, else the one with the most lines.
	subject := ""
	for _, s := range clients.order {
		if s == ev.Scope.Service || subject == "" || clients.get(s).lines > clients.get(subject).lines && subject != ev.Scope.Service {
			subject = s
		}
	}
	cl := clients.get(subject)
	f := Finding{Kind: KindSchemaMissing, Subject: subject, Object: "service " + subject, Namespace: ev.Scope.Namespace, Time: cl.first,
		Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	f.setFact("column", col)
	f.setFact("table", table)
	f.setFact("line", cl.line)
	f.setFact("lines", strconv.Itoa(cl.lines))
	f.Evidence = append(f.Evidence, cl.why)
	if serverWhy != "" {
		f.Evidence = append(f.Evidence, serverWhy)
		f.setFact("database", serverOfLog(server))
		f.Related = appendNew(f.Related, server.Subject)
	}
	// Why the schema is behind: a failed migration Job (its name or its
	// log says it migrates, or its log names the column).
	for _, j := range detectFailedJobs(ev.K8s, ev.Logs) {
		text := j.fact("job") + " " + j.fact("line") + " " + strings.Join(podLogLines(ev.Logs, j.fact("pod")), "\n")
		if !matchLine(migrationWordRE, text) && (col == "" || !strings.Contains(text, col)) {
			continue
		}
		f.setFact("migration_job", j.fact("job"))
		f.setFact("migration_line", j.fact("line"))
		f.setFact("migration_reason", j.fact("reason"))
		f.Related = appendNew(f.Related, j.Subject)
		f.Evidence = append(f.Evidence, j.Evidence[0])
		if l := j.fact("line"); l != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("log of pod %s of the migration Job: %s", orWord(j.fact("pod"), j.fact("job")), quote(ReadableLine(l), 200)))
		}
		f.Time = earliest(f.Time, j.Time)
		break
	}
	// The database's log: the DDL that adds the column waited on a lock
	// and gave up, and who held it.
	if server != nil && col != "" {
		var pid, detail string
		for _, t := range server.Templates {
			if m := findSubmatch(lockHolderRE, t.Example); m != nil && pid == "" {
				pid, detail = m[1], t.Example
			}
			if matchLine(ddlWaitRE, t.Example) && f.fact("ddl_wait") == "" {
				f.setFact("ddl_wait", ReadableLine(t.Example))
			}
		}
		if pid != "" {
			holderRE := regexp.MustCompile(`(\S+)@(\S+?):?\[` + pid + `\]|\[` + pid + `\] (\S+)@(\S+)`)
			for _, t := range server.Templates {
				m := findSubmatch(holderRE, t.Example)
				if m == nil || matchLine(lockHolderRE, t.Example) || matchLine(ddlWaitRE, t.Example) {
					continue
				}
				who := orWord(m[1], m[3])
				if i := strings.LastIndex(who, ":"); i >= 0 {
					who = who[i+1:]
				}
				f.setFact("lock_holder", fmt.Sprintf("process %s (%s, since %s)", pid, who, hm(firstOf(t.FirstSeen, t.FirstIncident))))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: the migration's ALTER TABLE waited for an AccessExclusiveLock held by process %s, %s's session: %s", serverOfLog(server), pid, who, quote(ReadableLine(t.Example), 160)))
				break
			}
			if f.fact("lock_holder") == "" {
				f.setFact("lock_holder", "process "+pid)
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: the migration's ALTER TABLE waited for a lock held by process %s: %s", serverOfLog(server), pid, quote(ReadableLine(detail), 160)))
			}
			f.setFact("lock_pid", pid)
		}
	}
	f.Summary = fmt.Sprintf("%s uses %s, which the database lacks (%d lines)", subject, schemaWhat(col, table), cl.lines)
	return []Finding{f}
}

// schemaWhat names a missing column with its table, or a missing table.
func schemaWhat(col, table string) string {
	switch {
	case col != "" && table != "":
		return fmt.Sprintf("the column %q of %q", col, table)
	case col != "":
		return fmt.Sprintf("the column %q", col)
	case table != "":
		return fmt.Sprintf("the table %q", table)
	}
	return "a column or table"
}

func describeSchemaMissing(h *Hypothesis, sc Scope) string {
	what := schemaWhat(h.fact("column"), h.fact("table"))
	d := fmt.Sprintf("%s's code uses %s, which does not exist in the database, so every request that touches it fails", h.Subject, what)
	if l := h.fact("line"); l != "" {
		d += ": " + quote(ReadableLine(l), 200)
	}
	if t := h.Trigger; t != nil && t.Kind == KindDeploy && t.Subject == h.Subject {
		d += fmt.Sprintf(". The release %s needs it", orWord(t.fact("revision"), "deployed"))
	}
	switch j := h.fact("migration_job"); {
	case j != "":
		d += fmt.Sprintf(". The migration that adds it did not run: the Job %s failed", j)
		if r := h.fact("migration_reason"); r != "" {
			d += " (" + r + ")"
		}
		if l := h.fact("migration_line"); l != "" {
			d += ", its log ending " + quote(ReadableLine(l), 160)
		}
	case h.fact("ddl_wait") != "":
		d += ". The migration that adds it did not complete"
	default:
		d += ". The migration that adds it has not run against this database (failed, skipped, or run after the code)"
	}
	if w := h.fact("lock_holder"); w != "" {
		d += fmt.Sprintf("; its ALTER TABLE waited for a lock held by %s until the lock timeout cancelled it", w)
	} else if h.fact("ddl_wait") != "" {
		d += "; its ALTER TABLE waited on a lock until the lock timeout cancelled it"
	}
	return d
}

func recommendSchemaMissing(h *Hypothesis, sc Scope, r *recommender) {
	what := schemaWhat(h.fact("column"), h.fact("table"))
	if pid := h.fact("lock_pid"); pid != "" {
		r.high("End the session that holds the lock the migration waits on (%s: SELECT pg_terminate_backend(%s), after checking in pg_stat_activity what it runs), then re-run the migration so %s exists", h.fact("lock_holder"), pid, what)
	} else if j := h.fact("migration_job"); j != "" {
		r.high("Fix what failed the migration Job %s and re-run it so %s exists", j, what)
	} else {
		r.high("Run the migration that adds %s against the database %s uses", what, h.Subject)
	}
	r.high("Or roll %s back to the release that does not use %s until the migration has run", h.Subject, what)
	r.med("Gate the rollout on the migration: run it before the new code starts (a pre-deploy hook or an init step that fails the release), and write code that tolerates the column being absent for one release")
	r.low("Alert on failed migration Jobs and on the database's undefined column/table errors (SQLSTATE 42703, 42P01; MySQL 1054, 1146)")
}
