package analyst

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A pod waiting on the kubelet's recursive fsGroup ownership change, as
// the kubelet says it: its 1.2x log warning, its 1.30 structured line,
// the 1.32 VolumePermissionChangeInProgress event, or (without any) a
// mount wait timing out on a pod whose fsGroup has no OnRootMismatch. A
// pod with OnRootMismatch, or without fsGroup, is not this cause.
func TestDetectFSGroupChown(t *testing.T) {
	gid := int64(200)
	onRoot := corev1.FSGroupChangeOnRootMismatch
	sts := func(policy *corev1.PodFSGroupChangePolicy, group *int64) appsv1.StatefulSet {
		s := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "nexus", Namespace: "devtools"}}
		if group != nil {
			s.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: group, FSGroupChangePolicy: policy}
		}
		return s
	}
	mount := Finding{Kind: KindMountFailure, Subject: "nexus", Object: "pod nexus-0", Severity: SevCritical, Time: win.Start,
		Facts: map[string]string{"message": "Unable to attach or mount volumes: unmounted volumes=[nexus-data], unattached volumes=[], failed to process volumes=[]: timed out waiting for the condition"}}
	klog := minedSet("kubelet", true, 0, `W1125 07:42:16.118801    2873 volume_linux.go:49] Setting volume ownership for /var/lib/kubelet/pods/c81e/volumes/kubernetes.io~csi/pvc-2d7f/mount and fsGroup set. If the volume has a lot of files then setting volume ownership could be slow, see https://github.com/kubernetes/kubernetes/issues/69699`)
	structured := minedSet("kubelet", true, 0, `I1125 07:42:16.118801    2873 volume_linux.go:116] "Perform recursive ownership change for directory" directory="/var/lib/kubelet/pods/c81e/volumes/kubernetes.io~csi/pvc-2d7f/mount"`)
	event := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "nexus-0", Namespace: "devtools"}, Reason: "VolumePermissionChangeInProgress", Type: "Warning",
		Message: "Setting volume ownership for /var/lib/kubelet/pods/c81e/volumes/kubernetes.io~csi/pvc-2d7f/mount is taking longer than expected, consider using OnRootMismatch - https://kubernetes.io/docs/tasks/configure-pod-container/security-context/#configure-volume-permission-and-ownership-change-policy-for-pods"}
	dfi := evidence.CommandOutput{Command: "ssh node 'sudo df -i /var/lib/kubelet/pods/c81e/volumes/kubernetes.io~csi/pvc-2d7f/mount'", Lines: []string{
		"Filesystem        Inodes   IUsed    IFree IUse% Mounted on",
		"/dev/nvme2n1    98304000 4186211 94117789    5% /var/lib/kubelet/pods/c81e/volumes/kubernetes.io~csi/pvc-2d7f/mount"}}
	cases := []struct {
		name   string
		sts    appsv1.StatefulSet
		logs   []LogSet
		events []corev1.Event
		weight float64 // 0: no finding
		want   []string
	}{
		{"kubelet 1.2x warning, df -i", sts(nil, &gid), []LogSet{klog}, nil, 0.9, []string{"fsGroup 200", "Setting volume ownership", "4186211 files", "nexus-data"}},
		{"kubelet 1.30 structured line", sts(nil, &gid), []LogSet{structured}, nil, 0.9, []string{"recursive ownership change"}},
		{"1.32 event", sts(nil, &gid), nil, []corev1.Event{event}, 0.9, []string{"VolumePermissionChangeInProgress"}},
		{"mount wait alone", sts(nil, &gid), nil, nil, 0.8, []string{"fsGroup 200", "nexus-data"}},
		{"OnRootMismatch set", sts(&onRoot, &gid), []LogSet{klog}, nil, 0, nil},
		{"no fsGroup", sts(nil, nil), []LogSet{klog}, nil, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{K8s: K8sEvidence{StatefulSets: []appsv1.StatefulSet{c.sts}, Events: c.events}, Logs: c.logs, Commands: []evidence.CommandOutput{dfi}, Window: win}
			fs := detectFSGroupChown(g, []Finding{mount})
			if c.weight == 0 {
				if len(fs) != 0 {
					t.Fatalf("finding %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "nexus" || fs[0].Weight != c.weight {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindFSGroupChown, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) != 3 {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
