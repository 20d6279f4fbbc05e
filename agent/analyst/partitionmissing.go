package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A partitioned table with no partition for the rows being written: a
// table partitioned by time (by month, by day) needs its next partition
// made before the period starts, usually by a scheduled maintenance job
// (pg_partman's run_maintenance from pg_cron, a cron script, MySQL's
// event scheduler). When that job has been failing for weeks nobody
// notices until the last partition ends: at the first second of the new
// period every insert fails ("no partition of relation "order_events"
// found for row", SQLSTATE 23514; MySQL's "Table has no partition for
// value"; Oracle's ORA-14400). The writers' errors name the table; the
// database's log and the job's own bookkeeping (cron.job_run_details)
// say since when the job fails and why ("connection failed" after an
// authentication change, a permission, a lock). A deploy of a writer
// shortly before the boundary is a coincidence.

// KindPartitionMissing is an insert into a partitioned table refused
// because no partition covers the row.
const KindPartitionMissing Kind = "partition_missing"

var (
	// noPartitionRE is an insert refused for want of a partition:
	// PostgreSQL, MySQL/MariaDB and Oracle.
	noPartitionRE = regexp.MustCompile(`(?i)no partition of relation \\?"?([\w.]+?)\\?"? found for row|Table has no partition for value ([-\w:. ]+)|ORA-14400|inserted partition key does not map to any partition`)
	// partitionKeyRE is PostgreSQL's detail of the failing row's key.
	partitionKeyRE = regexp.MustCompile(`Partition key of the failing row contains \(([\w, ]+)\) = \(([^)]+)\)`)
	// partitionBoundRE is a range partition's upper bound in
	// pg_get_expr(relpartbound) or MySQL's VALUES LESS THAN.
	partitionBoundRE = regexp.MustCompile(`(?i)FOR VALUES FROM \('([^']+)'\) TO \('([^']+)'\)|VALUES LESS THAN \(\s*(?:TO_DAYS\(|UNIX_TIMESTAMP\()?'([^']+)'`)
	// partitionJobRE is the command of a job that makes partitions.
	partitionJobRE = regexp.MustCompile(`(?i)partman\.run_maintenance|run_maintenance_proc|create_partition|create_parent|ADD PARTITION|partition[_ ]maintenance|pg_partman`)
	// cronJobFailRE is pg_cron's log of a run that failed, with its job
	// id and reason.
	cronJobFailRE = regexp.MustCompile(`cron job (\d+) (connection failed|failed to [^\n]+|ERROR:[^\n]+|could not [^\n]+)`)
	// cronJobStartRE is pg_cron's log of a run starting, with its command.
	cronJobStartRE = regexp.MustCompile(`cron job (\d+) starting: (.+)`)
	// cronJobListRE is a row of cron.job: id, schedule, command.
	cronJobListRE = regexp.MustCompile(`^\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|`)
	// cronRunFailRE is a row of cron.job_run_details of a failed run:
	// id, status, message, start time.
	cronRunFailRE = regexp.MustCompile(`^\s*(\d+)\s*\|\s*failed\s*\|\s*([^|]+?)\s*\|\s*(\d{4}-\d\d-\d\d[ T][\d:.]+(?:[+-]\d\d(?::?\d\d)?|Z)?)`)
	// cronFailSpanRE is an aggregate of failed runs: status, count, first,
	// last.
	cronFailSpanRE = regexp.MustCompile(`^\s*failed\s*\|\s*(\d+)\s*\|\s*(\d{4}-\d\d-\d\d[ T][\d:.]+(?:[+-]\d\d(?::?\d\d)?|Z)?)\s*\|`)
)

var partitionMissing = &mechanism{
	kind:   KindPartitionMissing,
	class:  classCause,
	label:  "insert into a partitioned table with no partition for the row",
	detect: detectPartitionMissing,
	related: func(h *Hypothesis, f *Finding) bool {
		if ofListed(f, h.fact("clients"), ", ") {
			return true
		}
		return matchLine(noPartitionRE, f.fact("line")+" "+strings.Join(f.Evidence, " "))
	},
	// A writer's deploy before the boundary does not remove a partition;
	// the change that broke the maintenance job is named in the chain.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && c.Kind != KindFeatureFlag && matchLine(partitionJobRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		table := orWord(h.fact("table"), "the partitioned table")
		on := ""
		if h.Subject != "" && h.Subject != "database" {
			on = " on " + h.Subject
		}
		d := fmt.Sprintf("inserts into %s%s fail because no partition covers the rows being written", table, on)
		d += h.wrapped(" (partition key ", "key", ")")
		d += h.wrapped(": its last partition ends at ", "bound", ", and the partition for the next period was never created")
		who := "The writers'"
		if c := h.fact("clients"); c != "" {
			who = c + "'s"
		}
		d += fmt.Sprintf(". %s writes fail%s", who, h.wrapped(" from ", "since", ""))
		d += h.quoteClause(": ", "line", 160)
		if j := h.fact("job"); j != "" {
			d += fmt.Sprintf(". The partition maintenance job that should have made it (%s) has failed", j)
			d += h.wrapped(" since ", "job_failing_since", "")
			d += h.wrapped(" (", "job_failures", " failed runs)")
			d += h.wrapped(" with ", "job_error", "")
			d += h.wrapped(", right after ", "job_change", "")
		} else {
			d += ". The partition maintenance (pg_partman / a scheduled job) did not create it"
		}
		d += "; a deploy of a writer near the boundary is a coincidence"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		table := orWord(h.fact("table"), "the table")
		r.high("Create the missing partition of %s now (CALL partman.run_maintenance_proc() by hand, or CREATE TABLE … PARTITION OF %s FOR VALUES …, and a DEFAULT partition as a net), then replay the writes that failed", table, table)
		if h.fact("job") != "" {
			r.high("Fix the partition maintenance job %s%s so it runs again (for pg_cron over localhost: a pg_hba entry or cron.use_background_workers=on)", h.fact("job_id"), h.wrapped(" (failing with ", "job_error", ")"))
		} else {
			r.high("Find why the partition maintenance did not run and fix it")
		}
		r.med("Premake more partitions ahead (pg_partman premake, several periods) so a failing job leaves weeks of margin")
		r.low("Alert on failed runs of cron.job_run_details and on the number of future partitions of %s", table)
	},
}

// detectPartitionMissing finds writes refused for want of a partition and
// reads the partition bounds and the maintenance job that should have
// made the missing one.
func detectPartitionMissing(ev *Gathered, _ []Finding) []Finding {
	var (
		clients      []string
		table, line  string
		key          string
		first        time.Time
		lines        int
		serverSubj   string
		clientsLines int
	)
	for set, t := range incidentTemplates(ev) {
		l := templateLine(t, noPartitionRE)
		if l == "" {
			continue
		}
		lines += t.Incident
		at := firstOf(t.FirstIncident, t.FirstSeen)
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if m := findSubmatch(noPartitionRE, l); m != nil && table == "" && m[1] != "" {
			table = m[1]
		}
		name := orWord(set.Subject, subjectOfSource(set.Source))
		if serverLog(set) || strings.Contains(l, "ERROR:  no partition") || set.Host {
			serverSubj = orWord(serverSubj, name)
			continue
		}
		clientsLines += t.Incident
		if !slices.Contains(clients, name) {
			clients = append(clients, name)
		}
		if line == "" {
			line = l
		}
	}
	if lines < 2 {
		return nil
	}
	subject := orWord(serverSubj, "database")
	f := Finding{Kind: KindPartitionMissing, Subject: subject, Object: "table " + orWord(table, "?"), Source: SrcLogs,
		Time: first, Severity: SevCritical, Weight: 0.8}
	f.Related = append(f.Related, clients...)
	f.setFact("table", table)
	f.setFact("clients", strings.Join(clients, ", "))
	f.setFact("since", ts(first))
	f.setFact("line", line)
	for _, t := range allTemplates(ev) {
		for _, l := range t.Lines() {
			if m := findSubmatch(partitionKeyRE, l); m != nil && key == "" {
				key = fmt.Sprintf("(%s) = %s", m[1], m[2])
			}
		}
	}
	f.setFact("key", key)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%d writes into %s refused from %s: %s", lines, orWord(table, "a partitioned table"), ts(first), quote(ReadableLine(orWord(line, "no partition for the row")), 200)))

	// The partitions' bounds, the jobs and their failed runs in the
	// operator's psql output and the server's log.
	var bound string
	jobs := map[string]string{}
	var jobFailFirst time.Time
	jobErr, jobFailures := map[string]string{}, map[string]string{}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(partitionBoundRE, l); m != nil {
				if b := orWord(m[2], m[3]); b > bound && (table == "" || strings.Contains(l, table[strings.LastIndex(table, ".")+1:])) {
					bound = b
				}
			}
			if m := findSubmatch(cronJobListRE, l); m != nil && matchLine(partitionJobRE, m[3]) {
				jobs[m[1]] = m[3]
			}
			if m := findSubmatch(cronRunFailRE, l); m != nil {
				jobErr[m[1]] = orWord(jobErr[m[1]], m[2])
				if t, ok := parseDBTime(m[3]); ok && (jobFailFirst.IsZero() || t.Before(jobFailFirst)) {
					jobFailFirst = t
				}
			}
			if m := findSubmatch(cronFailSpanRE, l); m != nil {
				jobFailures["*"] = m[1]
				if t, ok := parseDBTime(m[2]); ok && (jobFailFirst.IsZero() || t.Before(jobFailFirst)) {
					jobFailFirst = t
				}
			}
		}
	}
	for _, t := range allTemplates(ev) {
		for _, l := range t.Lines() {
			if m := findSubmatch(cronJobFailRE, l); m != nil {
				jobErr[m[1]] = orWord(jobErr[m[1]], m[2])
				if jobs[m[1]] == "" && matchLine(partitionJobRE, strings.Join(t.Lines(), " ")) {
					jobs[m[1]] = "partition maintenance"
				}
			}
			if m := findSubmatch(cronJobStartRE, l); m != nil && matchLine(partitionJobRE, m[2]) && jobs[m[1]] == "" {
				jobs[m[1]] = strings.TrimSpace(m[2])
			}
		}
	}
	f.setFact("bound", bound)
	for id, cmd := range jobs {
		if jobErr[id] == "" {
			continue
		}
		f.setFact("job", fmt.Sprintf("pg_cron job %s: %s", id, cmd))
		f.setFact("job_id", id)
		f.setFact("job_error", fmt.Sprintf("%q", jobErr[id]))
		f.setFact("job_failures", jobFailures["*"])
		if !jobFailFirst.IsZero() && jobFailFirst.Before(first) {
			f.setFact("job_failing_since", ts(jobFailFirst))
			// The change just before it began failing.
			var best *Finding
			for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
				if c.Timestamp.After(jobFailFirst) || c.Timestamp.Before(jobFailFirst.Add(-48*time.Hour)) {
					continue
				}
				if best == nil || c.Timestamp.After(best.Time) {
					best = &Finding{Time: c.Timestamp, Subject: c.Service}
					best.setFact("description", c.Description)
					best.setFact("kind", c.Kind)
				}
			}
			if best != nil {
				f.setFact("job_change", fmt.Sprintf("the %s change of %s at %s: %q", best.fact("kind"), best.Subject, ts(best.Time), best.fact("description")))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s change of %s at %s: %q", best.fact("kind"), best.Subject, ts(best.Time), best.fact("description")))
			}
		}
		since := ""
		if !jobFailFirst.IsZero() {
			since = " since " + ts(jobFailFirst)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("partition maintenance job %s (%s) failing with %q%s", id, cmd, jobErr[id], since))
		f.Weight = 0.95
		break
	}
	if bound != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the last partition of %s ends at %s", orWord(table, "the table"), bound))
	}
	f.Summary = fmt.Sprintf("%s: no partition for rows of %s from %s", subject, orWord(table, "a partitioned table"), hm(first))
	return []Finding{f}
}

// parseDBTime reads a timestamp as psql prints it ("2026-10-30
// 10:17:00.009172+00").
func parseDBTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999", "2006-01-02T15:04:05.999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
