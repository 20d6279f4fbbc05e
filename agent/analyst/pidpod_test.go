package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// readPS reads zombies, PID 1 and the pids cgroup in the forms a
// container's ps, top and cgroup files print them.
func TestReadPS(t *testing.T) {
	tests := []struct {
		name         string
		run          string
		lines        []string
		zombies      int
		pid1         string
		current, max float64
		limit        float64
	}{
		{"ps listing, uniq -c, cat pids files",
			"sh -c 'ps -eo pid,ppid,stat,comm | head -8; ps -eo stat,comm | sort | uniq -c; cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids.current'",
			[]string{"    PID    PPID STAT COMMAND", "      1       0 Ssl  node", "     31       1 Z    chrome <defunct>", "...", "    611 Z    chrome <defunct>", "    203 Z    chrome_crashpad <defunct>", "     12 Sl   chrome", "", "1024", "842"},
			814, "node", 842, 1024, 0},
		{"ps listing only (python PID 1, sh children)",
			"ps -o pid,ppid,stat,comm",
			[]string{"PID PPID STAT COMMAND", "1 0 Ss python", "40 1 Z sh", "41 1 Z sh", "42 1 Z sh", "43 1 S worker"},
			3, "python", 0, 0, 0},
		{"top task line, grep -H cgroup v1 files",
			"sh -c 'top -bn1 | head -3; grep -H . /sys/fs/cgroup/pids/pids.*'",
			[]string{"Tasks: 4093 total,   2 running,  61 sleeping,   0 stopped, 4030 zombie", "/sys/fs/cgroup/pids/pids.current:4096", "/sys/fs/cgroup/pids/pids.max:4096"},
			4030, "", 4096, 4096, 0},
		{"kubelet configz",
			"kubectl get --raw /api/v1/nodes/n1/proxy/configz",
			[]string{"{", `  "podPidsLimit": 1024,`, `  "maxPods": 110`, "}"},
			0, "", 0, 0, 1024},
		{"unlimited pids.max",
			"cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids.current",
			[]string{"max", "37"},
			0, "", 37, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := readPS(evidence.CommandOutput{Run: tt.run, Lines: tt.lines})
			if r.zombies != tt.zombies || r.pid1 != tt.pid1 || r.current != tt.current || r.max != tt.max || r.limit != tt.limit {
				t.Errorf("readPS = zombies %d pid1 %q current %.0f max %.0f limit %.0f, want %d %q %.0f %.0f %.0f",
					r.zombies, r.pid1, r.current, r.max, r.limit, tt.zombies, tt.pid1, tt.current, tt.max, tt.limit)
			}
		})
	}
}

// A pod out of PIDs with no node short of them: its log failing to spawn
// with EAGAIN, its ps full of zombies under a PID 1 that does not reap;
// lines alone with nothing at a limit are left to the log rules.
func TestDetectPodPIDs(t *testing.T) {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "renderer-7c9d5b6f4-2xj8k", Namespace: "docs"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 9}}}}
	ps := evidence.CommandOutput{Exec: true, Namespace: "docs", Pod: "renderer-7c9d5b6f4-2xj8k", Run: "ps -eo pid,ppid,stat,comm; cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids.current",
		Lines: append([]string{"PID PPID STAT COMMAND", "1 0 Ssl node"}, append(strings.Split(strings.Repeat("77 1 Z chrome <defunct>\n", 40), "\n")[:40], "1024", "1010")...)}
	tests := []struct {
		name   string
		line   string
		cmds   []evidence.CommandOutput
		want   bool
		expect []string
	}{
		{"node spawn EAGAIN with zombies", `{"level":50,"msg":"render failed","err":{"message":"spawn EAGAIN","code":"EAGAIN","syscall":"spawn"}}`, []evidence.CommandOutput{ps}, true, []string{"zombie", "PID 1 (node)", "1010 of pids.max 1024", "EAGAIN"}},
		{"glibc fork failing with zombies", `sh: fork: retry: Resource temporarily unavailable`, []evidence.CommandOutput{ps}, true, []string{"zombie", "pids"}},
		{"zombies at the limit, no line read", "", []evidence.CommandOutput{ps}, true, []string{"zombie"}},
		{"a line with nothing at a limit", `java.lang.OutOfMemoryError: unable to create native thread`, nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{pod}, PreviousLogs: map[string][]evidence.LogLine{}}, Commands: tt.cmds, Window: win}
			if tt.line != "" {
				ev.K8s.PreviousLogs["docs/renderer-7c9d5b6f4-2xj8k/app"] = []evidence.LogLine{{Time: win.Start, Text: tt.line}}
			}
			fs := detectPodPIDs(ev, nil)
			if (len(fs) > 0) != tt.want {
				t.Fatalf("got %d findings, want %v", len(fs), tt.want)
			}
			if !tt.want {
				return
			}
			h := &Hypothesis{Kind: KindPIDExhaustion, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := pidExhaustion.describe(h, Scope{})
			for _, e := range tt.expect {
				if !strings.Contains(d, e) {
					t.Errorf("description lacks %q: %s", e, d)
				}
			}
			if fs[0].fact("why") == "" {
				t.Errorf("no why fact")
			}
		})
	}
}
