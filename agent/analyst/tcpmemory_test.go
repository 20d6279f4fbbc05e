package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestTCPMemory reads the kernel out of TCP socket memory: its log line
// (syslog's kernel: and dmesg -T's) is this cause, not the OOM killer;
// /proc/net/sockstat against sysctl's tcp_mem, nstat's TCPAbortOnMemory
// and large buffer defaults from a sysctl.d file say how.
func TestTCPMemory(t *testing.T) {
	testLines(t, tcpMemory, []lineCase{
		{"2026-03-14T19:00:41.011560+00:00 broker-02 kernel: TCP: out of memory -- consider tuning tcp_mem", KindTCPMemory},
		{"[Sat Mar 14 19:47:02 2026] TCP: out of memory -- consider tuning tcp_mem", KindTCPMemory},
		{"Mar 14 19:47:02 gw-01 kernel: [812345.123456] TCP: too many orphaned sockets", KindTCPMemory},
		{"Out of memory: Killed process 1187 (java) total-vm:8012344kB", ""},
	})
	cmd := func(run, lines string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Host: "broker-02.example.internal", Lines: strings.Split(lines, "\n")}
	}
	line := Finding{Kind: KindTCPMemory, Subject: "broker-02-syslog", Weight: 0.9, Time: now}
	line.setFact("line", "TCP: out of memory -- consider tuning tcp_mem")
	ev := &Gathered{Window: win, Commands: []evidence.CommandOutput{
		cmd("cat /proc/net/sockstat", "sockets: used 46012\nTCP: inuse 45288 orphan 913 tw 2207 alloc 45731 mem 189340"),
		cmd("sysctl net.ipv4.tcp_mem net.ipv4.tcp_wmem", "net.ipv4.tcp_mem = 92451 123270 184902\nnet.ipv4.tcp_wmem = 4096 2097152 16777216"),
		cmd("nstat -az TcpExtTCPAbortOnMemory", "#kernel\nTcpExtTCPAbortOnMemory          1841277            0.0"),
		cmd("cat /etc/sysctl.d/60-net-buffers.conf", "net.ipv4.tcp_wmem = 4096 2097152 16777216"),
	}}
	fs := detectTCPMemory(ev, []Finding{line})
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	h := &Hypothesis{Kind: KindTCPMemory, Subject: fs[0].Subject, Primary: []*Finding{&line, &fs[0]}}
	wantDescribed(t, h, Scope{}, "kernel of broker-02 ran out of TCP socket memory", "189340 pages against tcp_mem's max of 184902", "TCPAbortOnMemory 1841277", "tcp_wmem = 4096 2097152 16777216", "/etc/sysctl.d/60-net-buffers.conf", "not the OOM killer")
	if recs := recommend(h, Scope{}); len(recs) < 2 || !strings.Contains(recs[0].Action, "60-net-buffers.conf") {
		t.Errorf("recommendations %+v", recs)
	}
	if fs := detectTCPMemory(ev, nil); len(fs) != 0 {
		t.Errorf("no kernel line: %+v", fs)
	}
	h2 := &Hypothesis{Kind: KindTCPMemory}
	for text, want := range map[string]bool{"sysctl.d/99-tuning.conf: net.ipv4.tcp_wmem = 4096 1048576 16777216": true, "broker 2.1.0 release": false} {
		c := &Finding{Kind: KindDeploy}
		c.setFact("description", text)
		if got := tcpMemory.fitsChange(h2, c); got != want {
			t.Errorf("fitsChange(%q) = %v", text, got)
		}
	}
}
