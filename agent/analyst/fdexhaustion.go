package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// File-descriptor exhaustion: a process at its open-files limit (nofile
// rlimit), so accepts, dials and file opens fail with "too many open
// files" (EMFILE) or the system table is full (ENFILE). Its log says so;
// what the limit is, and whether the process leaks descriptors or simply
// holds more connections than its limit allows, the host says: systemd's
// LimitNOFILE= in the unit (systemctl cat, systemctl show -p LimitNOFILE),
// the process's own "Max open files" in /proc/PID/limits, ulimit -n, and
// the descriptors it holds (ls /proc/PID/fd | wc -l). A limit that a
// change lowered or dropped (a removed drop-in, a templated unit) shows in
// the unit's history as a removed LimitNOFILE= line. When several
// replicas of one service hit the limit together at their peak, the limit
// is too low for the connections they hold, not one replica's leak.
var fdExhaustion = &mechanism{
	kind:       KindFDExhaustion,
	class:      classCause,
	label:      "file descriptor exhaustion (too many open files)",
	lines:      regexp.MustCompile(`(?i)too many open files|\bEMFILE\b|\bENFILE\b|file descriptor limit|out of file descriptors|file table overflow`),
	lineWeight: 0.9,
	detect:     detectFDLimit,
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindFDExhaustion && f.Subject != h.Subject && slices.Contains(h.top().Related, f.Subject)
	}),
	fitsChange: changeSays(fdLimitChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		lim := h.fact("limit")
		if lim == "" {
			d := fmt.Sprintf("%s exhausts its file descriptors (too many open files, EMFILE): a file-descriptor leak keeps sockets/files open until the process hits its open-files limit (nofile rlimit), so accepts and outbound connections fail", h.Subject)
			if l := h.fact("line"); l != "" {
				d += " — " + quote(ReadableLine(l), 200)
			}
			return d
		}
		d := fmt.Sprintf("%s runs out of file descriptors at its open-files limit of %s (too many open files, EMFILE)", h.Subject, lim)
		if s := h.fact("limit_source"); s != "" {
			d += ": " + s
		}
		if o := h.fact("open"); o != "" {
			d += fmt.Sprintf("; the process holds %s descriptors", o)
		}
		if p := h.fact("previous"); p != "" {
			d += fmt.Sprintf("; the limit was %s before a change dropped that setting (%s)", p, h.fact("previous_line"))
		}
		if r := h.fact("replicas"); r != "" {
			d += fmt.Sprintf(". Every replica hits it (%s), so the limit is too low for the connections they hold at peak, not one replica's leak", r)
		}
		d += "; accepts and outbound connections fail once it is reached"
		if l := h.fact("line"); l != "" {
			d += " — " + quote(ReadableLine(l), 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if lim := h.fact("limit"); lim != "" {
			want := orWord(h.fact("previous"), "65536")
			r.high("Raise the open-files limit of %s from %s (LimitNOFILE=%s in its systemd unit or a drop-in, then systemctl daemon-reload and a rolling restart; limits.conf nofile for non-systemd processes)", h.Subject, lim, want)
			if t := h.Trigger; t != nil {
				r.high("Fix the change that set the limit (%s: %s) so the next run does not drop it again", orWord(t.fact("revision"), t.Subject), truncate(t.fact("description"), 120))
			}
			r.med("Check that the descriptors are connections in use, not leaked ones (lsof -p PID | awk '{print $5}' | sort | uniq -c against the clients connected)")
			r.low("Alert on process_open_fds / process_max_fds above 80%%")
			return
		}
		r.rollback()
		r.high("Restart %s to release the leaked file descriptors, and raise its open-files limit (nofile) as a stopgap", h.Subject)
		r.med("Find the descriptor leak (unclosed response bodies, sockets, files) from process_open_fds growth and lsof")
		r.low("Alert on process_open_fds / process_max_fds above 80%%")
	},
}

var (
	// fdUnitLimitRE is systemd's setting (systemctl cat, systemctl show
	// -p LimitNOFILE, a unit file) with its value.
	fdUnitLimitRE = regexp.MustCompile(`^\s*LimitNOFILE=(\d+)(?::\d+)?\s*$`)
	// fdRemovedLimitRE is the setting removed in a diff.
	fdRemovedLimitRE = regexp.MustCompile(`^-\s*LimitNOFILE=(\d+)`)
	// fdProcLimitRE is /proc/PID/limits' row.
	fdProcLimitRE = regexp.MustCompile(`^Max open files\s+(\d+)\s+(\d+)\s+files`)
	// fdCountCmdRE is a command that counts a process's descriptors.
	fdCountCmdRE = regexp.MustCompile(`/proc/\S+/fd\b.*\|\s*wc -l|lsof -p \S+.*\|\s*wc -l`)
	// fdLimitChangeRE is a change that sets or drops a process's limits.
	fdLimitChangeRE = regexp.MustCompile(`(?i)LimitNOFILE|\bnofile\b|ulimit|limits\.conf|open files|file descriptors?|fs\.file-max|drop-?ins?|systemd unit`)
)

// detectFDLimit reads, for the services whose logs say "too many open
// files", the open-files limit the host shows and the descriptors held.
func detectFDLimit(ev *Gathered, found []Finding) []Finding {
	var fds []Finding
	for _, f := range found {
		if f.Kind == KindFDExhaustion {
			fds = append(fds, f)
		}
	}
	if len(fds) == 0 {
		return nil
	}
	var limit, source, open, previous, previousLine string
	for _, c := range ev.Commands {
		countCmd := fdCountCmdRE.MatchString(c.Run)
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if m := fdUnitLimitRE.FindStringSubmatch(l); m != nil && limit == "" {
				limit, source = m[1], fmt.Sprintf("%s in the unit (%s)", t, truncate(c.Run, 60))
			}
			if m := fdProcLimitRE.FindStringSubmatch(t); m != nil {
				if limit == "" {
					limit, source = m[1], fmt.Sprintf("%q in %s", strings.Join(strings.Fields(t), " "), truncate(c.Run, 60))
				}
			}
			if m := fdRemovedLimitRE.FindStringSubmatch(t); m != nil && previous == "" {
				previous, previousLine = m[1], fmt.Sprintf("%q removed in %s", t, truncate(c.Run, 80))
			}
		}
		if countCmd && len(c.Lines) == 1 {
			if n := strings.TrimSpace(c.Lines[0]); n != "" && strings.Trim(n, "0123456789") == "" {
				open = n
			}
		}
	}
	if limit == "" {
		return nil
	}
	if previous == limit {
		previous, previousLine = "", ""
	}
	// The replicas of one service that hit it: the question's service,
	// when each finding's subject is one of its replicas. The finding
	// joins the first replica's (its onset is the incident's).
	first := fds[0]
	for _, o := range fds[1:] {
		if !o.Time.IsZero() && o.Time.Before(first.Time) {
			first = o
		}
	}
	subj := first.Subject
	var replicas []string
	for _, s := range ev.Scope.Subjects() {
		replicas = replicas[:0]
		for _, f := range fds {
			if strings.HasPrefix(f.Subject, s+"-") && !slices.Contains(replicas, f.Subject) {
				replicas = append(replicas, f.Subject)
			}
		}
		if len(replicas) >= 2 {
			break
		}
	}
	if len(replicas) < 2 {
		replicas = nil
	}
	slices.Sort(replicas)
	f := Finding{Kind: KindFDExhaustion, Subject: subj, Object: first.Object, Namespace: first.Namespace, Source: SrcLogs, Severity: SevCritical, Weight: 0.95, Time: first.Time}
	for _, o := range fds {
		if o.Subject != subj {
			f.Related = appendNew(f.Related, o.Subject)
		}
	}
	f.setFact("line", first.fact("line"))
	f.setFact("limit", limit)
	f.setFact("limit_source", source)
	f.setFact("open", open)
	f.setFact("previous", previous)
	f.setFact("previous_line", previousLine)
	f.setFact("replicas", strings.Join(replicas, ", "))
	f.Evidence = append(f.Evidence, "open-files limit: "+source)
	if open != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("descriptors held: %s of %s", open, limit))
	}
	if previousLine != "" {
		f.Evidence = append(f.Evidence, previousLine)
	}
	for _, o := range fds {
		if o.Subject != subj {
			f.Evidence = append(f.Evidence, o.Summary)
		}
	}
	f.Summary = fmt.Sprintf("%s: too many open files at its open-files limit %s", subj, limit)
	return []Finding{f}
}
