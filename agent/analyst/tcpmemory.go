package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A host's kernel out of TCP socket memory. All TCP sockets of a host
// share one budget, net.ipv4.tcp_mem (in pages: low, pressure, max); each
// socket's buffers grow from the defaults of tcp_rmem and tcp_wmem. Past
// the max the kernel refuses buffer memory, logs "TCP: out of memory --
// consider tuning tcp_mem" and aborts connections (TcpExtTCPAbortOnMemory
// counts them): clients see resets and reconnect, which a server with
// many connections (a broker, a gateway) turns into a reconnect storm,
// while the process's own memory and the host's free memory are fine. It
// is not the OOM killer. What drives it is sockets holding large unsent
// buffers — larger defaults (a sysctl change to tcp_wmem/tcp_rmem) times
// many slow clients — so a sysctl change is its trigger and the fix is the
// buffer sizes or tcp_mem, not the service's release.

// KindTCPMemory is a host's kernel out of TCP socket memory.
const KindTCPMemory Kind = "tcp_memory"

var tcpMemory = &mechanism{
	kind:           KindTCPMemory,
	class:          classCause,
	label:          "the kernel out of TCP socket memory (tcp_mem)",
	lines:          regexp.MustCompile(`TCP: out of memory -- consider tuning tcp_mem|TCP: too many orphaned sockets`),
	lineWeight:     0.9,
	detect:         detectTCPMemory,
	fitsChange:     changeSays(tcpMemChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the kernel of %s ran out of TCP socket memory (\"TCP: out of memory -- consider tuning tcp_mem\"), so it refuses socket buffers and aborts connections — not the OOM killer: processes keep running", hostOfLogSubject(h.Subject))
		return d + h.clause("; ", "usage") + h.clause("; ", "aborts") + h.clause("; the socket buffers are large: ", "buffers") + h.wrapped(" (set in ", "file", ")")
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if f := h.fact("file"); f != "" {
			r.high("Revert the socket buffer defaults on %s (%s: tcp_rmem/tcp_wmem back to the kernel's 4096 131072/16384 ...) and sysctl --system", h.Subject, f)
		} else {
			r.high("Lower the TCP buffer defaults (net.ipv4.tcp_rmem / tcp_wmem) or raise net.ipv4.tcp_mem on %s for the number of connections it holds", h.Subject)
		}
		r.med("Shed or spread the connections meanwhile (move clients to other hosts) and find the slow clients that hold unsent data (ss -tm)")
		r.low("Alert on TcpExtTCPAbortOnMemory and on /proc/net/sockstat's TCP mem against tcp_mem's max")
	},
}

var (
	tcpSockstatRE  = regexp.MustCompile(`^TCP: inuse (\d+) orphan (\d+) tw (\d+) alloc (\d+) mem (\d+)`)
	tcpMemSysctlRE = regexp.MustCompile(`^net\.ipv4\.tcp_mem\s*=\s*(\d+)\s+(\d+)\s+(\d+)`)
	tcpBufSysctlRE = regexp.MustCompile(`^(net\.ipv4\.tcp_[rw]mem)\s*=\s*(\d+)\s+(\d+)\s+(\d+)`)
	tcpAbortRE     = regexp.MustCompile(`^TcpExtTCPAbortOnMemory\s+(\d+)`)
	sysctlFileRE   = regexp.MustCompile(`(/etc/sysctl\.d/[\w.-]+\.conf|/etc/sysctl\.conf)`)
	tcpMemChangeRE = regexp.MustCompile(`(?i)tcp_[rw]?mem|sysctl|socket buffer|rmem|wmem`)
)

// detectTCPMemory reads, for a host whose kernel says it is out of TCP
// memory, what it shows of it: /proc/net/sockstat's TCP mem against
// tcp_mem's max, nstat's TCPAbortOnMemory, the buffer defaults sysctl
// shows and the sysctl.d file that sets them.
func detectTCPMemory(ev *Gathered, found []Finding) []Finding {
	var line *Finding
	for i := range found {
		if found[i].Kind == KindTCPMemory && (line == nil || found[i].Time.Before(line.Time)) {
			line = &found[i]
		}
	}
	if line == nil {
		return nil
	}
	var mem, max, aborts, file string
	var bufs []string
	for _, c := range ev.Commands {
		inFile := ""
		if m := findSubmatch(sysctlFileRE, c.Run); m != nil && strings.HasPrefix(strings.TrimSpace(c.Run), "cat ") {
			inFile = m[1]
		}
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if m := findSubmatch(tcpSockstatRE, t); m != nil && mem == "" && c.Host == "" || m != nil && mem == "" && sameNode(shortHost(c.Host), hostOfLogSubject(line.Subject)) {
				mem = m[5]
			}
			if m := findSubmatch(tcpMemSysctlRE, t); m != nil && max == "" {
				max = m[3]
			}
			if m := findSubmatch(tcpAbortRE, t); m != nil && aborts == "" {
				aborts = m[1]
			}
			if m := findSubmatch(tcpBufSysctlRE, t); m != nil {
				if def, _ := strconv.Atoi(m[3]); def > 262144 {
					b := fmt.Sprintf("%s = %s %s %s", m[1], m[2], m[3], m[4])
					if !strings.Contains(strings.Join(bufs, "; "), m[1]) {
						bufs = append(bufs, b)
					}
					if inFile != "" {
						file = inFile
					}
				}
			}
		}
	}
	f := Finding{Kind: KindTCPMemory, Subject: line.Subject, Object: line.Object, Namespace: line.Namespace, Source: SrcLogs, Severity: SevCritical, Weight: 0.95, Time: line.Time}
	f.setFact("line", line.fact("line"))
	if mem != "" && max != "" {
		f.setFact("usage", fmt.Sprintf("TCP sockets use %s pages against tcp_mem's max of %s (/proc/net/sockstat)", mem, max))
		f.Evidence = append(f.Evidence, f.fact("usage"))
	}
	if aborts != "" {
		f.setFact("aborts", fmt.Sprintf("TcpExtTCPAbortOnMemory %s connections aborted", aborts))
		f.Evidence = append(f.Evidence, "nstat: "+f.fact("aborts"))
	}
	if len(bufs) > 0 {
		f.setFact("buffers", strings.Join(bufs, "; ")+" (default buffer per socket of 1 MiB or more)")
		f.Evidence = append(f.Evidence, "sysctl: "+strings.Join(bufs, "; "))
	}
	f.setFact("file", file)
	if mem == "" && aborts == "" && len(bufs) == 0 {
		return nil
	}
	f.Summary = fmt.Sprintf("%s: kernel out of TCP socket memory", line.Subject)
	return []Finding{f}
}

// hostOfLogSubject is the host a host log's subject names
// ("mqtt-02-syslog": mqtt-02).
func hostOfLogSubject(s string) string {
	for _, suf := range []string{"-syslog", "-journal", "-kern", "-messages"} {
		s = strings.TrimSuffix(s, suf)
	}
	return s
}
