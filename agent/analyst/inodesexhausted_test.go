package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A filesystem out of inodes, as df -i prints it (GNU coreutils, BusyBox,
// macOS) and as the kubelet's volume series say it, behind a writer's
// "no space left on device": the answer is inodes, with the bytes df -h
// shows used. A filesystem with inodes left, or inodes gone with no
// writer failing, is not this cause.
func TestDetectInodesExhausted(t *testing.T) {
	full := Finding{Kind: KindDiskFull, Subject: "loki", Severity: SevCritical, Time: win.Start.Add(5 * time.Minute),
		Facts: map[string]string{"line": `level=error caller=flush.go:261 msg="failed to flush" err="store put chunk: open /var/loki/chunks/fake/x: no space left on device"`}}
	exec := func(run string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl exec -n logging loki-0 -- " + run, Exec: true, Pod: "loki-0", Run: run, Lines: lines}
	}
	gnu := []evidence.CommandOutput{
		exec("df -h /var/loki", "Filesystem      Size  Used Avail Use% Mounted on", "/dev/nvme1n1     98G   41G   53G  44% /var/loki"),
		exec("df -i /var/loki", "Filesystem      Inodes   IUsed IFree IUse% Mounted on", "/dev/nvme1n1   6553600 6553600     0  100% /var/loki"),
	}
	busybox := []evidence.CommandOutput{exec("df -i /data", "Filesystem           Inodes      Used Available Use% Mounted on", "/dev/sdb             655360    655360         0 100% /data")}
	macos := []evidence.CommandOutput{exec("df -i /cache", "Filesystem   512-blocks     Used Available Capacity  iused ifree %iused  Mounted on", "/dev/disk3s1  975093952 40213112 534220808     8% 4194304     0  100%   /cache")}
	roomy := []evidence.CommandOutput{exec("df -i /var/loki", "Filesystem      Inodes   IUsed IFree IUse% Mounted on", "/dev/nvme1n1   6553600 1210044 5343556   19% /var/loki")}
	lbl := evidence.Labels{"namespace": "logging", "persistentvolumeclaim": "storage-loki-0"}
	kubelet := []MetricSet{
		{Name: "kubelet_volume_stats_inodes", Series: []evidence.Series{{Labels: lbl, Points: pts(win.Start, time.Minute, 6553600, 6553600)}}},
		{Name: "kubelet_volume_stats_inodes_free", Series: []evidence.Series{{Labels: lbl, Points: pts(win.Start, time.Minute, 1200, 0)}}},
	}
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		metrics []MetricSet
		found   []Finding
		want    []string // nil: no finding
	}{
		{"GNU df -i with df -h", gnu, nil, []Finding{full}, []string{"out of inodes", "6553600 of 6553600", "IUse% 100%", "only 44% of its bytes", "/var/loki"}},
		{"BusyBox df -i", busybox, nil, []Finding{full}, []string{"out of inodes", "655360 of 655360", "/data"}},
		{"macOS df -i", macos, nil, []Finding{full}, []string{"4194304 of 4194304", "/cache"}},
		{"kubelet volume series", nil, kubelet, []Finding{full}, []string{"out of inodes", "0 inodes free", "storage-loki-0"}},
		{"inodes left: a full disk of bytes", roomy, nil, []Finding{full}, nil},
		{"inodes gone, no writer failing", gnu, nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectInodesExhausted(&Gathered{Commands: c.cmds, Metrics: c.metrics, Window: win}, c.found)
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("finding %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "loki" {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindInodesExhausted, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) != 3 {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
