package analyst

import (
	"fmt"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/rediscli"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KindBlockingCommand: a single-threaded server (Redis, Valkey, KeyDB) runs
// one command at a time, so a command that walks the whole keyspace or a
// huge collection (KEYS, FLUSHALL, SMEMBERS of a big set, HGETALL of a big
// hash, LRANGE 0 -1) stalls every other client for as long as it runs:
// their reads time out now and then although the server is up, and the
// root is whoever sends that command — often a new tool, exporter or
// report, not the clients that time out.
const KindBlockingCommand Kind = "blocking_command"

var blockingCommand = &mechanism{
	kind:   KindBlockingCommand,
	class:  classCause,
	label:  "a slow command blocks a single-threaded server",
	detect: detectBlockingCommand,
	related: func(h *Hypothesis, f *Finding) bool {
		if infoOf(f.Kind).class == classChange {
			return false
		}
		inst := strings.ToLower(h.Subject)
		return strings.HasPrefix(strings.ToLower(f.Subject), inst) || slices.ContainsFunc(h.Primary, func(p *Finding) bool { return slices.Contains(p.Related, f.Subject) })
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		b := h.fact("blocker")
		return b != "" && strings.EqualFold(c.Subject, b)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		cmd := orWord(h.fact("command"), "a slow command")
		d := fmt.Sprintf("%s on %s blocks it: the server runs one command at a time, so while %s walks the keyspace (%s per call) every other client's commands wait behind it (slow answers, timeouts)", cmd, h.Subject, cmd, orWord(h.fact("per_call"), "seconds"))
		if b := h.fact("blocker"); b != "" {
			d += fmt.Sprintf("; %s sends it", b)
			d += h.quoteClause(": ", "blocker_line", 200)
		}
		d += h.clause("; ", "metric")
		d += h.clause("; the clients that time out: ", "victims")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		cmd := orWord(h.fact("command"), "the slow command")
		b := orWord(h.fact("blocker"), "the client that sends it")
		r.high("Stop %s from running %s on %s (disable or roll back %s)", b, cmd, h.Subject, b)
		r.med("Replace %s with an incremental SCAN (or keep a counter) and keep such tools on a replica, never on the primary the application reads", cmd)
		r.low("Rename or disable dangerous commands (rename-command KEYS \"\") and alert on the server's slowlog and per-command time")
	},
}

var (
	// Commands that walk the whole keyspace or a whole collection.
	blockingCmds = map[string]bool{"keys": true, "flushall": true, "flushdb": true, "smembers": true, "hgetall": true, "lrange": true,
		"sunion": true, "sinter": true, "sdiff": true, "zunionstore": true, "zinterstore": true, "sort": true, "save": true, "debug": true, "eval": true, "evalsha": true}
	cmdMetricRE = regexp.MustCompile(`(?i)^(redis|valkey|keydb)_commands_duration_seconds`)
	// A client's line naming such a command, with what it took.
	blockingLineRE = regexp.MustCompile(`(?:\b|=|")(KEYS|FLUSHALL|FLUSHDB|SMEMBERS|HGETALL|LRANGE|SUNION|ZUNIONSTORE|SORT|SAVE)\b`)
)

// detectBlockingCommand finds a blocking command on a single-threaded
// server from its per-command time and from the client that logs sending
// it.
func detectBlockingCommand(ev *Gathered, found []Finding) []Finding {
	w := ev.Window
	type hit struct {
		inst, cmd, metric, perCall string
		onset                      time.Time
		blocker, blockerLine       string
		blockerAt                  time.Time
		// What the server's slow log and commandstats say.
		slowlog               int
		slowest               float64
		entry, stats          string
		clients               map[string]int
		firstEntry, lastEntry time.Time
	}
	hits := map[string]*hit{}
	// hitOf is the hit of cmd on server inst, new if none yet.
	hitOf := func(inst, cmd string) *hit {
		k := inst + "|" + cmd
		h := hits[k]
		if h == nil {
			h = &hit{inst: inst, cmd: strings.ToUpper(cmd), clients: map[string]int{}}
			hits[k] = h
		}
		return h
	}
	// note records a slow-log entry (e.lines lines of it) of a walking
	// command slower than a tenth of a second.
	note := func(e deliveredEntry) {
		cmd := strings.ToLower(e.Command())
		if !blockingCmds[cmd] || e.Duration < 100*time.Millisecond || e.first.After(w.End) {
			return
		}
		h := hitOf(e.node, cmd)
		h.slowlog += e.lines
		if d := e.Duration.Seconds(); d > h.slowest {
			h.slowest = d
			h.perCall = formatValue(d, "s")
			h.entry = fmt.Sprintf("%s's slow log: %s took %s at %s, sent by %s", e.node, strings.Join(e.Args, " "), h.perCall, ts(e.At), orWord(clientWord(e.SlowEntry), "an unnamed client"))
		}
		if e.Client != "" {
			h.clients[e.Client] += e.lines
		}
		if h.lastEntry.IsZero() || e.last.After(h.lastEntry) {
			h.lastEntry = e.last
		}
		if h.firstEntry.IsZero() || e.first.Before(h.firstEntry) {
			h.firstEntry = e.first
		}
	}
	// The server's own slow log and per-command statistics, as an
	// investigator read them with redis-cli: each walking command slower
	// than a tenth of a second stalled every client for that long, and the
	// entry names the client that sent it (CLIENT SETNAME) — direct
	// evidence, whatever the baseline held.
	for _, c := range ev.Commands {
		inst := serverOfCommand(c)
		if inst == "" {
			continue
		}
		switch {
		case matchLine(slowlogGetRE, c.Run):
			for _, e := range rediscli.ParseSlowlog(c.Lines) {
				note(deliveredEntry{SlowEntry: e, node: inst, lines: 1, first: e.At, last: e.At})
			}
		case matchLine(commandstatsRE, c.Run) || slices.ContainsFunc(c.Lines, func(l string) bool { return strings.HasPrefix(l, "cmdstat_") }):
			for cmd, st := range rediscli.ParseCommandStats(c.Lines) {
				cmd = strings.ToLower(cmd)
				if !blockingCmds[cmd] || st.PerCall < 100*time.Millisecond {
					continue
				}
				h := hitOf(inst, cmd)
				h.stats = fmt.Sprintf("INFO commandstats of %s: %s %d calls, %s per call", inst, strings.ToUpper(cmd), st.Calls, formatValue(st.PerCall.Seconds(), "s"))
				if h.perCall == "" {
					h.perCall = formatValue(st.PerCall.Seconds(), "s")
				}
			}
		}
	}
	// The server's time per command: a walking command that takes a share
	// of its single thread it did not take before.
	for _, ms := range ev.Metrics {
		if !matchLine(cmdMetricRE, ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			cmd := strings.ToLower(orWord(s.Labels["cmd"], s.Labels["command"]))
			if !blockingCmds[cmd] {
				continue
			}
			inst := strings.ToLower(DependencyName(orWord(s.Labels["instance"], s.Labels["addr"])))
			var before []float64
			peak, onset := 0.0, time.Time{}
			for _, p := range s.Points {
				switch {
				case p.T.Before(w.Start):
					before = append(before, p.V)
				case !p.T.After(w.End):
					peak = max(peak, p.V)
				}
			}
			base := medianOf(before)
			// At least 1% of the thread's time, and several times before.
			if peak < 0.01 || peak < 5*base+0.005 {
				// A command the slow log shows stalling the server: its
				// share, however small, and since when it takes one.
				if x := hits[inst+"|"+cmd]; x != nil && peak > 0 {
					x.metric = fmt.Sprintf("%s{cmd=%q} of %s: %.1f%% of the server's time at most (%.1f%% in the baseline)", ms.Name, cmd, inst, peak*100, base*100)
					for _, p := range s.Points {
						if p.V >= 0.5*peak {
							if p.T.After(s.Points[0].T) {
								x.onset = p.T
							}
							break
						}
					}
				}
				continue
			}
			for _, p := range s.Points {
				if !p.T.Before(w.BaselineStart) && p.V >= max(0.005, 3*base) {
					onset = p.T
					break
				}
			}
			h := hitOf(inst, cmd)
			h.onset = onset
			h.metric = fmt.Sprintf("%s{cmd=%q} of %s rose from %.1f%% to %.1f%% of the server's time", ms.Name, cmd, inst, base*100, peak*100)
		}
	}
	// The slow log as a managed service delivers it to a log stream
	// (ElastiCache to CloudWatch Logs): the same entries, one per line.
	for _, e := range deliveredSlowlog(ev.Commands) {
		note(e)
	}
	// A client's own log of sending it, with what it took.
	for set, t := range incidentTemplates(ev) {
		m := findSubmatch(blockingLineRE, t.Example)
		if m == nil {
			continue
		}
		d, ok := fieldDuration(t.Example)
		if !ok || d < 0.5 {
			continue
		}
		cmd := strings.ToLower(m[1])
		target := DependencyTarget(t.Example)
		inst := strings.ToLower(DependencyName(target))
		if i := strings.Index(inst, "."); i > 0 {
			inst = inst[:i]
		}
		var h *hit
		for k, x := range hits {
			if strings.HasSuffix(k, "|"+cmd) && (inst == "" || strings.HasPrefix(x.inst, inst) || strings.HasPrefix(inst, x.inst)) {
				h = x
			}
		}
		if h == nil {
			if inst == "" {
				continue
			}
			h = hitOf(inst, cmd)
			h.onset = firstOf(t.FirstIncident, t.FirstSeen)
		}
		h.blocker = orWord(subjectOfSource(set.Source), set.Subject)
		h.blockerLine = t.Example
		h.blockerAt = firstOf(t.FirstSeen, t.FirstIncident)
		h.perCall = formatValue(d, "s")
		if h.onset.IsZero() || h.blockerAt.Before(h.onset) {
			h.onset = h.blockerAt
		}
	}
	keys := slices.Sorted(maps.Keys(hits))
	var out []Finding
	for _, k := range keys {
		h := hits[k]
		// The slow log's entries in the window show the stall now: a
		// start the data does not show is the baseline's.
		direct := h.slowlog > 0 && !h.lastEntry.Before(w.BaselineStart)
		if h.blocker == "" {
			h.blocker = topClient(h.clients)
		}
		if direct && (h.onset.IsZero() || h.onset.Before(w.BaselineStart)) {
			h.onset = firstOf(h.blockerAt, h.firstEntry)
			if h.onset.Before(w.BaselineStart) {
				h.onset = w.BaselineStart
			}
		}
		if h.onset.IsZero() || h.onset.Before(w.BaselineStart) {
			continue
		}
		f := Finding{Kind: KindBlockingCommand, Subject: h.inst, Object: "server " + h.inst, Time: h.onset, Severity: SevCritical, Weight: 0.75, Source: SrcMetrics}
		switch {
		case (h.metric != "" || direct) && h.blocker != "":
			f.Weight = 0.92
		case direct:
			f.Weight = 0.85
			f.Source = SrcKubernetes
		case h.metric == "":
			f.Source = SrcLogs
		}
		for _, e := range []string{h.entry, h.stats} {
			if e != "" {
				f.Evidence = append(f.Evidence, e)
			}
		}
		if direct && h.blocker != "" {
			f.setFact("why", fmt.Sprintf("%s sends %s (slow log)", h.blocker, h.cmd))
		}
		f.setFact("command", h.cmd)
		f.setFact("per_call", h.perCall)
		f.setFact("blocker", h.blocker)
		f.setFact("blocker_line", h.blockerLine)
		if h.metric != "" {
			f.setFact("metric", h.metric)
			f.Evidence = append(f.Evidence, h.metric)
		}
		if h.blocker != "" {
			f.Related = append(f.Related, h.blocker)
			if h.blockerLine != "" {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s sends %s to %s, taking %s each time from %s: %s", h.blocker, h.cmd, h.inst, h.perCall, ts(h.blockerAt), quote(ReadableLine(h.blockerLine), 200)))
			}
		}
		victims := blockedClients(found, h.inst)
		for _, v := range serverVictims(found, h.inst, h.blocker, h.onset) {
			if !slices.Contains(victims, v) {
				victims = append(victims, v)
			}
		}
		for _, v := range victims {
			if !slices.Contains(f.Related, v) {
				f.Related = append(f.Related, v)
			}
		}
		f.setFact("victims", strings.Join(victims, ", "))
		f.setFact("affected", strings.Join(f.Related, ","))
		f.Summary = fmt.Sprintf("%s on %s blocks the server (%s per call)", h.cmd, h.inst, orWord(h.perCall, "seconds"))
		out = append(out, f)
	}
	return out
}

// blockedClients are the callers whose calls to the server time out or
// fail, and the callers of those callers that time out on them.
func blockedClients(found []Finding, inst string) []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for i := range found {
		f := &found[i]
		if infoOf(f.Kind).class != classDependency || !strings.HasPrefix(strings.ToLower(f.Subject), inst) {
			continue
		}
		add(f.fact("caller"))
	}
	for i := range found {
		f := &found[i]
		if infoOf(f.Kind).class == classDependency && slices.Contains(out, f.Subject) {
			add(f.fact("caller"))
		}
	}
	return out
}

// fieldDuration is the longest duration a line reports, in prose ("took 2.1
// s") or as a logfmt/JSON field ("took=1.727s", "elapsed_ms=1727",
// "duration":"2.1s"), in seconds.
func fieldDuration(line string) (float64, bool) {
	best, ok := lineDuration(line)
	for _, m := range findAllSubmatch(durationFieldRE, line, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		unit := strings.ToLower(orWord(m[3], m[1]))
		switch {
		case strings.HasPrefix(unit, "ms") || strings.HasPrefix(unit, "milli"):
			v /= 1000
		case unit == "us" || unit == "µs" || strings.HasPrefix(unit, "micro"):
			v /= 1e6
		case unit == "m" || strings.HasPrefix(unit, "min"):
			v *= 60
		case unit == "" || unit == "ns":
			continue // no unit: not a duration one can read
		}
		if v > best {
			best, ok = v, true
		}
	}
	return best, ok
}

var durationFieldRE = regexp.MustCompile(`(?i)\b(?:took|elapsed|duration|dur|latency|took_time)(?:_(ms|s|sec|seconds|us|millis))?"?\s*[=:]\s*"?(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds|us|µs|m|min)?\b`)

var (
	slowlogGetRE   = regexp.MustCompile(`(?i)\bslowlog\s+get\b`)
	commandstatsRE = regexp.MustCompile(`(?i)\binfo\s+commandstats\b`)
	cliHostRE      = regexp.MustCompile(`(?:^|\s)-h\s+(\S+)|redis(?:s)?://(?:[^@/\s]+@)?([\w.-]+)`)
)

// serverOfCommand names the server a redis-cli command read: the host of
// its -h or URL, else the workload of the pod it ran in ("" when the
// command is no redis-cli, valkey-cli or keydb-cli).
func serverOfCommand(c evidence.CommandOutput) string {
	run := orWord(c.Run, c.Command)
	if !strings.Contains(strings.ToLower(run), "-cli") {
		return ""
	}
	if m := findSubmatch(cliHostRE, run); m != nil {
		if h := strings.ToLower(DependencyName(orWord(m[1], m[2]))); h != "" && h != "localhost" && h != "127.0.0.1" {
			if i := strings.Index(h, "."); i > 0 {
				h = h[:i]
			}
			return h
		}
	}
	if c.Pod != "" {
		return workloadOfName(c.Pod)
	}
	if _, name, ok := strings.Cut(c.Target, "/"); ok {
		return name
	}
	return ""
}

// clientWord names a slow-log entry's client: its name, else its address.
func clientWord(e rediscli.SlowEntry) string {
	if e.Client != "" {
		return e.Client
	}
	return e.Addr
}

// topClient is the client name most entries name ("" for none).
func topClient(counts map[string]int) string {
	best := ""
	for _, c := range byCount(counts) {
		best = c
		break
	}
	return best
}
