package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod Pending on a volume node affinity conflict: its volume's zone,
// read from the volume's node affinity (describe pv, -o yaml) or its zone
// label, against the zones of the nodes it selects, and its class's
// binding mode (Immediate, WaitForFirstConsumer); a volume in a zone the
// nodes are in, and another scheduling failure, add nothing.
func TestExplainVolumeZone(t *testing.T) {
	immediate, wait := storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer
	classes := []storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "gp3-analytics"}, VolumeBindingMode: &immediate},
		{ObjectMeta: metav1.ObjectMeta{Name: "pd-ssd"}, VolumeBindingMode: &wait},
	}
	class := func(s string) *string { return &s }
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "clickhouse-3", Namespace: "analytics"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"node-pool": "analytics"},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-clickhouse-3"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	node := func(name, pool, zoneKey, zone string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-pool": pool, zoneKey: zone}}}
	}
	nodes := []corev1.Node{node("ip-10-70-33-201", "analytics", "topology.kubernetes.io/zone", "us-east-1a"), node("ip-10-70-49-12", "analytics", "topology.kubernetes.io/zone", "us-east-1b"),
		node("ip-10-70-64-90", "general", "topology.kubernetes.io/zone", "us-east-1c")}
	gkeNodes := []corev1.Node{node("gke-analytics-1", "analytics", "topology.gke.io/zone", "europe-west1-b"), node("gke-general-1", "general", "topology.gke.io/zone", "europe-west1-c")}
	affinity := func(key, zone string) *corev1.VolumeNodeAffinity {
		return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}
	}
	pv := func(name, sc string, na *corev1.VolumeNodeAffinity, labels map[string]string) corev1.PersistentVolume {
		return corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PersistentVolumeSpec{StorageClassName: sc, NodeAffinity: na, ClaimRef: &corev1.ObjectReference{Namespace: "analytics", Name: "data-clickhouse-3"}}}
	}
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-clickhouse-3", Namespace: "analytics"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class("gp3-analytics"), VolumeName: "pvc-e2a7c4f1"}}
	const conflict = "0/9 nodes are available: 3 node(s) had volume node affinity conflict, 6 node(s) didn't match Pod's node affinity/selector."
	for _, tc := range []struct {
		name   string
		msg    string
		claims []corev1.PersistentVolumeClaim
		pvs    []corev1.PersistentVolume
		nodes  []corev1.Node
		want   []string
	}{
		{"EBS volume in a zone without nodes of the pool, Immediate binding", conflict, []corev1.PersistentVolumeClaim{claim},
			[]corev1.PersistentVolume{pv("pvc-e2a7c4f1", "gp3-analytics", affinity("topology.kubernetes.io/zone", "us-east-1c"), nil)}, nodes,
			[]string{"zone us-east-1c", "node-pool=analytics", "us-east-1a, us-east-1b only", "volumeBindingMode: Immediate", "gp3-analytics"}},
		{"the volume's zone label, no claim read", "0/3 nodes are available: 1 node(s) had no available volume zone, 2 node(s) didn't match Pod's node affinity/selector.", nil,
			[]corev1.PersistentVolume{pv("pvc-9f1c", "pd-ssd", nil, map[string]string{"topology.kubernetes.io/zone": "europe-west1-c"})}, gkeNodes,
			[]string{"zone europe-west1-c", "europe-west1-b only", "waits for the first consumer"}},
		{"CSI topology key", conflict, []corev1.PersistentVolumeClaim{claim},
			[]corev1.PersistentVolume{pv("pvc-e2a7c4f1", "gp3-analytics", affinity("topology.ebs.csi.aws.com/zone", "us-east-1c"), nil)}, nodes,
			[]string{"zone us-east-1c", "Immediate"}},
		{"a volume where the nodes are", conflict, []corev1.PersistentVolumeClaim{claim},
			[]corev1.PersistentVolume{pv("pvc-e2a7c4f1", "gp3-analytics", affinity("topology.kubernetes.io/zone", "us-east-1a"), nil)}, nodes,
			[]string{"zone us-east-1a"}},
		{"another scheduling failure", "0/9 nodes are available: 9 Insufficient memory.", []corev1.PersistentVolumeClaim{claim},
			[]corev1.PersistentVolume{pv("pvc-e2a7c4f1", "gp3-analytics", affinity("topology.kubernetes.io/zone", "us-east-1c"), nil)}, nodes, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Finding{Kind: KindUnschedulable, Subject: "clickhouse", Object: "pod analytics/clickhouse-3", Namespace: "analytics"}
			f.setFact("message", tc.msg)
			fs := []Finding{f}
			ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{pod}, Nodes: tc.nodes, Claims: tc.claims, Volumes: tc.pvs, StorageClasses: classes}}
			explainVolumeZone(ev, fs)
			h := &Hypothesis{Kind: KindUnschedulable, Subject: "clickhouse", Primary: []*Finding{&fs[0]}}
			d := describe(h, Scope{})
			if tc.want == nil {
				if strings.Contains(d, "Their volume") {
					t.Errorf("a volume zone named: %s", d)
				}
				return
			}
			wantDescribed(t, h, Scope{}, tc.want...)
			if strings.Contains(tc.name, "where the nodes are") == strings.Contains(d, "no node the pods may run on") {
				t.Errorf("conflict stated wrongly: %s", d)
			}
		})
	}
}
