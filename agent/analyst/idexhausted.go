package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A table's generated key at the largest value its type holds. A key
// drawn from a sequence, an AUTO_INCREMENT or an IDENTITY column grows by
// one per row (and by whatever inserts that fail or roll back consumed);
// when the column or the sequence is a 32-bit integer it stops at
// 2,147,483,647 (or a smaller type's maximum, or a sequence's own
// MAXVALUE), and from then on every insert fails while reads and updates
// go on: no crash, no latency, a writer that retries the same batch and a
// backlog that grows. The database names it in its own words:
// PostgreSQL's "nextval: reached maximum value of sequence" (SQLSTATE
// 2200H) and "integer out of range" on an insert (22003), MySQL's
// duplicate key at the type's maximum (an AUTO_INCREMENT that cannot go
// further hands the same value again) or "Failed to read auto-increment
// value from storage engine", SQL Server's "Arithmetic overflow error
// converting IDENTITY to data type int", Oracle's ORA-08004, and an ORM
// refusing a value beyond its integer limit (ActiveRecord's RangeError).
// No change on the day causes it: the key ran out of room, and the fix is
// a wider type (bigint), not a rollback.

// KindIDExhausted is a table's generated key at its type's maximum.
const KindIDExhausted Kind = "id_exhausted"

var idExhausted = &mechanism{
	kind:   KindIDExhausted,
	class:  classCause,
	label:  "a table's generated id at its integer type's maximum (inserts fail)",
	detect: detectIDExhausted,
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Kind != KindIDExhausted && slices.Contains(h.top().Related, f.Subject)
	}),
	// Only a change that names the sequence or the key's type
	// bears on it (a migration to bigint, a sequence's MAXVALUE): a
	// client's release or a setting elsewhere does not use up ids.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		text := changeText(c)
		if v := strings.ToLower(h.fact("sequence")); v != "" && strings.Contains(text, v) {
			return true
		}
		return matchLine(idChangeRE, text)
	},
	strictTriggers: true,
	describe:       describeIDExhausted,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		db := h.Subject
		table := orWord(h.fact("table"), "the table")
		col := orWord(h.fact("column"), "id")
		if h.fact("engine") == "mysql" {
			r.high("Widen the key of %s on %s: ALTER TABLE %s MODIFY %s BIGINT UNSIGNED NOT NULL AUTO_INCREMENT (an online schema change tool such as gh-ost or pt-online-schema-change for a large table); until then inserts keep failing", table, db, table, col)
		} else {
			r.high("Widen the key of %s on %s to bigint: ALTER TABLE %s ALTER COLUMN %s TYPE bigint (and ALTER SEQUENCE %s AS bigint); for a large table add a bigint column, backfill it and swap it in, or as a stopgap restart the sequence at the negative end of the range (ALTER SEQUENCE ... MINVALUE -2147483648 RESTART WITH -2147483648) if no code assumes positive ids", table, db, table, col, orWord(h.fact("sequence"), "its sequence"))
		}
		r.high("Keep the writers' failed batches (%s) queued, not dropped, and replay them once inserts succeed; do not roll back: no release caused it", orWord(h.fact("clients"), "the clients"))
		r.med("Check the other tables' keys for the same limit: 32-bit serial, INT AUTO_INCREMENT and IDENTITY columns and their sequences' last_value against their maximum")
		r.low("Alert when a sequence or AUTO_INCREMENT passes 80%% of its type's maximum")
	},
}

var (
	// The database refusing the next key, as servers and clients say it.
	idStopRE = regexp.MustCompile(`(?i)reached maximum value of sequence|SQLSTATE 2200H|sequence_generator_limit_exceeded|ORA-08004|exceeds MAXVALUE|Arithmetic overflow error converting IDENTITY|Failed to read auto-increment value from storage engine|ER_AUTOINC_READ_FAILED|Duplicate entry '(?:127|255|32767|65535|8388607|16777215|2147483647|4294967295|9223372036854775807)' for key '[^']*PRIMARY'|\binsert\b.{0,200}\binteger out of range|integer out of range.{0,40}SQLSTATE 22003|is out of range for ActiveModel::Type::Integer|Out of range value for column '[^']*id'`)
	// The sequence or table a refusal names.
	idSequenceRE = regexp.MustCompile(`(?i)sequence \\?"([^"\\]+)\\?"|sequence ([A-Za-z0-9_$.]+)\.NEXTVAL`)
	idTableRE    = regexp.MustCompile(`(?i)insert\s+into\s+["\x60]?([A-Za-z0-9_.]+)|for key '([A-Za-z0-9_]+)\.PRIMARY'`)
	// The limit a refusal states.
	idMaxRE = regexp.MustCompile(`\(?(127|255|32767|65535|8388607|16777215|2147483647|4294967295|9223372036854775807)\)?`)
	// A change that works on keys' width or sequences.
	idChangeRE = regexp.MustCompile(`(?i)\bbigint\b|\bint8\b|\bsequence\b|auto_increment|\bidentity\b`)
	// MySQL's and SQL Server's own words.
	idMySQLRE = regexp.MustCompile(`(?i)Duplicate entry|auto-increment|ER_AUTOINC|Out of range value for column`)
)

// detectIDExhausted reads the refusal from the logs (the database's own
// and its clients'), and what psql shows of the key: the column's type
// in \d and the sequence's last_value.
func detectIDExhausted(ev *Gathered, found []Finding) []Finding {
	var (
		seq, table, limit string
		refusal           pgRefusal
		mysql             bool
	)
	for x := range incidentMatches(ev, idStopRE) {
		if m := findSubmatch(idSequenceRE, x.line); m != nil && seq == "" {
			seq = orWord(m[1], m[2])
		}
		if m := findSubmatch(idTableRE, x.line); m != nil && table == "" {
			table = orWord(m[1], m[2])
		}
		if m := findSubmatch(idMaxRE, x.line); m != nil && limit == "" {
			limit = m[1]
		}
		mysql = mysql || matchLine(idMySQLRE, x.line)
		// The statement the server logs under its error names the
		// table.
		if refusal.add(x) && table == "" {
			for _, t := range x.set.Templates {
				if m := findSubmatch(idTableRE, t.Example); m != nil && strings.Contains(t.Example, "STATEMENT") {
					table = m[1]
					break
				}
			}
		}
	}
	if refusal.lines == 0 {
		return nil
	}
	host, example := refusal.host, refusal.example
	if example == "" {
		// Only the server's own log: quote it.
		for x := range incidentMatches(ev, idStopRE) {
			example = x.line
			break
		}
	}
	if table == "" && seq != "" {
		table = strings.TrimSuffix(strings.TrimSuffix(seq, "_seq"), "_id")
	}
	// psql: the key column's type (\d TABLE) and the sequence's
	// last_value.
	var colType, column, lastValue string
	for _, c := range ev.Commands {
		if !matchLine(sqlClientRE, c.Run) && !matchLine(sqlClientRE, c.Command) {
			continue
		}
		inst, _ := sqlInstanceOf(c)
		for _, t := range sqlTables(c.Lines) {
			if v := t.cell(0, "last_value"); v != "" && lastValue == "" {
				lastValue = strings.TrimSpace(v)
				host = orWord(host, shortHost(inst))
			}
			if !slices.Contains(t.cols, "column") || !slices.Contains(t.cols, "type") {
				continue
			}
			for r := range t.rows {
				if d := t.cell(r, "default"); strings.Contains(d, "nextval") || strings.Contains(strings.ToLower(d), "identity") || (seq != "" && strings.Contains(d, seq)) {
					column, colType = t.cell(r, "column"), t.cell(r, "type")
					host = orWord(host, shortHost(inst))
				}
			}
		}
	}
	if host == "" {
		host = "database"
	}
	f := Finding{Kind: KindIDExhausted, Subject: host, Object: "database " + host, Time: refusal.first, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	f.setFact("sequence", seq)
	f.setFact("table", table)
	f.setFact("limit", limit)
	f.setFact("line", example)
	f.setFact("lines", strconv.Itoa(refusal.lines))
	f.setFact("column", column)
	f.setFact("column_type", colType)
	if mysql {
		f.setFact("engine", "mysql")
	}
	refusal.evidence(&f)
	if colType != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("psql on %s: %s.%s is %s, filled from %s", host, orWord(table, "the table"), column, colType, orWord(seq, "a sequence")))
	}
	if lastValue != "" {
		f.setFact("last_value", lastValue)
		f.Evidence = append(f.Evidence, fmt.Sprintf("psql on %s: %s last_value is %s", host, orWord(seq, "the sequence"), lastValue))
	}
	refusal.clients.relate(&f)
	f.Summary = fmt.Sprintf("%s: %s at its maximum, inserts fail (%d lines)", host, orWord(seq, orWord(table, "a table's id")), refusal.lines)
	return []Finding{f}
}

func describeIDExhausted(h *Hypothesis, sc Scope) string {
	db := h.Subject
	what := "the generated id"
	switch {
	case h.fact("sequence") != "":
		what = fmt.Sprintf("the sequence %q", h.fact("sequence"))
		if t := h.fact("table"); t != "" {
			what += " behind " + t + "." + orWord(h.fact("column"), "id")
		}
	case h.fact("table") != "":
		what = fmt.Sprintf("the generated id of %s", h.fact("table"))
	}
	d := fmt.Sprintf("every insert fails on %s because %s reached the maximum value of its integer type", db, what)
	switch lim := h.fact("limit"); {
	case lim == "2147483647" || strings.Contains(strings.ToLower(h.fact("column_type")), "integer") && lim == "":
		d += " (2147483647, the largest 32-bit integer): an integer overflow of the table's key"
	case lim != "":
		d += fmt.Sprintf(" (%s): the key overflowed its type", lim)
	default:
		d += ": the key ran out of values (an integer overflow of a 32-bit id, or the sequence's MAXVALUE)"
	}
	if ct := h.fact("column_type"); ct != "" {
		d += fmt.Sprintf("; the column %s is %s", orWord(h.fact("column"), "id"), ct)
	}
	d += ". Reads and updates still work; no release caused it, the key ran out of room"
	if c := h.fact("clients"); c != "" {
		d += fmt.Sprintf(", and %s cannot write, retrying the same rows", c)
	}
	if l := h.fact("line"); l != "" {
		d += ": " + quote(ReadableLine(l), 220)
	}
	return d
}
