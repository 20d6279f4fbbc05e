package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestRootVolumeCut names the change that cut a node's root volume behind
// its disk pressure, in the forms changes write it (a Terraform launch
// template's volume_size, a GKE node pool's diskSizeGb, a Karpenter
// EC2NodeClass's volumeSize), when the node's ephemeral-storage capacity
// is the new size; a node whose disk is the old size, or a change after
// the node was created, is none.
func TestRootVolumeCut(t *testing.T) {
	node := func(name, capacity string, created time.Time) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(capacity)}}}
	}
	pressure := func() Finding {
		f := Finding{Kind: KindNodePressure, Subject: "node-new", Weight: 0.9}
		f.setFact("resource", "disk")
		return f
	}
	cut := now.Add(-20 * time.Hour)
	created := now.Add(-3 * time.Hour)
	cases := []struct {
		name string
		text string
		cap  string
		want []string
	}{
		{"terraform launch template", "terraform apply: aws_launch_template.workers new version 9, block_device_mappings /dev/xvda volume_size 100 -> 30", "31444972Ki",
			[]string{"cut from 100 GiB to 30 GiB", "volume_size 100 -> 30", "older nodes keep 98 GiB"}},
		{"gke node pool", `gcloud container node-pools create pool-c --disk-size=50 (diskSizeGb: 200 => 50)`, "51290592Ki",
			[]string{"cut from 200 GiB to 50 GiB"}},
		{"karpenter node class", "EC2NodeClass default: blockDeviceMappings rootVolume 80Gi to 20Gi", "20959212Ki",
			[]string{"cut from 80 GiB to 20 GiB"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{Nodes: []corev1.Node{node("node-new", c.cap, created), node("node-old", "102845292Ki", now.Add(-900*time.Hour))}},
				Earlier: []evidence.Change{{Timestamp: cut, Service: "infra/nodes", Kind: "infra", Description: c.text}}, Window: win}
			f := pressure()
			rootVolumeCut(ev, &f)
			h := &Hypothesis{Kind: KindNodePressure, Subject: "node-new", Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "Restore the root volume size") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
	ch := []evidence.Change{{Timestamp: cut, Kind: "infra", Description: "launch template volume_size 100 -> 30"}}
	for name, ev := range map[string]*Gathered{
		"the old size":            {K8s: K8sEvidence{Nodes: []corev1.Node{node("node-new", "102845292Ki", created)}}, Earlier: ch},
		"a change after the node": {K8s: K8sEvidence{Nodes: []corev1.Node{node("node-new", "31444972Ki", cut.Add(-time.Hour))}}, Earlier: ch},
	} {
		f := pressure()
		rootVolumeCut(ev, &f)
		if f.fact("volume_cut") != "" {
			t.Errorf("%s: %+v", name, f.Facts)
		}
	}
}
