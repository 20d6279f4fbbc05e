package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// describeNode is kubectl's node page with its Ready condition as given.
func describeNode(name, status, since, reason, msg string) string {
	return fmt.Sprintf(`$ kubectl describe node %[1]s
Name:               %[1]s
Roles:              <none>
CreationTimestamp:  Fri, 07 Nov 2026 10:02:51 +0000
Taints:             <none>
Unschedulable:      false
Conditions:
  Type             Status  LastHeartbeatTime                 LastTransitionTime                Reason                       Message
  ----             ------  -----------------                 ------------------                ------                       -------
  MemoryPressure   False   Thu, 03 Dec 2026 03:49:31 +0000   Fri, 07 Nov 2026 10:02:51 +0000   KubeletHasSufficientMemory   kubelet has sufficient memory available
  Ready            %[2]s   Thu, 03 Dec 2026 03:49:31 +0000   %[3]s   %[4]s                 %[5]s
Addresses:
  InternalIP:   10.0.4.122
`, name, status, since, reason, msg)
}

// A node NotReady for a while and Ready again since: the answer is that it
// recovered, with why (the runtime restarted by a package upgrade, in
// dnf's, apt's or the kubelet's words); a node still NotReady, one Ready
// for weeks with no episode, or one back only minutes ago is not.
func TestDetectNodeRecovered(t *testing.T) {
	now := time.Date(2026, 12, 3, 3, 52, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	node := "ip-10-0-4-122.eu-north-1.compute.internal"
	dnf := []string{
		`Dec 03 02:58:03 ip-10-0-4-122.eu-north-1.compute.internal dnf[412877]: Upgrading: containerd-1.7.23-1.amzn2023.0.1.aarch64 (replacing containerd-1.7.22-1.amzn2023.0.2.aarch64)`,
		`Dec 03 02:58:04 ip-10-0-4-122.eu-north-1.compute.internal systemd[1]: Stopping containerd.service - containerd container runtime...`,
		`Dec 03 02:59:10 ip-10-0-4-122.eu-north-1.compute.internal kubelet[3121]: E1203 02:59:10.002941    3121 kubelet.go:2412] "Skipping pod synchronization" err="container runtime is down"`,
		`Dec 03 03:18:53 ip-10-0-4-122.eu-north-1.compute.internal systemd[1]: Started containerd.service - containerd container runtime.`,
	}
	apt := []string{
		`2026-12-03T02:58:03.118Z worker-3 apt[9911]: Preparing to unpack .../cri-o_1.30.4~0_amd64.deb ...`,
		`2026-12-03T02:58:04.201Z worker-3 systemd[1]: Stopping crio.service - Container Runtime Interface for OCI (CRI-O)...`,
		`2026-12-03T02:59:10.002Z worker-3 kubelet[3121]: E1203 02:59:10.002941 3121 kubelet.go:2412] "Skipping pod synchronization" err="[container runtime is down, PLEG is not healthy: pleg was last seen active 3m9.1s ago; threshold is 3m0s]"`,
	}
	cni := []string{
		`Dec 03 02:59:10 ip-10-0-4-122 kubelet[3121]: E1203 02:59:10.00 3121 kubelet.go:2900] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"`,
	}
	// The kernel wedging on a disk: NVMe timeouts and hung tasks (journalctl
	// -o short-iso), xen/virtio block errors in syslog form, a soft lockup.
	nvme := []string{
		`2026-12-03T02:58:02Z ip-10-0-4-122 kernel: nvme nvme1: I/O tag 287 (011f) opcode 0x1 (I/O Cmd) QID 2 timeout, aborting`,
		`2026-12-03T03:00:11Z ip-10-0-4-122 kernel: INFO: task jbd2/nvme1n1-8:2104 blocked for more than 122 seconds.`,
		`2026-12-03T03:02:14Z ip-10-0-4-122 kernel: INFO: task containerd-shim:41877 blocked for more than 122 seconds.`,
		`2026-12-03T03:05:02Z ip-10-0-4-122 kubelet[1843]: E1203 03:05:02.118392    1843 kubelet.go:2435] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 4m12.611s ago; threshold is 3m0s"`,
		`2026-12-03T03:12:58Z ip-10-0-4-122 systemd-logind[1122]: System is rebooting.`,
	}
	xvd := []string{
		`Dec 03 02:58:40 worker-3 kernel: blk_update_request: I/O error, dev xvdf, sector 48213504 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0`,
		`Dec 03 03:00:41 worker-3 kernel: INFO: task kworker/u8:2:123 blocked for more than 120 seconds.`,
	}
	lockup := []string{
		`[Thu Dec  3 02:58:40 2026] watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [java:51230]`,
		`2026-12-03T03:00:10Z worker-3 kubelet[3121]: E1203 03:00:10.002941 3121 kubelet.go:2412] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m9.1s ago; threshold is 3m0s"`,
	}
	notReadyEvent := Finding{Kind: KindNodeNotReady, Subject: node, Object: "node " + node, Time: time.Date(2026, 12, 3, 2, 59, 0, 0, time.UTC), Weight: 0.8,
		Evidence: []string{"event NodeNotReady on node " + node}, Facts: map[string]string{"node": node}}
	cases := []struct {
		name          string
		status, since string
		journal       []string
		host          string
		found         []Finding
		want          []string // nil: no finding
	}{
		{"containerd upgraded by dnf, Ready since 03:19", "True", "Thu, 03 Dec 2026 03:19:06 +0000", dnf, "ip-10-0-4-122-journal", []Finding{notReadyEvent},
			[]string{"has recovered", "02:58 to 03:19", "containerd", "package upgrade", "no need to cordon"}},
		{"CRI-O unpacked by apt, no event", "True", "Thu, 03 Dec 2026 03:19:06 +0000", apt, "ip-10-0-4-122", nil,
			[]string{"has recovered", "crio", "container runtime", "package upgrade to cri-o_1.30.4"}},
		{"network plugin not ready", "True", "Thu, 03 Dec 2026 03:19:06 +0000", cni, "ip-10-0-4-122-kubelet", []Finding{notReadyEvent},
			[]string{"has recovered", "network plugin"}},
		{"disk hung: NVMe timeouts and hung tasks, rebooted", "True", "Thu, 03 Dec 2026 03:19:06 +0000", nvme, "ip-10-0-4-122.journal", []Finding{notReadyEvent},
			[]string{"has recovered", "02:58 to 03:19", "kernel hung", "disk nvme1 stopped answering", "blocked for more than 122 seconds", "jbd2/nvme1n1-8", "containerd-shim", "PLEG", "rebooted", "not maintenance"}},
		{"block I/O errors in syslog form", "True", "Thu, 03 Dec 2026 03:19:06 +0000", xvd, "worker-3-ip-10-0-4-122", []Finding{notReadyEvent},
			[]string{"kernel hung", "disk xvdf", "kworker/u8:2"}},
		{"soft lockup", "True", "Thu, 03 Dec 2026 03:19:06 +0000", lockup, "ip-10-0-4-122-dmesg", []Finding{notReadyEvent},
			[]string{"kernel hung", "soft lockup - CPU#3 stuck", "PLEG"}},
		{"still NotReady", "False", "Thu, 03 Dec 2026 02:59:12 +0000", dnf, "ip-10-0-4-122-journal", []Finding{notReadyEvent}, nil},
		{"back only five minutes ago", "True", "Thu, 03 Dec 2026 03:47:00 +0000", dnf, "ip-10-0-4-122-journal", []Finding{notReadyEvent}, nil},
		{"Ready for weeks, no episode", "True", "Fri, 07 Nov 2026 10:02:51 +0000", nil, "", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reason, msg := "KubeletReady", "kubelet is posting ready status"
			if c.status != "True" {
				reason, msg = "KubeletNotReady", "container runtime is down"
			}
			res := kubetext.Parse([]byte(describeNode(node, c.status, c.since, reason, msg)), now)
			ev := &Gathered{Window: w}
			for _, o := range res.Objects {
				if n, ok := o.(*corev1.Node); ok {
					ev.K8s.Nodes = append(ev.K8s.Nodes, *n)
				}
			}
			if len(ev.K8s.Nodes) != 1 {
				t.Fatalf("node not read: %+v", res.Skipped)
			}
			if c.journal != nil {
				set := minedSetAt(c.host, w, c.journal)
				ev.Logs = []LogSet{set}
			}
			fs := detectNodeRecovered(ev, c.found)
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("finding %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %+v", fs)
			}
			h := &Hypothesis{Kind: KindNodeRecovered, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := describe(h, Scope{})
			for _, s := range c.want {
				if !strings.Contains(strings.ToLower(d), strings.ToLower(s)) {
					t.Errorf("description %q lacks %q", d, s)
				}
			}
			first := "No action needed"
			if strings.Contains(d, "kernel hung") {
				first = "Check the health of node"
			}
			if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, first) {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}

// minedSetAt mines a host's journal lines at the times they carry.
func minedSetAt(source string, w Window, lines []string) LogSet {
	m := analysis.NewMiner(w.BaselineStart, w.Start, w.End)
	for _, l := range lines {
		at, _ := evidence.LineTime([]byte(l), w.End)
		m.Add(at, source, MiningText(l))
	}
	return LogSet{Source: source, Subject: source, Origin: SrcLogs, Host: true, Templates: m.Templates()}
}
