package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// csiSession is a pod stuck in ContainerCreating on a node whose CSI node
// plugin crash-loops, as kubectl prints it.
const csiSession = `$ kubectl describe pod reports-db-0 -n analytics
Name:             reports-db-0
Namespace:        analytics
Node:             ip-10-70-29-141.us-west-2.compute.internal/10.70.29.141
Status:           Pending
Controlled By:    StatefulSet/reports-db
Containers:
  postgres:
    Image:          postgres:16.4
    State:          Waiting
      Reason:       ContainerCreating
    Ready:          False
    Restart Count:  0
Events:
  Type     Reason                  Age                 From                     Message
  ----     ------                  ----                ----                     -------
  Normal   Scheduled               25m                 default-scheduler        Successfully assigned analytics/reports-db-0 to ip-10-70-29-141.us-west-2.compute.internal
  Warning  FailedMount             2m5s (x20 over 24m) kubelet                  MountVolume.MountDevice failed for volume "pvc-3f9a1c2e" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name ebs.csi.aws.com not found in the list of registered CSI drivers

$ kubectl get pods -n kube-system -o wide
NAME                 READY   STATUS             RESTARTS        AGE   IP             NODE                                          NOMINATED NODE   READINESS GATES
ebs-csi-node-4wq9z   1/1     Running            0               31d   10.70.14.58    ip-10-70-14-212.us-west-2.compute.internal   <none>           <none>
ebs-csi-node-tz6m2   %s                 11 (3m9s ago)   38m   10.70.29.203   ip-10-70-29-141.us-west-2.compute.internal   <none>           <none>
coredns-5d8f7c9b6-x2x   1/1     Running         0               31d   10.70.29.9     ip-10-70-29-141.us-west-2.compute.internal   <none>           <none>

$ kubectl get csinode ip-10-70-29-141.us-west-2.compute.internal
NAME                                         DRIVERS   AGE
ip-10-70-29-141.us-west-2.compute.internal   0         38m
`

// TestCSIPluginPod: a driver's own node plugin outranks another CSI
// plugin; other pods are none.
func TestCSIPluginPod(t *testing.T) {
	cases := []struct {
		pod, driver string
		want        int
	}{
		{"ebs-csi-node-tz6m2", "ebs.csi.aws.com", 2},
		{"efs-csi-node-8kq2d", "ebs.csi.aws.com", 1},
		{"csi-rbdplugin-4xk2p", "rook-ceph.rbd.csi.ceph.com", 1},
		{"pdcsi-node-7wq9z", "pd.csi.storage.gke.io", 2},
		{"csi-rbdplugin-4xk2p", "ebs.csi.aws.com", 1},
		{"csi-azuredisk-node-abcde", "disk.csi.azure.com", 2},
		{"kube-proxy-x8k2j", "ebs.csi.aws.com", 0},
		{"aws-node-9kd8s", "ebs.csi.aws.com", 0},
	}
	for _, c := range cases {
		if got := csiPluginPod(c.pod, c.driver); got != c.want {
			t.Errorf("csiPluginPod(%q, %q) = %d, want %d", c.pod, c.driver, got, c.want)
		}
	}
}

// TestCSIFinding: the FailedMount of an unregistered driver is read with
// the pod's node; the plugin on that node, crash-looping, and its error
// line make the cause, and csinode's 0 drivers is quoted. A plugin that
// runs, or none at all, leaves the finding one hop short.
func TestCSIFinding(t *testing.T) {
	now := time.Date(2026, 11, 25, 17, 48, 0, 0, time.UTC)
	lines := []evidence.LogLine{
		{Source: "ebs-csi-node-tz6m2/ebs-plugin", Text: `I1125 17:44:51.002389       1 metadata.go:48] "Retrieving instance data from ec2 metadata"`},
		{Source: "ebs-csi-node-tz6m2/ebs-plugin", Text: `W1125 17:45:11.004115       1 metadata.go:51] "Retrieving EC2 instance identity metadata failed" err="operation error ec2imds: GetInstanceIdentityDocument, canceled, context deadline exceeded"`},
		{Source: "ebs-csi-node-tz6m2/ebs-plugin", Text: `E1125 17:45:11.004187       1 main.go:161] "Failed to initialize metadata when it is required" err="failed to get EC2 instance metadata: operation error ec2imds: GetInstanceIdentityDocument, canceled, context deadline exceeded"`},
		{Source: "ebs-csi-node-tz6m2/node-driver-registrar", Text: `W1125 17:10:32.416014       1 connection.go:234] Still connecting to unix:///csi/csi.sock`},
	}
	cases := []struct {
		name, status string
		lines        []evidence.LogLine
		weight       float64
		stateOnly    bool
		want         []string
	}{
		{"plugin crash-looping", "0/1     CrashLoopBackOff", lines, 0.9, false,
			[]string{"ebs.csi.aws.com is not registered", "CrashLoopBackOff", "Failed to initialize metadata", "ip-10-70-29-141"}},
		{"plugin ready, log read", "1/1     Running         ", lines[:3], 0.8, false, []string{"Failed to initialize metadata"}},
		{"nothing seen of the plugin", "1/1     Running         ", nil, 0.8, true, []string{"no node plugin of the driver was seen running"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(strings.Replace(csiSession, "%s", c.status, 1)), now)
			var pods []corev1.Pod
			for _, o := range res.Objects {
				if p, ok := o.(*corev1.Pod); ok {
					pods = append(pods, *p)
				}
			}
			var cmds []evidence.CommandOutput
			for _, o := range res.Outputs {
				cmds = append(cmds, evidence.CommandOutput{Command: o.Command, Lines: o.Lines})
			}
			ev := &Gathered{K8s: K8sEvidence{Pods: pods, Events: res.Events}, Window: Window{Start: now.Add(-time.Hour), End: now}}
			found := DetectEvents(ev.K8s.Events, ev.K8s.Pods, ev.Window)
			ms := csiMounts(found, pods)
			if len(ms) != 1 || ms[0].driver != "ebs.csi.aws.com" || ms[0].node != "ip-10-70-29-141.us-west-2.compute.internal" {
				t.Fatalf("csiMounts = %+v", ms)
			}
			var b csiPlugin
			for _, p := range pods {
				if p.Spec.NodeName == ms[0].node && csiPluginPod(p.Name, ms[0].driver) > 0 {
					b.Pods = append(b.Pods, p)
				}
			}
			if c.lines == nil {
				b.Pods = nil
			}
			b.Lines = c.lines
			b.Drivers = csiNodeDrivers(cmds, ms[0].node)
			if b.Drivers != "0" {
				t.Errorf("csinode drivers = %q, want 0", b.Drivers)
			}
			f := csiFinding(ms[0], b, now)
			if f.Subject != "reports-db" || f.Weight != c.weight || (f.fact("state_only") == "true") != c.stateOnly {
				t.Errorf("finding subject %q weight %v state_only %q", f.Subject, f.Weight, f.fact("state_only"))
			}
			h := &Hypothesis{Kind: KindCSIDriver, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}

// TestCSIMountsOtherFailures: mount failures for other reasons (a missing
// Secret, a volume attached elsewhere) are not this mechanism's.
func TestCSIMountsOtherFailures(t *testing.T) {
	for _, msg := range []string{
		`MountVolume.SetUp failed for volume "tls" : secret "web-tls" not found`,
		`Multi-Attach error for volume "pvc-1" Volume is already exclusively attached to one node and can't be attached to another`,
		`MountVolume.MountDevice failed for volume "pvc-1" : rpc error: code = Internal desc = could not format "/dev/nvme1n1"`,
	} {
		f := Finding{Kind: KindMountFailure, Subject: "db", Facts: map[string]string{"message": msg}}
		if ms := csiMounts([]Finding{f}, nil); len(ms) != 0 {
			t.Errorf("csiMounts(%q) = %+v, want none", msg, ms)
		}
	}
}
