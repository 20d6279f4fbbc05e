package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A host's systemd unit in the failed state. systemd restarts a server
// that exits (Restart=on-failure) until its start limit, then leaves it
// failed ("Start request repeated too quickly", Result: start-limit-hit):
// the server is down and whatever it serves (a web server in front of an
// application, a proxy, a broker) fails at the load balancer while the
// application behind it is healthy. Why it does not start is the
// process's own last words in the journal — nginx's "[emerg] module …
// version 1027002 instead of 1027003", a config error, a port in use —
// and what changed under it is often a package upgrade the host made
// itself (unattended-upgrades in apt's history.log), not a release. A
// unit that runs a job (a timer's oneshot: certbot's renewal, a backup)
// and failed is its own problem: it names what failed and why, and does
// not make the services on that host fail.

// KindHostUnitFailed is a host's systemd unit in the failed state.
const KindHostUnitFailed Kind = "host_unit_failed"

var hostUnitFailed = &mechanism{
	kind:   KindHostUnitFailed,
	class:  classCause,
	label:  "a host's systemd unit failed",
	detect: detectHostUnitFailed,
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Kind != KindHostUnitFailed && (slices.Contains(h.top().Related, f.Subject) || slices.ContainsFunc(strings.Split(h.fact("hosts"), ", "), func(x string) bool { return x != "" && sameNode(x, f.Subject) }))
	}),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, strings.ToLower(h.Subject)) || matchLine(unitChangeRE, t)
	},
	describe: describeHostUnitFailed,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		unit, hosts := h.Subject, orWord(h.fact("hosts"), "the host")
		if h.fact("job") != "" {
			r.high("Fix why %s failed on %s (its journal: journalctl -u %s) and run it again (systemctl start %s); the services on the host are not affected by it", unit, hosts, unit, unit)
			r.low("Keep the NodeSystemdServiceFailed alert routed to the owner of %s, and alert on what the job protects before it runs out", unit)
			return
		}
		if u := h.fact("upgrade"); u != "" {
			r.high("Bring %s back on %s: fix what its start refuses after the upgrade (%s) — rebuild or reinstall what no longer matches (a dynamic module for the new version) or pin the previous package — check with its config test, then systemctl reset-failed %s && systemctl start %s", unit, hosts, truncate(u, 120), unit, unit)
			r.med("Hold the package on these hosts (apt-mark hold, or exclude it from unattended-upgrades) until what it loads is built with it, and upgrade one host at a time")
		} else {
			r.high("Bring %s back on %s: fix what its start refuses (journalctl -u %s), check the config, then systemctl reset-failed %s && systemctl start %s", unit, hosts, unit, unit, unit)
		}
		r.low("Alert on node_systemd_unit_state{state=\"failed\"} of %s and on the load balancer's healthy targets", unit)
	},
}

var (
	// unitStatusHeadRE is systemctl status's first line: "× nginx.service -
	// nginx …", "● certbot.service - Certbot".
	unitStatusHeadRE = regexp.MustCompile(`^[●×○↻*]?\s*([\w@.:-]+)\.service(?: - |$)`)
	// unitActiveFailedRE is its Active: line in the failed state.
	unitActiveFailedRE = regexp.MustCompile(`^\s*Active: failed(?: \(Result: ([\w-]+)\))?(?: since \w{3} (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC)?`)
	// unitFailedRowRE is a row of systemctl --failed.
	unitFailedRowRE = regexp.MustCompile(`^[●×*]?\s*([\w@.:-]+)\.service\s+loaded\s+failed\s+failed\b`)
	// unitSystemdFailRE is systemd's own word that a unit failed.
	unitSystemdFailRE = regexp.MustCompile(`systemd\[1\]: (?:Failed to start ([\w@.:-]+)\.service|([\w@.:-]+)\.service: (?:Failed with result '([\w-]+)'|Start request repeated too quickly))`)
	// unitJournalRE is a journal line of a process: "Nov 25 06:21:42
	// edge-01 nginx[51188]: msg" or with an RFC 3339 time.
	unitJournalRE = regexp.MustCompile(`^(?:[A-Z][a-z]{2}\s+\d+\s+[\d:]+|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d))\s+([\w.-]+)\s+([\w@.:-]+)\[\d+\]:\s+(.*)$`)
	// unitErrorRE is a process's own error in its journal.
	unitErrorRE = regexp.MustCompile(`(?i)\[(?:emerg|alert|crit|error)\]|\berror\b|\bfailed\b|\bfatal\b|cannot|could not|unable to|not found|refused|denied|invalid`)
	// unitServerRE is the status of a server systemd kept restarting.
	unitServerRE = regexp.MustCompile(`start-limit-hit|Start request repeated too quickly|Scheduled restart job|^\s*Duration: `)
	// unitTimerRE is list-timers' row naming the unit it activates.
	unitTimerRE = regexp.MustCompile(`\.timer\s+([\w@.:-]+)\.service\s*$`)
	// aptUpgradeRE is apt's history.log line of an upgrade, dpkg.log's,
	// and unattended-upgrades' own.
	aptUpgradeRE   = regexp.MustCompile(`^Upgrade: (.+)$|^\d{4}-\d\d-\d\d [\d:]+ upgrade (\S+) (\S+) (\S+)$`)
	aptCommandRE   = regexp.MustCompile(`^Commandline: (.+)$`)
	aptStartDateRE = regexp.MustCompile(`^Start-Date: (\d{4}-\d\d-\d\d\s+\d\d:\d\d:\d\d)`)
	// journalUnitRE is journalctl -u UNIT; isActiveRE systemctl
	// is-active UNIT.
	journalUnitRE = regexp.MustCompile(`journalctl\b.*\s-u\s+([\w@.:-]+)`)
	isActiveRE    = regexp.MustCompile(`systemctl is-active\s+([\w@.:-]+)`)
	// unitChangeRE is a change that touches a host's packages or units.
	unitChangeRE = regexp.MustCompile(`(?i)unattended-upgrade|\bapt\b|package|systemd unit|\.service\b`)
)

// unitState is what the evidence says of one unit.
type unitState struct {
	shown                        bool // a command on the host shows the unit failed
	hosts                        []string
	result, why, active, upgrade string
	evidence                     []string
	onset                        time.Time
	server, job                  bool
}

// detectHostUnitFailed reads failed units from systemctl status, systemctl
// --failed, systemctl is-active and journalctl -u run on hosts, and from
// systemd's own lines in a host's syslog, with the process's last error
// as their why.
func detectHostUnitFailed(ev *Gathered, found []Finding) []Finding {
	units := map[string]*unitState{}
	var order []string
	get := func(u string) *unitState {
		u = strings.TrimSuffix(u, ".service")
		if units[u] == nil {
			units[u] = &unitState{}
			order = append(order, u)
		}
		return units[u]
	}
	addHost := func(st *unitState, h string) {
		if h = shortHost(h); h != "" && !slices.Contains(st.hosts, h) {
			st.hosts = append(st.hosts, h)
		}
	}
	timers := map[string]bool{}
	year := ev.Window.Start.Year()
	journalWhy := func(st *unitState, unit string, lines []string) {
		for _, l := range lines {
			m := findSubmatch(unitJournalRE, strings.TrimSpace(l))
			if m == nil || m[2] == "systemd" || !strings.EqualFold(strings.TrimSuffix(m[2], ".service"), unit) {
				continue
			}
			if matchLine(unitErrorRE, m[3]) && st.why == "" {
				st.why = strings.TrimSpace(m[3])
				st.evidence = append(st.evidence, fmt.Sprintf("journal of %s on %s: %s", unit, m[1], truncate(strings.TrimSpace(l), 220)))
				if t := unitLineTime(l, year); !t.IsZero() && (st.onset.IsZero() || t.Before(st.onset)) {
					st.onset = t
				}
			}
		}
	}
	var upgrades, running []string
	for _, c := range ev.Commands {
		run := c.Run
		host := c.Host
		for _, l := range c.Lines {
			if m := findSubmatch(unitTimerRE, strings.TrimSpace(l)); m != nil {
				timers[m[1]] = true
			}
		}
		// apt's history: what upgraded, by what, when.
		var start, cmdline string
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if m := findSubmatch(aptStartDateRE, t); m != nil {
				start = m[1]
			}
			if m := findSubmatch(aptCommandRE, t); m != nil {
				cmdline = m[1]
			}
			if m := findSubmatch(aptUpgradeRE, t); m != nil {
				u := t
				if m[2] != "" {
					u = fmt.Sprintf("%s %s -> %s", m[2], m[3], m[4])
				} else {
					u = strings.TrimPrefix(t, "Upgrade: ")
				}
				if cmdline != "" {
					u += " by " + strings.TrimPrefix(cmdline, "/usr/bin/")
				}
				if start != "" {
					u += " at " + strings.Join(strings.Fields(start), " ")
				}
				if h := shortHost(host); h != "" {
					u += " on " + h
				}
				upgrades = append(upgrades, u)
			}
		}
		var cur *unitState
		curUnit := ""
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if m := findSubmatch(unitStatusHeadRE, t); m != nil && strings.Contains(run, "systemctl status") {
				curUnit = m[1]
				cur = nil
				continue
			}
			if strings.HasPrefix(t, "Active: active (running)") && curUnit != "" && slices.ContainsFunc(ev.Scope.Subjects(), func(s string) bool { return strings.EqualFold(s, curUnit) }) {
				running = append(running, fmt.Sprintf("systemctl status %s on %s: %s", curUnit, orWord(shortHost(host), "the host"), t))
			}
			if m := findSubmatch(unitActiveFailedRE, t); m != nil && curUnit != "" {
				cur = get(curUnit)
				cur.shown = true
				addHost(cur, host)
				cur.active = t
				cur.result = orWord(cur.result, m[1])
				cur.evidence = append(cur.evidence, fmt.Sprintf("systemctl status %s on %s: %s", curUnit, orWord(shortHost(host), "the host"), t))
				if m[2] != "" {
					if at, err := time.Parse("2006-01-02 15:04:05", m[2]); err == nil && (cur.onset.IsZero() || at.Before(cur.onset)) {
						cur.onset = at
					}
				}
				continue
			}
			if cur != nil && matchLine(unitServerRE, t) {
				cur.server = true
			}
			if m := findSubmatch(unitFailedRowRE, t); m != nil {
				st := get(m[1])
				st.shown = true
				addHost(st, host)
				st.evidence = append(st.evidence, fmt.Sprintf("systemctl --failed on %s: %s", orWord(shortHost(host), "the host"), strings.Join(strings.Fields(t), " ")))
			}
		}
		if cur != nil {
			journalWhy(cur, curUnit, c.Lines)
		}
		// journalctl -u UNIT: the unit's own lines.
		if m := findSubmatch(journalUnitRE, run); m != nil {
			unit := strings.TrimSuffix(m[1], ".service")
			failed := ""
			for _, l := range c.Lines {
				if fm := findSubmatch(unitSystemdFailRE, l); fm != nil {
					failed = strings.TrimSpace(l)
					if matchLine(unitServerRE, l) {
						get(unit).server = true
					}
				}
			}
			if failed != "" {
				st := get(unit)
				st.shown = true
				addHost(st, host)
				journalWhy(st, unit, c.Lines)
				st.evidence = append(st.evidence, fmt.Sprintf("journalctl -u %s on %s: %s", unit, orWord(shortHost(host), "the host"), truncate(failed, 200)))
			}
		}
		// systemctl is-active UNIT answering "failed" (on another host).
		if m := findSubmatch(isActiveRE, run); m != nil && len(c.Lines) > 0 && strings.TrimSpace(c.Lines[0]) == "failed" {
			st := get(m[1])
			st.shown = true
			addHost(st, host)
			st.evidence = append(st.evidence, fmt.Sprintf("systemctl is-active %s on %s: failed", strings.TrimSuffix(m[1], ".service"), orWord(shortHost(host), "the host")))
		}
	}
	// systemd's lines in a host's syslog.
	for x := range incidentMatches(ev, unitSystemdFailRE) {
		m := findSubmatch(unitSystemdFailRE, x.line)
		unit := orWord(m[1], m[2])
		st := get(unit)
		host := ""
		if hm := findSubmatch(unitJournalRE, strings.TrimSpace(x.line)); hm != nil {
			host = hm[1]
		}
		addHost(st, orWord(host, serverOfLog(x.set)))
		if at := firstOf(x.t.FirstIncident, x.t.FirstSeen); !at.IsZero() && (st.onset.IsZero() || at.Before(st.onset)) {
			st.onset = at
		}
		if len(st.evidence) < 4 {
			st.evidence = append(st.evidence, templateEvidence(*x.set, x.t, x.line))
		}
		if st.why == "" {
			for _, t := range x.set.Templates {
				if t.Incident == 0 {
					continue
				}
				if jm := findSubmatch(unitJournalRE, strings.TrimSpace(t.Example)); jm != nil && strings.EqualFold(jm[2], unit) && matchLine(unitErrorRE, jm[3]) {
					st.why = strings.TrimSpace(jm[3])
					st.evidence = append(st.evidence, templateEvidence(*x.set, t, t.Example))
					break
				}
			}
		}
	}
	var out []Finding
	for _, u := range order {
		st := units[u]
		// systemd's lines in a log alone do not say whether the unit is a
		// server left down or a job's run that failed (and its own log is
		// read by the other mechanisms): a command on the host must show it.
		if !st.shown || len(st.hosts) == 0 {
			continue
		}
		st.job = timers[u] && !st.server
		for _, up := range upgrades {
			if strings.Contains(strings.ToLower(up), strings.ToLower(u)) && st.upgrade == "" {
				st.upgrade = up
				st.evidence = append(st.evidence, "package upgrade: "+up)
			}
		}
		f := Finding{Kind: KindHostUnitFailed, Subject: u, Object: "systemd unit " + u + ".service", Source: SrcLogs, Severity: SevCritical, Weight: 0.88, Time: st.onset}
		if st.job {
			f.Severity, f.Weight = SevWarning, 0.6
			f.setFact("job", "yes")
			// The services asked after, running on the host: not
			// affected by a job's failed run.
			var ok []string
			for _, r := range running {
				if slices.ContainsFunc(st.hosts, func(h string) bool { return strings.Contains(r, " on "+h+":") }) {
					ok = append(ok, r)
					f.Evidence = append(f.Evidence, r)
				}
			}
			f.setFact("running", strings.Join(ok, "; "))
		}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		f.setFact("hosts", strings.Join(st.hosts, ", "))
		f.setFact("result", st.result)
		f.setFact("why", st.why)
		f.setFact("active", st.active)
		f.setFact("upgrade", st.upgrade)
		f.Evidence = append(st.evidence, f.Evidence...)
		f.Related = append(f.Related, st.hosts...)
		if !st.job {
			// A server down: what it serves fails.
			for _, s := range ev.Scope.Subjects() {
				f.Related = appendNew(f.Related, s)
			}
		}
		f.Summary = fmt.Sprintf("%s.service failed on %s", u, strings.Join(st.hosts, ", "))
		if st.why != "" {
			f.Summary += ": " + truncate(st.why, 120)
		}
		out = append(out, f)
	}
	return out
}

// unitLineTime reads a journal line's time: RFC 3339, or syslog's "Nov 25
// 06:21:42" in the window's year.
func unitLineTime(l string, year int) time.Time {
	f := strings.Fields(strings.TrimSpace(l))
	if len(f) == 0 {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339Nano, f[0]); err == nil {
		return t
	}
	if len(f) >= 3 {
		if t, err := time.Parse("Jan _2 15:04:05 2006", fmt.Sprintf("%s %2s %s %d", f[0], f[1], f[2], year)); err == nil {
			return t
		}
	}
	return time.Time{}
}

func describeHostUnitFailed(h *Hypothesis, sc Scope) string {
	unit, hosts := h.Subject, orWord(h.fact("hosts"), "its host")
	if h.fact("job") != "" {
		d := fmt.Sprintf("the job %s.service failed on %s", unit, hosts)
		if w := h.fact("why"); w != "" {
			d += ": " + quote(w, 200)
		}
		d += " — a failed run of a job (a timer's oneshot), not a service that stopped serving"
		if r := h.fact("running"); r != "" {
			d += fmt.Sprintf("; %s is not affected: %s", strings.Join(sc.Subjects(), ", "), r)
		}
		return d
	}
	d := fmt.Sprintf("%s is down on %s", unit, hosts)
	switch r := h.fact("result"); {
	case r == "start-limit-hit":
		d += ": systemd gave up restarting it (Result: start-limit-hit)"
	case r != "":
		d += fmt.Sprintf(": it failed (Result: %s)", r)
	default:
		d += ": its unit is failed"
	}
	if w := h.fact("why"); w != "" {
		d += fmt.Sprintf(", as every start fails with %s", quote(w, 220))
	}
	if u := h.fact("upgrade"); u != "" {
		d += fmt.Sprintf("; it stopped starting with the package upgrade %s", u)
	}
	if subj := sc.Subjects(); len(subj) > 0 && !slices.Contains(subj, unit) {
		d += fmt.Sprintf(", so what %s serves (%s) fails in front of a healthy application", unit, strings.Join(subj, ", "))
	}
	return d
}
