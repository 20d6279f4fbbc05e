package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
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
		if cw := h.fact("close_wait"); cw != "" {
			d += fmt.Sprintf(". The descriptors are leaked connections, not load: %s sockets sit in CLOSE-WAIT (the peer closed them and %s never closed its side: a response body or connection left unclosed, a connection leak)", cw, h.Subject)
			if p := h.fact("close_wait_peer"); p != "" {
				d += ", most of them to " + p
			}
			if c := h.fact("leak_change"); c != "" {
				d += fmt.Sprintf("; the leak came with %s, the version its pods run, and raising the limit only delays the next exhaustion", c)
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if cw := h.fact("close_wait"); cw != "" {
			if c := h.fact("leak_change"); c != "" {
				r.high("Roll back %s (%s) or fix the code path it added so it closes every response body and connection, including on error and non-2xx responses", h.Subject, truncate(c, 160))
			} else {
				r.high("Fix the connection leak in %s: close every response body and connection, including on error and non-2xx responses", h.Subject)
			}
			r.high("Restart the %s pods nearest the limit to release the leaked sockets until the fix ships; the host is not the cause, so replacing the node does not help", h.Subject)
			r.low("Alert on process_open_fds / process_max_fds above 80%% and on CLOSE-WAIT sockets per pod")
			return
		}
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
	// fdSocketStateRE is a count of sockets per state (ss -tan | awk
	// '{print $1}' | sort | uniq -c; netstat -ant | awk '{print $6}' |
	// sort | uniq -c).
	fdSocketStateRE = regexp.MustCompile(`^\s*(\d+)\s+(CLOSE[-_]WAIT|ESTAB(?:LISHED)?|TIME[-_]WAIT|LISTEN|SYN[-_]SENT|SYN[-_]RECV|FIN[-_]WAIT[-_]?[12]|LAST[-_]ACK|CLOSING|CLOSED)\s*$`)
	// fdSocketLineRE is one socket of ss -tan or netstat -ant with its
	// state and peer.
	fdSocketLineRE = regexp.MustCompile(`^(?:(?:tcp6?)\s+\d+\s+\d+\s+\S+\s+(\S+)\s+(CLOSE_WAIT|ESTABLISHED|TIME_WAIT|LISTEN)\b|(CLOSE-WAIT|ESTAB|TIME-WAIT|LISTEN)\s+\d+\s+\d+\s+\S+\s+(\S+))`)
	// fdPeerCountRE is a count of sockets per peer address (ss state
	// close-wait | awk '{print $4}' | sort | uniq -c).
	fdPeerCountRE = regexp.MustCompile(`^\s*(\d+)\s+\[?([0-9a-fA-F.:]+?)\]?:(\d+)\s*$`)
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
		countCmd := matchLine(fdCountCmdRE, c.Run)
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if m := findSubmatch(fdUnitLimitRE, l); m != nil && limit == "" {
				limit, source = m[1], fmt.Sprintf("%s in the unit (%s)", t, truncate(c.Run, 60))
			}
			if m := findSubmatch(fdProcLimitRE, t); m != nil {
				if limit == "" {
					limit, source = m[1], fmt.Sprintf("%q in %s", strings.Join(strings.Fields(t), " "), truncate(c.Run, 60))
				}
			}
			if m := findSubmatch(fdRemovedLimitRE, t); m != nil && previous == "" {
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
	closeWait, peer := fdCloseWait(ev)
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
	if closeWait != "" {
		f.setFact("close_wait", closeWait)
		f.setFact("close_wait_peer", peer)
		f.Evidence = append(f.Evidence, fmt.Sprintf("sockets in CLOSE-WAIT: %s%s", closeWait, map[bool]string{true: ", most to " + peer}[peer != ""]))
		if c := fdLeakChange(ev, subj, first); c != "" {
			f.setFact("leak_change", c)
			f.Evidence = append(f.Evidence, "the version its pods run: "+c)
		}
	}
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

// fdCloseWait reads, from socket listings handed over (ss -tan, netstat
// -ant, their per-state counts), how many sockets sit in CLOSE-WAIT when
// they are most of the sockets a process holds: the peer closed them and
// the process never did, a leak. It names the peer most of them go to,
// with the Service whose cluster IP it is.
func fdCloseWait(ev *Gathered) (count, peer string) {
	best, total := 0, 0
	peers := map[string]int{}
	for _, c := range ev.Commands {
		cw, all := 0, 0
		closeWaitCmd := strings.Contains(strings.ToLower(c.Run), "close-wait") || strings.Contains(strings.ToLower(c.Run), "close_wait")
		for _, l := range c.Lines {
			if m := findSubmatch(fdSocketStateRE, l); m != nil {
				n := atoiLoose(m[1])
				all += n
				if strings.HasPrefix(m[2], "CLOSE") && strings.HasSuffix(m[2], "WAIT") {
					cw += n
				}
				continue
			}
			if m := findSubmatch(fdSocketLineRE, strings.TrimSpace(l)); m != nil {
				all++
				state, addr := m[2], m[1]
				if state == "" {
					state, addr = m[3], m[4]
				}
				if strings.HasPrefix(state, "CLOSE") {
					cw++
					peers[addr]++
				}
				continue
			}
			if m := findSubmatch(fdPeerCountRE, l); m != nil && closeWaitCmd {
				peers[m[2]+":"+m[3]] += atoiLoose(m[1])
			}
		}
		if cw > best {
			best, total = cw, all
		}
	}
	if best < 100 || best*2 < total {
		return "", ""
	}
	top, topN := "", 0
	for p, n := range peers {
		if n > topN || n == topN && p < top {
			top, topN = p, n
		}
	}
	if top != "" && topN*2 >= best {
		peer = top
		ip := top[:strings.LastIndex(top, ":")]
		for _, s := range slices.Concat(ev.K8s.Services, ev.K8s.CalledServices) {
			if s.Service.Spec.ClusterIP == ip {
				peer += " (Service " + s.Service.Name + ")"
				break
			}
		}
	}
	return fmt.Sprintf("%d of %d", best, total), peer
}

// fdLeakChange is the last deploy of the leaking service before its
// exhaustion, of the changes in the window or the month before: the
// version its pods run, that brought the leak.
func fdLeakChange(ev *Gathered, subj string, first Finding) string {
	var last *evidence.Change
	for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
		if c.Kind != "deploy" || !(c.Service == subj || workloadOfName(subj) == c.Service) {
			continue
		}
		if !first.Time.IsZero() && c.Timestamp.After(first.Time) {
			continue
		}
		if last == nil || c.Timestamp.After(last.Timestamp) {
			c := c
			last = &c
		}
	}
	if last == nil {
		return ""
	}
	d := fmt.Sprintf("the deploy of %s", last.Service)
	if last.Revision != "" {
		d += " " + last.Revision
	}
	d += " at " + ts(last.Timestamp)
	if last.Description != "" {
		d += fmt.Sprintf(" (%s)", quote(last.Description, 160))
	}
	return d
}
