package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestFDExhaustionLines(t *testing.T) {
	testLines(t, fdExhaustion, []lineCase{
		{"2026/04/18 02:31:06 http: Accept error: accept tcp [::]:8080: accept4: too many open files; retrying in 1s", KindFDExhaustion},
		{`{"level":"error","err":"dial tcp 52.1.2.3:443: socket: too many open files"}`, KindFDExhaustion},
		{"Error: EMFILE, open '/data/x'", KindFDExhaustion},
		{"java.io.IOException: Too many open files", KindFDExhaustion},
		{"INFO opened 1024 files for compaction", ""},
	})
}

// TestFDLimit reads the open-files limit behind "too many open files" in
// the forms a host prints it: systemctl cat's LimitNOFILE=, systemctl
// show's, /proc/PID/limits' row, with the descriptors counted and a
// removed drop-in's older limit; the replicas of the question's service
// that all hit it make it the limit, not a leak. Without a limit shown
// nothing is added.
func TestFDLimit(t *testing.T) {
	line := func(subj string, at time.Time) Finding {
		f := Finding{Kind: KindFDExhaustion, Subject: subj, Time: at, Weight: 0.9, Summary: subj + " logs too many open files"}
		f.setFact("line", "2026-03-14T19:19:39.222Z ERROR Socket accept failed java.io.IOException: Too many open files")
		return f
	}
	cmd := func(run string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Host: "ws-01", Lines: lines}
	}
	unit := cmd("systemctl cat push-gw", "# /etc/systemd/system/push-gw.service", "[Service]", "User=push", "LimitNOFILE=4096", "Restart=on-failure")
	show := cmd("systemctl show -p LimitNOFILE push-gw", "LimitNOFILE=1024")
	procLimits := cmd("grep 'open files' /proc/2211/limits", "Max open files            8192                 8192                 files")
	count := cmd("sudo ls /proc/2211/fd | wc -l", "4096")
	removed := cmd("git -C /etc/ansible log -1 -p -- push-gw.service.d/limits.conf", " 1 file changed, 2 deletions(-)", "-[Service]", "-LimitNOFILE=65536")
	t0 := now.Add(-30 * time.Minute)
	cases := []struct {
		name  string
		found []Finding
		cmds  []evidence.CommandOutput
		scope Scope
		want  []string
	}{
		{"the unit's limit, the count and the dropped drop-in, on every replica", []Finding{line("push-gw-02", t0), line("push-gw-01", t0.Add(time.Minute))},
			[]evidence.CommandOutput{unit, count, removed}, Scope{Service: "push-gw"},
			[]string{"push-gw-02 runs out of file descriptors at its open-files limit of 4096", "LimitNOFILE=4096", "holds 4096 descriptors", "was 65536 before", "push-gw-01, push-gw-02", "not one replica's leak"}},
		{"systemctl show", []Finding{line("push-gw", t0)}, []evidence.CommandOutput{show}, Scope{},
			[]string{"limit of 1024", "LimitNOFILE=1024"}},
		{"/proc/PID/limits", []Finding{line("push-gw", t0)}, []evidence.CommandOutput{procLimits}, Scope{},
			[]string{"limit of 8192", "Max open files 8192 8192 files"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win, Scope: c.scope}
			fs := detectFDLimit(ev, c.found)
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindFDExhaustion, Subject: fs[0].Subject, Primary: []*Finding{&c.found[0], &fs[0]}}
			wantDescribed(t, h, c.scope, c.want...)
			if recs := recommend(h, c.scope); len(recs) == 0 || !strings.Contains(recs[0].Action, "Raise the open-files limit") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
	if fs := detectFDLimit(&Gathered{Commands: []evidence.CommandOutput{count}, Window: win}, []Finding{line("push-gw", t0)}); len(fs) != 0 {
		t.Errorf("no limit shown: %+v", fs)
	}
	if fs := detectFDLimit(&Gathered{Commands: []evidence.CommandOutput{unit}, Window: win}, nil); len(fs) != 0 {
		t.Errorf("no exhaustion: %+v", fs)
	}
}

// TestFDCloseWaitLeak reads a descriptor leak from the sockets a process
// holds, in the forms hosts print them: ss -tan's per-state counts with a
// per-peer count of the CLOSE-WAIT ones, netstat -ant's and ss -tan's own
// rows. Most sockets in CLOSE-WAIT make it a leak, named with the last
// deploy of the service; sockets mostly established do not.
func TestFDCloseWaitLeak(t *testing.T) {
	line := Finding{Kind: KindFDExhaustion, Subject: "thumbs", Time: now.Add(-20 * time.Minute), Weight: 0.9}
	line.setFact("line", "2026/04/18 02:31:06 http: Accept error: accept tcp [::]:8080: accept4: too many open files; retrying in 1s")
	cmd := func(run string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, Lines: lines}
	}
	limits := cmd("cat /proc/1/limits | grep 'open files'", "Max open files            1048576              1048576              files")
	deploy := evidence.Change{Timestamp: now.Add(-50 * time.Hour), Service: "thumbs", Kind: "deploy", Revision: "v2.7.0", Description: "retry failed fetches through the fallback client"}
	older := evidence.Change{Timestamp: now.Add(-400 * time.Hour), Service: "thumbs", Kind: "deploy", Revision: "v2.6.3"}
	other := evidence.Change{Timestamp: now.Add(-30 * time.Hour), Service: "billing", Kind: "deploy", Revision: "9.1.0"}
	var netstat []string
	netstat = append(netstat, "Proto Recv-Q Send-Q Local Address           Foreign Address         State")
	for i := 0; i < 150; i++ {
		netstat = append(netstat, "tcp        1      0 10.1.4.17:51234         10.96.12.40:443         CLOSE_WAIT")
	}
	netstat = append(netstat, "tcp        0      0 0.0.0.0:8080            0.0.0.0:*               LISTEN", "tcp        0      0 10.1.4.17:8080          10.1.2.9:40112          ESTABLISHED")
	var ssRows []string
	ssRows = append(ssRows, "State      Recv-Q Send-Q Local Address:Port  Peer Address:Port")
	for i := 0; i < 120; i++ {
		ssRows = append(ssRows, "CLOSE-WAIT 1      0      10.1.4.17:40000     10.96.0.77:9000")
	}
	cases := []struct {
		name string
		cmds []evidence.CommandOutput
		want []string
	}{
		{"ss per-state and per-peer counts", []evidence.CommandOutput{limits,
			cmd(`sh -c 'ss -tan | awk "NR>1{print \$1}" | sort | uniq -c'`, "   9120 CLOSE-WAIT", "    210 ESTAB", "      1 LISTEN", "     31 TIME-WAIT"),
			cmd(`sh -c "ss -tan state close-wait | awk '{print \$4}' | sort | uniq -c | sort -rn | head -3"`, "   9101 10.96.12.40:443", "     19 10.1.2.9:6379")},
			[]string{"9120 of 9362 sockets sit in CLOSE-WAIT", "most of them to 10.96.12.40:443", "the deploy of thumbs v2.7.0", "retry failed fetches"}},
		{"netstat rows", []evidence.CommandOutput{limits, cmd("netstat -ant", netstat...)},
			[]string{"150 of 152 sockets sit in CLOSE-WAIT", "most of them to 10.96.12.40:443", "v2.7.0"}},
		{"ss rows", []evidence.CommandOutput{limits, cmd("ss -tan", ssRows...)},
			[]string{"120 of 120 sockets sit in CLOSE-WAIT", "10.96.0.77:9000", "v2.7.0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win, Earlier: []evidence.Change{older, deploy}, Changes: []evidence.Change{other}}
			fs := detectFDLimit(ev, []Finding{line})
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindFDExhaustion, Subject: fs[0].Subject, Primary: []*Finding{&line, &fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "Roll back thumbs") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
	busy := cmd("ss -tan | awk '{print $1}' | sort | uniq -c", "    300 CLOSE-WAIT", "  60000 ESTAB")
	fs := detectFDLimit(&Gathered{Commands: []evidence.CommandOutput{limits, busy}, Window: win, Earlier: []evidence.Change{deploy}}, []Finding{line})
	if len(fs) != 1 || fs[0].fact("close_wait") != "" {
		t.Errorf("established connections are load, not a leak: %+v", fs)
	}
}
