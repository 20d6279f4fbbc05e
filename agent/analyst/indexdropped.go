package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A query plan that became a full scan because the index it used was
// dropped. A migration replaces an index (a compound index re-ordered, a
// "duplicate" index removed) and the queries that used the old one no
// longer have one that serves them: the database reads the whole
// collection or table for each, slow without an error, and its CPU rises
// with the documents or rows it reads. The database says it in its own
// words:
//
//   - MongoDB's slow-query log ("msg":"Slow query" with
//     "planSummary":"COLLSCAN", "keysExamined":0, "docsExamined" in the
//     millions for "nreturned" in the tens; the 4.x text form "planSummary:
//     COLLSCAN ... docsExamined:18412343 ... nreturned:20"), explain()'s
//     "stage" : "COLLSCAN" with totalDocsExamined, and its "CMD:
//     dropIndexes" line naming the namespace and index;
//   - PostgreSQL's auto_explain or EXPLAIN ANALYZE: "Seq Scan on TABLE"
//     with "Rows Removed by Filter: N", and "DROP INDEX ..." in its
//     statement log;
//   - MySQL's slow log "# Query_time: ... Rows_sent: 20 Rows_examined:
//     N", EXPLAIN's access type ALL, and "ALTER TABLE t DROP INDEX i".
//
// The migration or schema change that dropped the index is the trigger.

// KindIndexDropped is a query that scans a whole collection or table since
// the index serving it was dropped.
const KindIndexDropped Kind = "index_dropped"

var indexDropped = &mechanism{
	kind:   KindIndexDropped,
	class:  classCause,
	label:  "query plan became a full scan (COLLSCAN / Seq Scan) after an index was dropped",
	detect: detectIndexDropped,
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindSlowQuery || f.Kind == KindSaturation && databaseLike(f) || f.Kind == KindSlowOperation && databaseLike(f) ||
			namedByTop(h, f, KindIndexDropped)
	},
	fitsChange:     changeSays(indexChangeRE),
	strictTriggers: true,
	describe:       describeIndexDropped,
	recommend:      recommendIndexDropped,
}

var (
	// collScanRE is MongoDB's plan summary or explain stage of a full
	// collection scan (JSON log, 4.x text log, explain output).
	collScanRE = regexp.MustCompile(`(?i)"?planSummary"?\s*[:=]\s*"?COLLSCAN\b|"stage"\s*:\s*["']COLLSCAN["']|\bstage:\s*'COLLSCAN'`)
	// mongoNSRE is the namespace of a MongoDB log entry.
	mongoNSRE = regexp.MustCompile(`"(?:ns|namespace)"\s*:\s*"([\w.$-]+)"|\bcommand\s+([\w$-]+\.[\w.$-]+)\s+command:`)
	// scanExaminedRE is the documents or rows a query read; scanReturnedRE what
	// it returned; scanDurationRE how long it took.
	scanExaminedRE = regexp.MustCompile(`(?i)"?(?:totalDocsExamined|docsExamined|Rows_examined|rows_examined)"?\s*[:=]\s*(\d+)|Rows Removed by Filter:\s*(\d+)`)
	scanReturnedRE = regexp.MustCompile(`(?i)"?(?:nreturned|nReturned|Rows_sent|rows_sent)"?\s*[:=]\s*(\d+)|actual time=[\d.]+\.\.[\d.]+ rows=(\d+)`)
	scanDurationRE = regexp.MustCompile(`(?i)"?durationMillis"?\s*[:=]\s*(\d+)|\b(\d+)ms\s*$|Query_time:\s*([\d.]+)|duration:\s*([\d.]+)\s*ms`)
	// mysqlFullScanRE is MySQL's EXPLAIN access type ALL (vertical or
	// table form).
	mysqlFullScanRE = regexp.MustCompile(`^\s*type:\s*ALL\s*$|^\|\s*\d+\s*\|\s*SIMPLE\s*\|\s*(\w+)\s*\|[^|]*\|\s*ALL\s*\|`)
	// mysqlSlowRE is MySQL's slow-log stats line.
	mysqlSlowRE = regexp.MustCompile(`#\s*Query_time:\s*[\d.]+.*Rows_sent:\s*\d+\s+Rows_examined:\s*\d+`)
	// mongoDropRE is MongoDB's dropIndexes (log line or shell call).
	mongoDropRE = regexp.MustCompile(`CMD: dropIndexes\b|\bdropIndex(?:es)?\s*\(|"dropIndexes"\s*:`)
	// mongoDropIndexRE names the index a dropIndexes dropped.
	mongoDropIndexRE = regexp.MustCompile(`"indexes"\s*:\s*"\\?"?([^"\\]+)|"?\bindex"?\s*:\s*"([^"]+)"|dropIndex(?:es)?\s*\(\s*['"]([^'"]+)['"]`)
	// mongoDropNSRE is the namespace of 4.2's text dropIndexes line.
	mongoDropNSRE = regexp.MustCompile(`CMD: dropIndexes ([\w$-]+\.[\w.$-]+?):?\s`)
	// sqlDropIndexRE is SQL's DROP INDEX (PostgreSQL, or MySQL's ALTER
	// TABLE ... DROP INDEX / DROP INDEX i ON t).
	sqlDropIndexRE = regexp.MustCompile("(?i)\\bDROP\\s+(?:INDEX|KEY)\\s+(?:CONCURRENTLY\\s+)?(?:IF\\s+EXISTS\\s+)?[\"`]?([\\w$.]+)")
)

// fullScan is one statement read as a full scan.
type fullScan struct {
	line                         string
	ns                           string
	examined, returned, duration int64
	at                           time.Time
	subject, source              string
}

func firstInt(re *regexp.Regexp, s string) int64 {
	m := findSubmatch(re, s)
	if m == nil {
		return -1
	}
	for _, g := range m[1:] {
		if g != "" {
			if strings.Contains(g, ".") {
				f, err := strconv.ParseFloat(g, 64)
				if err == nil {
					return int64(f * 1000)
				}
				return -1
			}
			n, err := strconv.ParseInt(g, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// readFullScan reads a line as a full scan: MongoDB's COLLSCAN, a
// PostgreSQL Seq Scan that removed rows by filter, a MySQL slow statement
// that examined far more rows than it sent.
func readFullScan(l string) (fullScan, bool) {
	fs := fullScan{line: l, examined: firstInt(scanExaminedRE, l), returned: firstInt(scanReturnedRE, l), duration: -1}
	switch {
	case matchLine(collScanRE, l):
		if m := findSubmatch(mongoNSRE, l); m != nil {
			fs.ns = orWord(m[1], m[2])
		}
	case matchLine(seqScanRE, l) && fs.examined > 0:
		fs.ns = tableName(findSubmatch(seqScanRE, l)[1])
	case matchLine(mysqlSlowRE, l):
	default:
		return fs, false
	}
	fs.duration = firstInt(scanDurationRE, l)
	// A scan that reads little is no problem: a small collection, or
	// most of what it read is returned.
	if fs.examined >= 0 && (fs.examined < 10000 || fs.returned > 0 && fs.examined < 100*fs.returned) {
		return fs, false
	}
	if fs.examined < 0 && !matchLine(collScanRE, l) {
		return fs, false
	}
	return fs, true
}

// droppedIndex is an index dropped, and where.
type droppedIndex struct {
	index, ns, line string
	at              time.Time
}

func readDroppedIndex(l string) (droppedIndex, bool) {
	if matchLine(mongoDropRE, l) {
		d := droppedIndex{line: l}
		if m := findSubmatch(mongoDropIndexRE, l); m != nil {
			d.index = strings.Trim(orWord(m[1], orWord(m[2], m[3])), `\"' `)
		}
		if m := findSubmatch(mongoNSRE, l); m != nil {
			d.ns = orWord(m[1], m[2])
		} else if m := findSubmatch(mongoDropNSRE, l); m != nil {
			d.ns = m[1]
		}
		return d, true
	}
	if m := findSubmatch(sqlDropIndexRE, l); m != nil {
		return droppedIndex{index: tableName(m[1]), line: l}, true
	}
	return droppedIndex{}, false
}

// detectIndexDropped finds statements that scan a whole collection or
// table, and the index dropped before they began.
func detectIndexDropped(ev *Gathered, found []Finding) []Finding {
	// An index left invalid by a failed build is its own cause.
	if len(invalidIndexes(ev.Commands)) > 0 {
		return nil
	}
	for _, f := range found {
		if f.Kind == KindIndexInvalid {
			return nil
		}
	}
	var scans []fullScan
	var drops []droppedIndex
	count := 0
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if fs, ok := readFullScan(l); ok {
					fs.at, fs.subject, fs.source = t.FirstSeen, set.Subject, set.Source
					scans = append(scans, fs)
					count += max(t.Count, 1)
					break
				}
				if matchLine(indexBuildFailRE, l) {
					return nil
				}
				if d, ok := readDroppedIndex(l); ok {
					d.at = t.FirstSeen
					drops = append(drops, d)
				}
			}
		}
	}
	for _, c := range ev.Commands {
		if fs, ok := readFullScan(strings.Join(c.Lines, "\n")); ok && matchLine(collScanRE, fs.line) {
			fs.line = "explain: " + strings.TrimSpace(findString(collScanRE, fs.line))
			scans = append(scans, fs)
		}
		for _, l := range c.Lines {
			if m := findSubmatch(mysqlFullScanRE, l); m != nil {
				scans = append(scans, fullScan{line: strings.TrimSpace(l), examined: -1, returned: -1, duration: -1, ns: m[1]})
			}
		}
	}
	if len(scans) == 0 {
		return nil
	}
	// The worst scan speaks for them.
	best := scans[0]
	for _, s := range scans[1:] {
		if s.examined > best.examined {
			best = s
		}
	}
	first := best.at
	for _, s := range scans {
		if !s.at.IsZero() && (first.IsZero() || s.at.Before(first)) {
			first = s.at
		}
	}
	// The index dropped on the scanned collection (or anywhere, when the
	// drop does not name it), before the scans.
	var drop *droppedIndex
	for i := range drops {
		d := &drops[i]
		if d.ns != "" && best.ns != "" && tableName(d.ns) != tableName(best.ns) && d.ns != best.ns {
			continue
		}
		if !first.IsZero() && !d.at.IsZero() && d.at.After(first) {
			continue
		}
		if drop == nil || d.at.After(drop.at) {
			drop = d
		}
	}
	// Without the drop, a full scan alone needs its numbers to be read as
	// the cause.
	if drop == nil && best.examined < 0 {
		return nil
	}
	instance := orWord(best.subject, "the database")
	at := first
	if drop != nil && !drop.at.IsZero() {
		at = drop.at
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindIndexDropped, Subject: instance, Object: "collection " + orWord(best.ns, "?"), Time: at, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	f.setFact("db_instance", instance)
	f.setFact("collection", best.ns)
	f.setFact("line", best.line)
	plan := "a full scan"
	if matchLine(collScanRE, best.line) {
		plan = "a COLLSCAN (full collection scan)"
	} else if matchLine(seqScanRE, best.line) {
		plan = "a Seq Scan (full table scan)"
	} else if best.examined >= 0 {
		plan = "a full table scan (type ALL)"
	}
	f.setFact("plan", plan)
	ev1 := fmt.Sprintf("%s runs queries on %s as %s", instance, orWord(best.ns, "its data"), plan)
	if best.examined >= 0 {
		f.setFact("examined", strconv.FormatInt(best.examined, 10))
		ev1 += fmt.Sprintf(": %d examined", best.examined)
		if best.returned >= 0 {
			f.setFact("returned", strconv.FormatInt(best.returned, 10))
			ev1 += fmt.Sprintf(" for %d returned", best.returned)
		}
		if best.duration >= 0 {
			ev1 += fmt.Sprintf(", %d ms", best.duration)
		}
	}
	if count > 1 {
		ev1 += fmt.Sprintf(" (%d such statements logged from %s)", count, ts(first))
	}
	f.Evidence = append(f.Evidence, ev1, "the plan: "+quote(ReadableLine(best.line), 220))
	why := fmt.Sprintf("queries on %s run as %s", orWord(best.ns, "a collection"), plan)
	if drop != nil {
		f.setFact("dropped", drop.index)
		why += fmt.Sprintf(" since index %s was dropped", orWord(drop.index, "(unnamed)"))
		f.Evidence = append(f.Evidence, fmt.Sprintf("index %s was dropped at %s: %s", orWord(drop.index, "(unnamed)"), ts(drop.at), quote(ReadableLine(drop.line), 200)))
		f.Weight = 0.92
	}
	f.setFact("why", why)
	if s := ev.Scope.Service; s != "" && s != instance {
		f.Related = appendNew(f.Related, s)
		f.setFact("caller", s)
	}
	for _, c := range ev.Changes {
		if c.Service != "" && matchLine(indexChangeRE, c.Description) && !c.Timestamp.After(at.Add(time.Minute)) && at.Sub(c.Timestamp) <= 24*time.Hour {
			f.Related = appendNew(f.Related, c.Service)
		}
	}
	f.Summary = fmt.Sprintf("%s: %s", instance, why)
	return []Finding{f}
}

func describeIndexDropped(h *Hypothesis, sc Scope) string {
	plan := orWord(h.fact("plan"), "a full scan")
	d := fmt.Sprintf("queries on %s of %s run as %s", orWord(h.fact("collection"), "a collection"), h.Subject, plan)
	if dr := h.fact("dropped"); dr != "" {
		d += fmt.Sprintf(" since index %s was dropped (dropped index; no index serves them now)", dr)
	} else {
		d += " (no index serves them)"
	}
	if e, r := h.fact("examined"), h.fact("returned"); e != "" {
		d += fmt.Sprintf(": %s examined", e)
		if r != "" {
			d += " for " + r + " returned"
		}
	}
	d += "; each is slow without failing, and the database's CPU rises with what it reads"
	if c := h.fact("caller"); c != "" {
		d += fmt.Sprintf(", so %s is slow", c)
	}
	return d
}

func recommendIndexDropped(h *Hypothesis, sc Scope, r *recommender) {
	coll := orWord(h.fact("collection"), "the collection")
	if dr := h.fact("dropped"); dr != "" {
		r.high("Recreate index %s on %s of %s (MongoDB: db.<coll>.createIndex({...}) with the old key; SQL: CREATE INDEX CONCURRENTLY / ALTER TABLE ... ADD INDEX), or roll back the migration that dropped it", dr, coll, h.Subject)
	} else {
		r.high("Add an index that serves the scanned queries on %s of %s (explain() / EXPLAIN shows which filter and sort), or roll back the change that removed it", coll, h.Subject)
	}
	r.med("Check the plan after the index is back: explain(\"executionStats\") shows IXSCAN with docsExamined close to nReturned (PostgreSQL: Index Scan; MySQL: type ref/range)")
	r.low("Write index migrations to build the new index before dropping the old one, and check the queries that used it first ($indexStats, pg_stat_user_indexes, sys.schema_unused_indexes); alert on full scans (COLLSCAN in the slow-query log, pg_stat_user_tables.seq_tup_read, Select_scan)")
}
