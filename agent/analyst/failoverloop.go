package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A failover loop: the database's failure detection (Redis Sentinel's
// down-after-milliseconds, a replica set's election timeout, Patroni's
// ttl, Redis Cluster's cluster-node-timeout) is shorter than a pause its
// healthy primary makes on its own — the fork of a background save
// (BGSAVE, an AOF rewrite) copying a large heap's page tables, a GC pause
// — so each pause reads as a failure: the primary is demoted, a replica
// promoted, and after the next pause again. Writes that reach a demoted
// primary in between fail read-only (readonlydatabase.go), on and off.
// What shows it: many failovers in the window in the members' own logs
// (Sentinel's +sdown/+switch-master, elections won), a change that
// lowered the detection timeout, the primary's pause (INFO persistence's
// latest_fork_usec, "Background saving started" just before each +sdown).

// KindFailoverLoop is a primary failed over again and again.
const KindFailoverLoop Kind = "failover_loop"

var failoverLoop = &mechanism{
	kind:  KindFailoverLoop,
	class: classCause,
	label: "failover loop (failure detection shorter than the primary's pauses)",
	// Found with the writes it refuses (detectReadOnlyWrites); the
	// clients whose writes fail suffer it.
	related: listedIn("clients", ", "),
	describe: func(h *Hypothesis, sc Scope) string {
		return describeFailoverLoop(h, orWord(h.fact("engine"), "database"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if s := h.fact("detect_setting"); s != "" {
			r.high("Raise %s of %s back above the primary's longest pause (%s was %s before it was lowered): revert the change that lowered it", s, h.Subject, s, orWord(h.fact("detect_old"), "its earlier value"))
		} else {
			r.high("Lengthen the failure detection of %s (Sentinel down-after-milliseconds, election timeout) above the primary's longest pause", h.Subject)
		}
		r.med("Shorten the primary's pauses: schedule or move background saves (BGSAVE, AOF rewrite) to a replica, or shrink the dataset per node so a fork copies fewer page tables")
		r.low("Alert on the rate of failovers (+switch-master, elections) of %s, not only on its clients' errors", h.Subject)
	},
}

var (
	// Sentinel's configuration epoch, one per failover.
	newEpochRE = regexp.MustCompile(`\+new-epoch (\d+)`)
	// One failover completed, as a member or a client logs it.
	failoverEventRE = regexp.MustCompile(`(?i)\+switch-master|\+failover-end\b|Failover election won|Election succeeded|promoted self to leader|assuming primary role|Transition to primary complete|became leader at term|elected leader \S+ at term`)
	// A failure-detection setting and its value, or its change
	// ("downAfterMilliseconds 5000 -> 1000", "down-after-milliseconds\t1000").
	failureDetectRE = regexp.MustCompile(`(?i)(down-?after-?milli(?:second)?s|electionTimeoutMillis|election[_-]?timeout(?:[_-]?ms)?|heartbeat[_-]?timeout(?:[_-]?(?:ms|secs))?|cluster-node-timeout|failureDetectionTimeout|loop_wait|\bttl\b)["'=:\s]*(\d+)(?:\s*(?:->|→|=>|to)\s*(\d+))?`)
	// The primary's pause: the fork of a background save (INFO's
	// latest_fork_usec) and the save starting in its log.
	forkUsecRE = regexp.MustCompile(`latest_fork_usec:(\d+)`)
	bgsaveRE   = regexp.MustCompile(`(?i)Background saving started|Background append only file rewriting started|BGSAVE`)
)

// readFailoverLoop reads, in the members' logs, three failovers or more
// during the incident: the primary flips again and again. It names the
// failure-detection setting (its change, or its value read from the
// members) and the primary's pause that exceeds it, when read.
func readFailoverLoop(ev *Gathered, f *Finding, clients []string) {
	n, line, src := 0, "", ""
	var from, to time.Time
	for i := range ev.Logs {
		set := &ev.Logs[i]
		c := 0
		var l string
		var a, b time.Time
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			if x := templateLine(t, failoverEventRE); x != "" {
				c += t.Incident
				l = orWord(l, x)
				a = earliest(a, orTime(t.FirstIncident, t.FirstSeen))
				b = latest(b, t.LastSeen)
			}
		}
		// A member's own log counts before a client's.
		member := !containsStr(clients, set.Subject)
		if c > n || c == n && member && src != "" && containsStr(clients, src) {
			n, line, src, from, to = c, l, set.Subject, a, b
		}
	}
	if n < 3 {
		return
	}
	// Every sentinel logs every switch: Sentinel's epochs count the
	// failovers themselves.
	count := fmt.Sprintf("%d failover events logged", n)
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			a, b := findSubmatch(newEpochRE, t.Example), findSubmatch(newEpochRE, t.Last)
			if t.Incident == 0 || a == nil || b == nil {
				continue
			}
			x, _ := strconv.Atoi(a[1])
			y, _ := strconv.Atoi(b[1])
			if y >= x && y-x+1 >= 3 {
				count = fmt.Sprintf("%d failovers (configuration epochs %d to %d)", y-x+1, x, y)
			}
		}
	}
	f.Kind = KindFailoverLoop
	f.setFact("failovers", count)
	f.setFact("failover_line", line)
	f.setFact("loop_from", hm(from))
	f.setFact("loop_to", hm(to))
	if !containsStr(clients, src) && f.fact("host") == "" {
		f.setFact("host", memberSet(src))
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %s from %s to %s: %s", src, count, hm(from), hm(to), quote(ReadableLine(line), 200)))
	// The failure-detection setting: a change that set it, else its
	// value as the members report it.
	var setting, old, value string
	for _, c := range append(changeLines(ev, failureDetectRE), eventLines(ev, failureDetectRE)...) {
		if c.Time.After(to) || !c.Time.IsZero() && from.Sub(c.Time) > 24*time.Hour {
			continue
		}
		m := findSubmatch(failureDetectRE, c.Text)
		if m[3] != "" && strings.HasPrefix(c.From, "change of ") {
			if a, _ := strconv.Atoi(m[2]); a > 0 {
				if b, _ := strconv.Atoi(m[3]); b < a {
					setting, old, value = m[1], m[2], m[3]
					f.setFact("detect_change", c.Text)
					f.setFact("detect_change_at", hm(c.Time))
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s at %s lowered %s from %s to %s: %s", c.From, ts(c.Time), m[1], m[2], m[3], quote(c.Text, 200)))
					break
				}
			}
		}
		if value == "" && m[3] == "" {
			setting, value = m[1], m[2]
		}
	}
	if value != "" {
		f.setFact("detect_setting", setting)
		f.setFact("detect_value", value)
		f.setFact("detect_old", old)
	}
	// The primary's pause: the fork of its background save.
	var forkMS float64
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(forkUsecRE, l); m != nil {
				us, _ := strconv.ParseFloat(m[1], 64)
				forkMS = max(forkMS, us/1000)
			}
		}
	}
	saves := 0
	for x := range incidentMatches(ev, bgsaveRE) {
		saves += x.t.Incident
	}
	if forkMS > 0 {
		f.setFact("fork_ms", strconv.FormatFloat(forkMS, 'f', 0, 64))
		f.Evidence = append(f.Evidence, fmt.Sprintf("the primary's last background-save fork took %.1f s (latest_fork_usec)", forkMS/1000))
	}
	if saves > 0 {
		f.setFact("bgsaves", strconv.Itoa(saves))
	}
	v, _ := strconv.ParseFloat(value, 64)
	switch {
	case forkMS > 0 && v > 0 && forkMS > v:
		f.setFact("why", fmt.Sprintf("the primary's background-save fork (%.1f s) outlasts %s %s", forkMS/1000, setting, value))
	case old != "":
		f.setFact("why", fmt.Sprintf("%s lowered from %s to %s", setting, old, value))
	}
	f.Weight = max(f.Weight, 0.95)
}

// describeFailoverLoop explains writes refused on and off while the
// primary flips again and again.
func describeFailoverLoop(h *Hypothesis, engine string) string {
	d := fmt.Sprintf("the %s primary of %s fails over again and again (flapping): %s from %s to %s (%s)",
		engine, h.Subject, h.fact("failovers"), h.fact("loop_from"), h.fact("loop_to"), quote(ReadableLine(h.fact("failover_line")), 140))
	d += fmt.Sprintf("; each time the old primary is demoted to a replica, and the writes of %s that reach it before they follow the switch fail read-only", orWord(h.fact("clients"), "the clients"))
	if l := h.fact("line"); l != "" {
		d += " (" + quote(ReadableLine(l), 140) + ")"
	}
	s, v := h.fact("detect_setting"), h.fact("detect_value")
	switch {
	case s != "" && h.fact("detect_old") != "":
		d += fmt.Sprintf(". The failure detection is too short: %s was lowered from %s to %s at %s (%s)", s, h.fact("detect_old"), v, h.fact("detect_change_at"), quote(h.fact("detect_change"), 160))
	case s != "":
		d += fmt.Sprintf(". The failure detection is short: %s is %s", s, v)
	default:
		d += ". The failure detection marks a healthy primary down"
	}
	if ms := h.fact("fork_ms"); ms != "" {
		x, _ := strconv.ParseFloat(ms, 64)
		d += fmt.Sprintf(", while each background save (BGSAVE) forks the primary and stalls it %.1f s (latest_fork_usec), longer than that", x/1000)
	} else if h.fact("bgsaves") != "" {
		d += ", while each background save (BGSAVE) forks the primary and stalls it"
	}
	d += ": every pause reads as a failure"
	return d
}
