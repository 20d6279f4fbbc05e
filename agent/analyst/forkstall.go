package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A single-threaded in-memory store (Redis, Valkey, KeyDB) stalled by its
// own snapshots: to write an RDB file (BGSAVE, the "save" rules, an AOF
// rewrite, a full sync to a replica) the server forks, and fork copies the
// page tables of the whole dataset while the server answers nobody. Cheap
// on a small dataset, it takes a second or more on a large one (worse with
// Transparent Huge Pages), so every client's commands wait that long at
// each snapshot: the callers' p99 jumps on the snapshot's period ("save
// 900 1": every fifteen minutes) with no error anywhere, and the callers'
// own deploys are innocent. The server says so: INFO's latest_fork_usec,
// LATENCY LATEST's "fork" event, redis_exporter's redis_latest_fork_seconds,
// and its log ("Background saving started by pid", "Fork CoW for RDB").
// The fix is the snapshot (persist on a replica, turn RDB off where it is
// not needed, disable THP, a smaller dataset), not the callers.

// KindForkStall is a single-threaded store stalled by the fork of its
// snapshots.
const KindForkStall Kind = "fork_stall"

var forkStall = &mechanism{
	kind:   KindForkStall,
	class:  classCause,
	label:  "snapshot fork stalls a single-threaded store",
	detect: detectForkStall,
	related: func(h *Hypothesis, f *Finding) bool {
		if infoOf(f.Kind).class == classChange {
			return false
		}
		if strings.EqualFold(f.Subject, h.Subject) {
			return true
		}
		return (f.Kind == KindLatency || f.Kind == KindTimeout) && slices.ContainsFunc(h.Primary, func(p *Finding) bool { return slices.Contains(p.Related, f.Subject) })
	},
	// What made the fork slow: a change of the store's snapshots or
	// memory; a client's release near the onset is a coincidence.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.EqualFold(c.Subject, h.Subject) && (c.Kind == KindConfigChange || matchLine(forkChangeRE, t))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s stalls on every snapshot: to write its RDB file (background saving, BGSAVE) it forks, and the fork of its %s dataset takes %s", h.Subject, orWord(h.fact("dataset"), "large"), orWord(h.fact("fork"), "seconds"))
		if n := h.fact("thp"); n != "" {
			d += " with Transparent Huge Pages enabled"
		}
		d += ", during which the single-threaded server answers no client"
		var seen []string
		for _, k := range []string{"save", "saves", "latency_event"} {
			if v := h.fact(k); v != "" {
				seen = append(seen, v)
			}
		}
		if len(seen) > 0 {
			d += " (" + strings.Join(seen, "; ") + ")"
		}
		if v := h.fact("victims"); v != "" {
			d += fmt.Sprintf("; so the latency of its clients (%s) jumps at each snapshot, with no error anywhere", v)
		} else {
			d += "; so its clients' latency jumps at each snapshot, with no error anywhere"
		}
		if p := h.fact("period"); p != "" {
			d += " — every " + p
		}
		d += ": the cause is the snapshot's fork of a large dataset, not the clients or their deploys"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.high("Stop forking %s's primary for snapshots: take RDB/AOF persistence on a replica (or turn the save rules off where persistence is not needed: CONFIG SET save \"\")", s)
		if h.fact("thp") != "" {
			r.high("Disable Transparent Huge Pages on %s's node (echo never > /sys/kernel/mm/transparent_hugepage/enabled) and restart it", s)
		}
		r.med("Shrink %s's dataset (TTLs, smaller values) or shard it so a fork copies fewer page tables", s)
		r.low("Alert on latest_fork_usec (redis_latest_fork_seconds) above 100 ms and on LATENCY LATEST's fork event of %s", s)
	},
}

var (
	forkLogRE     = regexp.MustCompile(`Background saving started by pid|Background append only file rewriting started by pid|Starting BGSAVE for SYNC|Fork CoW for RDB`)
	bgsaveStartRE = regexp.MustCompile(`Background saving started by pid|Background append only file rewriting started by pid|Starting BGSAVE for SYNC`)
	thpWarnRE     = regexp.MustCompile(`Transparent Huge Pages \(THP\) support enabled`)
	usedMemoryRE  = regexp.MustCompile(`^\s*used_memory_human:([\d.]+[KMGT]?)`)
	// LATENCY LATEST's fork row, nested (redis-cli's default) or raw.
	latencyForkRE = regexp.MustCompile(`^\s*(?:\d+\)\s*)*"?fork"?\s*$`)
	latencyIntRE  = regexp.MustCompile(`^\s*(?:\d+\)\s*)?(?:\(integer\)\s*)?(\d+)\s*$`)
	saveRuleRE    = regexp.MustCompile(`^\s*(\d+) (\d+)(?: \d+ \d+)*\s*$`)
	forkMetricRE  = regexp.MustCompile(`(?i)^(?:redis|valkey|keydb)_latest_fork_(seconds|usec|microseconds)$`)
	forkChangeRE  = regexp.MustCompile(`(?i)\bsave\b|rdb|appendonly|snapshot|persistence|maxmemory`)
)

// forkState is what the evidence says of one store's forks.
type forkState struct {
	fork           float64 // seconds, the longest seen
	forkFrom       string
	saves          int
	firstSave      time.Time
	firstFork      time.Time // the first slow fork a metric shows
	thp            bool
	dataset, rule  string
	latency        string
	line, lineFrom string
}

// detectForkStall finds a store whose forks for its snapshots take long
// enough to stall its clients.
func detectForkStall(ev *Gathered, found []Finding) []Finding {
	var states keyed[forkState]
	get := states.get
	note := func(st *forkState, sec float64, from string) {
		if sec > st.fork {
			st.fork, st.forkFrom = sec, from
		}
	}
	for _, c := range ev.Commands {
		inst := serverOfCommand(c)
		if inst == "" && c.Pod != "" {
			inst = workloadOfName(c.Pod)
		}
		if inst == "" {
			continue
		}
		run := strings.ToLower(orWord(c.Run, c.Command))
		for i, l := range c.Lines {
			if m := findSubmatch(forkUsecRE, l); m != nil {
				if us, err := strconv.ParseFloat(m[1], 64); err == nil {
					st := get(inst)
					note(st, us/1e6, fmt.Sprintf("INFO of %s: latest_fork_usec:%s", inst, m[1]))
				}
			}
			if m := findSubmatch(usedMemoryRE, l); m != nil {
				get(inst).dataset = m[1]
			}
			if strings.Contains(run, "latency latest") && matchLine(latencyForkRE, l) {
				// The event's time, its latest and its longest stall (ms).
				var ints []float64
				for _, n := range c.Lines[i+1 : min(len(c.Lines), i+4)] {
					m := findSubmatch(latencyIntRE, n)
					if m == nil {
						break
					}
					v, _ := strconv.ParseFloat(m[1], 64)
					ints = append(ints, v)
				}
				if len(ints) == 3 {
					st := get(inst)
					st.latency = fmt.Sprintf("LATENCY LATEST of %s: fork %s latest, %s at most", inst, formatValue(ints[1]/1000, "s"), formatValue(ints[2]/1000, "s"))
					note(st, ints[2]/1000, st.latency)
				}
			}
			if strings.Contains(run, "config get save") && i > 0 && strings.TrimSpace(c.Lines[i-1]) == "save" {
				if m := findSubmatch(saveRuleRE, l); m != nil {
					get(inst).rule = strings.TrimSpace(l)
				}
			}
		}
	}
	// The store's own log: each background save, and THP's warning.
	for _, set := range ev.Logs {
		inst := set.Subject
		if inst == "" {
			continue
		}
		for _, t := range set.Templates {
			line := orWord(t.Example, t.Last)
			switch {
			case matchLine(bgsaveStartRE, line):
				st := get(inst)
				n := t.Incident
				if n == 0 {
					n = t.Count
				}
				st.saves += n
				if st.line == "" {
					st.line, st.lineFrom = line, set.Source
				}
				if !t.FirstIncident.IsZero() && (st.firstSave.IsZero() || t.FirstIncident.Before(st.firstSave)) {
					st.firstSave = t.FirstIncident
				}
			case matchLine(thpWarnRE, line):
				get(inst).thp = true
			}
		}
	}
	// redis_exporter's latest fork time.
	for _, ms := range ev.Metrics {
		m := findSubmatch(forkMetricRE, ms.Name)
		if m == nil {
			continue
		}
		scale := 1.0
		if m[1] != "seconds" {
			scale = 1e-6
		}
		for _, s := range ms.Series {
			inst := workloadOfName(strings.ToLower(DependencyName(orWord(s.Labels["instance"], orWord(s.Labels["addr"], s.Labels["pod"])))))
			if inst == "" {
				continue
			}
			peak, since := 0.0, time.Time{}
			for _, p := range s.Points {
				if !p.T.After(ev.Window.End) {
					peak = max(peak, p.V*scale)
					if p.V*scale >= 0.25 && since.IsZero() {
						since = p.T
					}
				}
			}
			if peak > 0 {
				st := get(inst)
				note(st, peak, fmt.Sprintf("%s of %s reached %s", ms.Name, inst, formatValue(peak, "s")))
				st.firstFork = earliest(st.firstFork, since)
			}
		}
	}
	failovers := 0
	for x := range incidentMatches(ev, failoverEventRE) {
		failovers += x.t.Incident
	}
	var out []Finding
	for _, inst := range states.order {
		st := states.m[inst]
		// A fork of half a second stalls every client noticeably; one of
		// a quarter second does when the snapshots are seen running.
		if st.fork < 0.5 && (st.fork < 0.25 || st.saves == 0) {
			continue
		}
		// A store whose pauses make its sentinels fail it over again and
		// again is the failover loop's (failoverloop.go): the fork is what
		// its failure detection is too short for.
		if failovers >= 3 {
			continue
		}
		f := Finding{Kind: KindForkStall, Subject: inst, Object: "service " + inst, Source: SrcLogs, Severity: SevCritical, Weight: 0.8, Time: earliest(st.firstFork, st.firstSave)}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		if st.saves > 0 || st.latency != "" {
			f.Weight = 0.9
		}
		f.setFact("fork", formatValue(st.fork, "s"))
		f.setFact("dataset", st.dataset)
		if st.thp {
			f.setFact("thp", "enabled")
		}
		if st.rule != "" {
			f.setFact("save", fmt.Sprintf("save %q", st.rule))
			if m := findSubmatch(saveRuleRE, st.rule); m != nil {
				if sec, err := strconv.Atoi(m[1]); err == nil && sec > 0 {
					f.setFact("period", humanPeriod(time.Duration(sec)*time.Second))
				}
			}
		}
		if st.saves > 0 {
			f.setFact("saves", fmt.Sprintf("%d background saves in the window", st.saves))
		}
		f.setFact("latency_event", st.latency)
		f.Evidence = append(f.Evidence, st.forkFrom)
		if st.latency != "" && st.forkFrom != st.latency {
			f.Evidence = append(f.Evidence, st.latency)
		}
		if st.line != "" {
			f.setFact("line", st.line)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s (%d in the window)", st.lineFrom, truncate(strings.TrimSpace(st.line), 200), st.saves))
		}
		if st.rule != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("config get save of %s: %s", inst, st.rule))
		}
		// Its clients: the services asked about whose latency rose.
		var victims []string
		asked := ev.Scope.Subjects()
		for _, o := range found {
			if (o.Kind == KindLatency || o.Kind == KindTimeout) && !strings.EqualFold(o.Subject, inst) && slices.Contains(asked, strings.ToLower(o.Subject)) && !slices.Contains(victims, o.Subject) {
				victims = append(victims, o.Subject)
			}
		}
		f.Related = victims
		f.setFact("victims", strings.Join(victims, ", "))
		f.Summary = fmt.Sprintf("%s: each snapshot's fork stalls it for %s", inst, formatValue(st.fork, "s"))
		out = append(out, f)
	}
	return out
}

// humanPeriod says a period in the largest whole unit.
func humanPeriod(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		if d == time.Hour {
			return "hour"
		}
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		if d == time.Minute {
			return "minute"
		}
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return fmt.Sprintf("%d seconds", d/time.Second)
}
