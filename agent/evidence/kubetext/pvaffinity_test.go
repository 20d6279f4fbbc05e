package kubetext

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// kubectl describe pv prints a volume's required node affinity one
// requirement a line under "Term N:": a zonal EBS volume, a local volume
// pinned to its host with two requirements, and a volume with none.
func TestDescribePVNodeAffinity(t *testing.T) {
	in := `$ kubectl describe pv pvc-e2a7c4f1 local-pv-7d2c nfs-share
Name:              pvc-e2a7c4f1
Labels:            <none>
StorageClass:      gp3-analytics
Status:            Bound
Claim:             analytics/data-clickhouse-3
Node Affinity:     
  Required Terms:  
    Term 0:        topology.kubernetes.io/zone in [us-east-1c]
Message:           
Source:
    Type:              CSI (a Container Storage Interface (CSI) volume source)
    Driver:            ebs.csi.aws.com
Events:                <none>


Name:              local-pv-7d2c
Labels:            <none>
StorageClass:      local-storage
Status:            Available
Claim:             
Node Affinity:     
  Required Terms:  
    Term 0:        kubernetes.io/hostname in [worker-3, worker-4]
                   node.kubernetes.io/instance-type notin [t3.small]
Message:           
Source:
    Type:  LocalVolume (a persistent volume backed by local storage on a node)
    Path:  /mnt/disks/ssd1
Events:    <none>


Name:            nfs-share
Labels:          <none>
StorageClass:    
Status:          Bound
Claim:           shop/uploads
Node Affinity:   <none>
Message:         
Source:
    Type:      NFS (an NFS mount that lasts the lifetime of a pod)
    Server:    10.0.0.9
    Path:      /exports/uploads
Events:        <none>
`
	r := Parse([]byte(in), time.Date(2026, 11, 22, 16, 10, 0, 0, time.UTC))
	got := map[string]*corev1.VolumeNodeAffinity{}
	for _, o := range r.Objects {
		if v, ok := o.(*corev1.PersistentVolume); ok {
			got[v.Name] = v.Spec.NodeAffinity
		}
	}
	term := func(rs ...corev1.NodeSelectorRequirement) *corev1.VolumeNodeAffinity {
		return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: rs}}}}
	}
	want := map[string]*corev1.VolumeNodeAffinity{
		"pvc-e2a7c4f1":  term(corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1c"}}),
		"local-pv-7d2c": term(corev1.NodeSelectorRequirement{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"worker-3", "worker-4"}}, corev1.NodeSelectorRequirement{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"t3.small"}}),
		"nfs-share":     nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node affinity (-want +got):\n%s", diff)
	}
}
