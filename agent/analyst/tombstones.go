package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reads aborted on tombstones. Cassandra (and ScyllaDB) never delete a row
// in place: a delete writes a tombstone, kept for gc_grace_seconds (ten
// days by default) and dropped only by a compaction after that. A read of a
// partition scans its tombstones before the live rows it returns; past
// tombstone_warn_threshold (1,000) the node warns, past
// tombstone_failure_threshold (100,000) it aborts the read
// (TombstoneOverwhelmingException) and the client gets a read failure
// (the Java driver's ReadFailureException, READ_TOO_MANY_TOMBSTONES).
// Only the partitions with many deletes fail: the users with the most
// rows, while most users are fine. The root is the delete pattern: a job
// that deletes rows one by one (instead of letting a TTL expire them, or
// dropping whole partitions or time-bucketed tables). It is read from the
// node's own log ("Scanned over 100001 tombstones during query ...; query
// aborted", "Read 50 live rows and 8316 tombstone cells"), nodetool
// tablestats (tombstones per slice), the table's gc_grace_seconds, and the
// deleting job's log or change.

// KindTombstones is reads aborted, or slowed, by tombstones in a table.
const KindTombstones Kind = "tombstones"

var tombstonesM = &mechanism{
	kind:    KindTombstones,
	class:   classCause,
	label:   "reads aborted on tombstones left by deletes (Cassandra tombstone overwhelm)",
	detect:  detectTombstones,
	related: relatedToTop(KindTombstones),
	// Only a change of the workload that deletes the rows, or one that
	// names the table or its deletes and TTLs, fills it with tombstones.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		text := changeText(c)
		for _, f := range h.Primary {
			if d := f.fact("deleter"); d != "" && c.Subject == d {
				return true
			}
			if t := f.fact("table"); t != "" && strings.Contains(text, strings.ToLower(t)) {
				return true
			}
		}
		return matchLine(tombstoneChangeRE, text)
	},
	strictTriggers: true,
	describe:       describeTombstones,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		table := orWord(h.fact("table"), "the table")
		if d := h.fact("deleter"); d != "" {
			r.high("Stop %s's row-by-row deletes in %s (suspend it or roll it back) so no more tombstones pile up; expire rows with a TTL at insert, or delete whole partitions or time buckets, instead", d, table)
		} else {
			r.high("Find and stop what deletes rows one by one in %s; expire rows with a TTL at insert, or delete whole partitions or time buckets, instead", table)
		}
		r.med("Purge the tombstones of %s: once gc_grace_seconds (%s) has passed for them, a major compaction (nodetool compact) drops them; lower gc_grace_seconds only if repairs run well within it", table, orWord(h.fact("gc_grace"), "ten days by default"))
		r.med("Page the reads of the affected partitions with a bound on the clustering key (only the rows after the last read) so that they do not scan the deleted range")
		r.low("Alert on tombstone warnings (tombstone_warn_threshold) and on nodetool tablestats' tombstones per slice before reads reach the failure threshold")
	},
}

var (
	// A node aborting a read on tombstones (Cassandra 3, 4 and 5; the
	// exception's name in older versions).
	tombstoneAbortRE = regexp.MustCompile(`(?i)Scanned over (\d+) tombstones(?: during query '([^']*)'| in ([\w.]+))?.{0,200}?query aborted|TombstoneOverwhelmingException|READ_TOO_MANY_TOMBSTONES|tombstone_failure_threshold`)
	// A node warning of many tombstones read.
	tombstoneWarnRE = regexp.MustCompile(`(?i)Read (\d+) live rows and (\d+) tombstone cells for query (.{0,200}?)(?:\(see tombstone_warn_threshold\)|$)`)
	// The table a query names.
	cqlTableRE = regexp.MustCompile(`(?i)\bFROM\s+"?([\w]+)"?\."?([\w]+)"?`)
	// nodetool tablestats' tombstones per slice.
	tombstonesPerSliceRE = regexp.MustCompile(`(?i)(Average|Maximum) tombstones per slice \(last five minutes\):\s*([\d.]+)`)
	gcGraceRE            = regexp.MustCompile(`(?i)gc_grace_seconds\s*=\s*(\d+)`)
	// A change that deletes rows or removes their TTL.
	tombstoneChangeRE = regexp.MustCompile(`(?i)\bdelet\w*\b.{0,80}\b(?:individually|one by one|per (?:row|message|item|record))|\bTTL\b.{0,40}\bremoved|remov\w* .{0,20}\bTTL\b|default_time_to_live`)
	// A workload's log saying it deletes rows.
	deleteLineRE = regexp.MustCompile(`(?i)\bdelet(?:e|ed|ing)\b`)
	// A Cassandra driver's read failure, as the client logs it.
	cassReadFailRE = regexp.MustCompile(`(?i)ReadFailureException|Cassandra failure during read query|ReadFailure|READ_TOO_MANY_TOMBSTONES|TombstoneOverwhelming`)
)

// cassandraLineRE recognises a Cassandra (or ScyllaDB) node's own log
// line: the level, the thread, the time ("ERROR [ReadStage-1] 2026-...").
var cassandraLineRE = regexp.MustCompile(`^(?:ERROR|WARN|INFO|DEBUG)\s+\[[^\]]+\] \d{4}-\d\d-\d\d|\bscylla(?:db)?\b`)

// stackFrameRE is a frame of a Java stack trace ("at com.x.Y.z(Y.java:1)").
var stackFrameRE = regexp.MustCompile(`^\s*at [\w$.]+\(`)

// detectTombstones reads aborted and warned reads on tombstones from the
// nodes' logs, with the table's statistics, its clients and its deleter.
func detectTombstones(ev *Gathered, found []Finding) []Finding {
	var (
		server, table, example, warnLine string
		first                            time.Time
		aborted, warned                  int
		maxPerSlice, avgPerSlice         string
		gcGrace                          string
		serverSets                       []string
		evid                             []string
	)
	for set, t := range incidentTemplates(ev) {
		for _, l := range t.Lines() {
			if m := findSubmatch(tombstoneAbortRE, l); m != nil && matchLine(cassandraLineRE, l) {
				aborted += t.Incident
				at := firstOf(t.FirstIncident, t.FirstSeen)
				if first.IsZero() || at.Before(first) {
					first = at
				}
				if tm := findSubmatch(cqlTableRE, l); tm != nil && table == "" {
					table = tm[1] + "." + tm[2]
				} else if m[3] != "" && table == "" {
					table = m[3]
				}
				if example == "" {
					example = l
					evid = append(evid, templateEvidence(*set, t, l))
				}
				server = orWord(server, serverOfLog(set))
				if !slices.Contains(serverSets, set.Subject) {
					serverSets = append(serverSets, set.Subject)
				}
				break
			}
			if m := findSubmatch(tombstoneWarnRE, l); m != nil {
				warned += t.Incident
				if warnLine == "" {
					warnLine = l
				}
				if tm := findSubmatch(cqlTableRE, l); tm != nil && table == "" {
					table = tm[1] + "." + tm[2]
				}
				server = orWord(server, serverOfLog(set))
				if !slices.Contains(serverSets, set.Subject) {
					serverSets = append(serverSets, set.Subject)
				}
				break
			}
		}
	}
	// nodetool and cqlsh run on a node.
	for _, c := range ev.Commands {
		run := strings.ToLower(orWord(c.Run, c.Command))
		if !strings.Contains(run, "nodetool") && !strings.Contains(run, "cqlsh") {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(tombstonesPerSliceRE, l); m != nil {
				if strings.EqualFold(m[1], "maximum") {
					maxPerSlice = m[2]
				} else {
					avgPerSlice = m[2]
				}
			}
			if m := findSubmatch(gcGraceRE, l); m != nil {
				gcGrace = m[1]
			}
		}
		if server == "" && c.Pod != "" && (maxPerSlice != "" || avgPerSlice != "") {
			server = workloadOfPodName(c.Pod)
		}
	}
	heavy := false
	if v, err := strconv.ParseFloat(maxPerSlice, 64); err == nil && v >= 100000 {
		heavy = true
	}
	if aborted == 0 && !(heavy && warned > 0) {
		return nil
	}
	if server == "" {
		server = "cassandra"
	}
	f := Finding{Kind: KindTombstones, Subject: server, Object: "table " + orWord(table, "?") + " on " + server, Time: first, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	if first.IsZero() {
		f.Time = ev.Window.Start
	}
	f.setFact("table", table)
	f.setFact("line", example)
	f.setFact("aborted", strconv.Itoa(aborted))
	f.Evidence = append(f.Evidence, evid...)
	if warnLine != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d reads warned of tombstones (tombstone_warn_threshold): %s", warned, quote(ReadableLine(warnLine), 200)))
	}
	if maxPerSlice != "" || avgPerSlice != "" {
		f.setFact("per_slice", fmt.Sprintf("average %s, maximum %s tombstones per slice", orWord(avgPerSlice, "?"), orWord(maxPerSlice, "?")))
		f.Evidence = append(f.Evidence, fmt.Sprintf("nodetool tablestats %s: %s (last five minutes)", orWord(table, ""), f.fact("per_slice")))
	}
	if gcGrace != "" {
		if s, err := strconv.Atoi(gcGrace); err == nil {
			f.setFact("gc_grace", fmt.Sprintf("%s s, %s", gcGrace, daysWord(time.Duration(s)*time.Second)))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s keeps tombstones for gc_grace_seconds = %s", orWord(table, "the table"), gcGrace))
	}
	// Clients: workloads whose logs show the driver's read failures.
	var clients logClients
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if slices.Contains(serverSets, set.Subject) || set.Host {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident > 0 && matchLine(cassReadFailRE, t.Example) && !matchLine(stackFrameRE, t.Example) && clients.add(set, t, t.Example) {
				break
			}
		}
	}
	f.Evidence = append(f.Evidence, clients.evidence...)
	clients.relate(&f)
	// The deleter: a workload whose log says it deletes rows of the table.
	short := table
	if _, tb, ok := strings.Cut(table, "."); ok {
		short = tb
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if slices.Contains(serverSets, set.Subject) || slices.Contains(clients.names, set.Subject) || f.fact("deleter") != "" {
			continue
		}
		for _, t := range set.Templates {
			l := t.Example
			if matchLine(deleteLineRE, l) && (short != "" && strings.Contains(l, short)) {
				f.setFact("deleter", set.Subject)
				f.setFact("deleter_line", ReadableLine(l))
				f.Related = appendNew(f.Related, set.Subject)
				f.Evidence = append(f.Evidence, templateEvidence(*set, t, l))
				break
			}
		}
	}
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		svc := strings.ToLower(c.Service)
		if svc != "" && svc == f.fact("deleter") || matchLine(tombstoneChangeRE, c.Description) {
			if f.fact("deleter") == "" && svc != "" {
				f.setFact("deleter", svc)
				f.Related = appendNew(f.Related, svc)
			}
			if svc == f.fact("deleter") {
				f.setFact("delete_change", fmt.Sprintf("%s of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
			}
		}
	}
	if d := f.fact("deleter"); d != "" {
		f.setFact("why", fmt.Sprintf("%s deletes rows of %s one by one, leaving tombstones that every read of those partitions scans", d, orWord(table, "the table")))
	}
	f.setFact("affected", strings.Join(f.Related, ","))
	f.Summary = fmt.Sprintf("%s: reads of %s aborted on tombstones (%d aborted reads)", server, orWord(table, "a table"), aborted)
	return []Finding{f}
}

func describeTombstones(h *Hypothesis, sc Scope) string {
	table := orWord(h.fact("table"), "a table")
	d := fmt.Sprintf("Cassandra on %s aborts reads of %s on tombstones: the partitions read hold more deleted cells (tombstones) than tombstone_failure_threshold (100,000 by default), so the node gives up the query and the client gets a read failure", h.Subject, table)
	if l := h.fact("line"); l != "" {
		d += ": " + quote(ReadableLine(l), 220)
	}
	if p := h.fact("per_slice"); p != "" {
		d += fmt.Sprintf(" (nodetool tablestats: %s)", p)
	}
	d += ". Only the partitions with the most deletes fail (the heaviest users), the others read fine"
	if c := h.fact("clients"); c != "" {
		d += fmt.Sprintf("; %s gets the read failures", c)
	}
	d += ". Deletes in Cassandra write tombstones, kept for gc_grace_seconds"
	d += h.wrapped(" (", "gc_grace", ")")
	d += " and dropped only by a compaction after that"
	if del := h.fact("deleter"); del != "" {
		d += fmt.Sprintf("; %s deletes the rows one by one", del)
		if l := h.fact("deleter_line"); l != "" {
			d += " (" + quote(l, 160) + ")"
		}
		d += h.clause(", since the ", "delete_change")
	}
	return d
}

// daysWord says a long duration in days ("10 days"), a shorter one as
// fmtLag does.
func daysWord(d time.Duration) string {
	if d >= 48*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return fmtLag(d)
}
