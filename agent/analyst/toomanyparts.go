package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClickHouse refusing inserts for too many parts. Every INSERT into a
// MergeTree table writes at least one new part per partition; background
// merges fold small parts into large ones. When a partition holds more
// active parts than parts_to_delay_insert (1,000 by default in older
// releases, more since) the server slows each insert ("Delaying inserting
// block by N ms. because there are N parts"), and past
// parts_to_throw_insert (3,000) it rejects them: "Too many parts (3001
// with average size of 12.41 KiB) ... Merges are processing significantly
// slower than inserts" (code 252, TOO_MANY_PARTS). The usual root is the
// writer: one insert per event or per handful of rows (a batch size of 1,
// a flush every 100 ms) makes a part for every few rows, thousands an
// hour, faster than merges fold them. The partition's parts in
// system.parts (thousands, of kilobytes each), system.query_log's
// written_rows and the writer's own flush lines say it; the fix is to
// batch (tens of thousands of rows, or seconds, per insert) or to let the
// server buffer (async_insert). The writer's release or setting that cut
// the batch is the trigger.

// KindTooManyParts is a ClickHouse table refusing (or delaying) inserts
// because a partition has too many parts.
const KindTooManyParts Kind = "too_many_parts"

var tooManyParts = &mechanism{
	kind:    KindTooManyParts,
	class:   classCause,
	label:   "ClickHouse rejecting inserts: too many parts (small inserts outpace merges)",
	detect:  detectTooManyParts,
	related: relatedToTop(KindTooManyParts),
	// A change to how the writer batches its inserts, or to the table's
	// merge settings, makes the parts; another change does not.
	fitsChange:     changeSays(insertBatchChangeRE),
	strictTriggers: true,
	describe:       describeTooManyParts,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		w := orWord(h.fact("writer"), "the writer")
		r.rollback()
		r.high("Batch %s's inserts again (tens of thousands of rows or several seconds per INSERT), or have the server buffer them (async_insert=1, wait_for_async_insert=1), so each insert no longer makes a part", w)
		r.med("Let merges catch up on %s before resuming the backlog (watch SELECT partition, count() FROM system.parts WHERE active fall below parts_to_delay_insert); do not raise parts_to_throw_insert to hide it", orWord(h.fact("table"), "the table"))
		r.low("Alert on the active parts per partition (system.parts, ClickHouseAsyncMetrics_MaxPartCountForPartition) and on inserts delayed or rejected (DelayedInserts, RejectedInserts)")
	},
}

var (
	// The server rejecting or delaying an insert for its parts (the
	// server's log, and the error as a client quotes it).
	tooManyPartsRE = regexp.MustCompile(`(?i)Too many parts \(\d+|TOO_MANY_PARTS|code: 252\b`)
	// What the rejection says: the parts, their size, the table.
	tooManyPartsWhatRE = regexp.MustCompile(`(?i)Too many parts \((\d+)(?: with average size of ([\d.]+ ?[KMG]?i?B))?\)(?:[^']{0,40}in table '([^' ]+))?`)
	delayInsertRE      = regexp.MustCompile(`(?i)Delaying inserting block by ([\d.]+ ?ms)\.? because there are (\d+) parts`)
	// How many rows a writer's flush or insert line says it wrote.
	flushRowsRE = regexp.MustCompile(`(?i)"(?:rows|row_count|written_rows|batch_size|count)"\s*:\s*(\d+)|\b(?:rows|batch(?:_size)?|written_rows)=(\d+)\b|\b(?:flushed|inserted|wrote) (\d+) rows?\b`)
	// A change to how a writer batches its inserts.
	insertBatchChangeRE = regexp.MustCompile(`(?i)batch|flush|insert each|per[- ]event|per[- ]row|async_insert|buffer|parts_to_(?:throw|delay)_insert|max_insert_block_size|near[- ]real[- ]time`)
)

// detectTooManyParts reads ClickHouse's rejection of inserts, the parts
// behind it and the writer whose small inserts make them.
func detectTooManyParts(ev *Gathered, found []Finding) []Finding {
	var (
		server, table, parts, avg, example, delay string
		first                                     time.Time
		lines                                     int
		writers                                   logClients
		evid                                      []string
	)
	for x := range incidentMatches(ev, tooManyPartsRE) {
		m := findSubmatch(tooManyPartsWhatRE, x.line)
		if m == nil {
			m = make([]string, 4)
		}
		at := firstOf(x.t.FirstIncident, x.t.FirstSeen)
		if first.IsZero() || at.Before(first) {
			first = at
		}
		lines += x.t.Incident
		if m[1] != "" && parts == "" {
			parts, avg = m[1], m[2]
		}
		if m[3] != "" && table == "" {
			table = strings.TrimSuffix(m[3], "'")
		}
		if matchLine(clickhouseServerLineRE, x.line) || x.set.Host {
			server = orWord(server, serverOfLog(x.set))
		} else if writers.add(x.set, x.t, x.line) {
			if example == "" {
				example = x.line
			}
		}
		if len(evid) < 2 {
			evid = append(evid, templateEvidence(*x.set, x.t, x.line))
		}
	}
	if lines == 0 {
		return nil
	}
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			if m := findSubmatch(delayInsertRE, t.Example); m != nil && delay == "" {
				delay = fmt.Sprintf("from %s the server delayed inserts (%s)", ts(firstOf(t.FirstSeen, t.FirstIncident)), quote(ReadableLine(t.Example), 160))
				server = orWord(server, serverOfLog(&ev.Logs[i]))
			}
		}
	}
	// clickhouse-client on the server: parts per partition and rows per
	// insert.
	var partsTable string
	maxWritten := -1
	for _, c := range ev.Commands {
		run := strings.ToLower(orWord(c.Run, c.Command))
		if !strings.Contains(run, "clickhouse") {
			continue
		}
		if c.Pod != "" {
			server = orWord(server, workloadOfPodName(c.Pod))
		}
		for _, t := range chTables(c.Lines) {
			if slices.Contains(t.cols, "parts") || slices.Contains(t.cols, "count()") {
				col := "parts"
				if !slices.Contains(t.cols, "parts") {
					col = "count()"
				}
				best := 0
				for r := range t.rows {
					if n, err := strconv.Atoi(t.cell(r, col)); err == nil && n > best {
						best = n
						partsTable = fmt.Sprintf("system.parts: partition %s has %d active parts", orWord(t.cell(r, "partition"), "?"), n)
						if a := orWord(t.cell(r, "avg_size"), t.cell(r, "avg_bytes")); a != "" {
							partsTable += " of " + a + " on average"
						}
					}
				}
			}
			if slices.Contains(t.cols, "written_rows") {
				for r := range t.rows {
					if n, err := strconv.Atoi(t.cell(r, "written_rows")); err == nil && n > maxWritten {
						maxWritten = n
					}
				}
			}
		}
	}
	// The writer's own flushes: how many rows per insert.
	maxRows, flushLine := -1, ""
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if !slices.Contains(writers.names, set.Subject) {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if matchLine(tooManyPartsRE, l) {
					continue
				}
				for _, m := range findAllSubmatch(flushRowsRE, l, -1) {
					if n, err := strconv.Atoi(orWord(m[1], orWord(m[2], m[3]))); err == nil && n > maxRows {
						maxRows, flushLine = n, l
					}
				}
			}
		}
	}
	if server == "" {
		server = "clickhouse"
	}
	subject := server
	if len(writers.names) > 0 {
		subject = writers.names[0]
	}
	f := Finding{Kind: KindTooManyParts, Subject: subject, Object: "table " + orWord(table, "?") + " on " + server, Time: first, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	f.Evidence = append(f.Evidence, evid...)
	f.setFact("server", server)
	f.setFact("table", chTableName(table))
	f.setFact("parts", parts)
	f.setFact("avg_part", avg)
	f.setFact("line", orWord(example, f.fact("line")))
	if len(writers.names) > 0 {
		f.setFact("writer", writers.names[0])
		f.setFact("caller", writers.names[0])
	}
	f.Related = appendNew(f.Related, server)
	for _, w := range writers.names[min(1, len(writers.names)):] {
		f.Related = appendNew(f.Related, w)
	}
	if delay != "" {
		f.setFact("delayed", delay)
		f.Evidence = append(f.Evidence, delay)
	}
	if partsTable != "" {
		f.setFact("parts_table", partsTable)
		f.Evidence = append(f.Evidence, partsTable)
	}
	small := -1
	switch {
	case maxWritten >= 0:
		small = maxWritten
		f.Evidence = append(f.Evidence, fmt.Sprintf("system.query_log: the latest inserts into %s wrote at most %d rows each", orWord(table, "the table"), maxWritten))
	case maxRows >= 0:
		small = maxRows
	}
	if maxRows >= 0 && flushLine != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's own inserts carry at most %d rows: %s", orWord(f.fact("writer"), "the writer"), maxRows, quote(ReadableLine(flushLine), 160)))
		small = max(small, maxRows)
	}
	if small >= 0 && small <= 1000 {
		f.Weight = 0.95
		f.setFact("rows_per_insert", strconv.Itoa(small))
		f.setFact("why", fmt.Sprintf("%s inserts at most %d rows per INSERT, one new part each, faster than merges fold them", orWord(f.fact("writer"), "the writer"), small))
	}
	f.Summary = fmt.Sprintf("%s: ClickHouse rejects inserts into %s: too many parts (%s)", subject, orWord(table, "a table"), orWord(parts, "TOO_MANY_PARTS"))
	return []Finding{f}
}

// clickhouseServerLineRE recognises ClickHouse's own log line
// ("2026.11.12 08:14:52.118220 [ 812 ] {...} <Error> executeQuery: ...").
var clickhouseServerLineRE = regexp.MustCompile(`^\d{4}\.\d\d\.\d\d \d\d:\d\d:\d\d\.\d+ \[ *\d+ *\] \{[^}]*\} <\w+>`)

// chTableName drops the UUID ClickHouse prints after a table's name
// ("analytics.events (b7e2...)").
func chTableName(t string) string {
	n, _, _ := strings.Cut(t, " (")
	return n
}

// chTables reads clickhouse-client's Pretty formats (the box of "┌─a─┬─b─┐"
// and "│ x │ y │" rows) and falls back to the SQL clients' tables.
func chTables(lines []string) []sqlTable {
	var out []sqlTable
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "┌") {
			continue
		}
		head := strings.Trim(l, "┌┐")
		var cols []string
		for _, c := range strings.Split(head, "┬") {
			cols = append(cols, strings.ToLower(strings.Trim(c, "─ ")))
		}
		t := sqlTable{cols: cols}
		j := i + 1
		for ; j < len(lines); j++ {
			r := strings.TrimSpace(lines[j])
			if strings.HasPrefix(r, "└") {
				break
			}
			if !strings.HasPrefix(r, "│") {
				continue
			}
			var cells []string
			for _, c := range strings.Split(strings.Trim(r, "│"), "│") {
				cells = append(cells, strings.TrimSpace(c))
			}
			if len(cells) == len(cols) {
				t.rows = append(t.rows, cells)
			}
		}
		out = append(out, t)
		i = j
	}
	return append(out, sqlTables(lines)...)
}

func describeTooManyParts(h *Hypothesis, sc Scope) string {
	table := orWord(h.fact("table"), "the table")
	server := orWord(h.fact("server"), h.Subject)
	d := fmt.Sprintf("ClickHouse (%s) rejects inserts into %s with TOO_MANY_PARTS: a partition holds", server, table)
	if p := h.fact("parts"); p != "" {
		d += " " + p
	} else {
		d += " more"
	}
	d += " active parts"
	if a := h.fact("avg_part"); a != "" {
		d += fmt.Sprintf(" averaging %s each", a)
	}
	d += ", past parts_to_throw_insert, because merges are processing significantly slower than inserts"
	if w := h.fact("writer"); w != "" {
		d += fmt.Sprintf(". %s's inserts fail and are retried, so its data stops arriving", w)
		if r := h.fact("rows_per_insert"); r != "" {
			d += fmt.Sprintf("; it sends tiny inserts (at most %s rows per INSERT), each one a new part", r)
		}
	}
	d += ". Each INSERT makes a part; small inserts make them faster than background merges fold them, so the server first delays and then refuses inserts until batches are large again"
	if pt := h.fact("parts_table"); pt != "" {
		d += " (" + pt + ")"
	}
	return d
}
