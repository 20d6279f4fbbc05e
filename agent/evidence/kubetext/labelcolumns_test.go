package kubetext_test

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// kubectl get -L key1,key2 adds one column per label key, headed by the
// key's last path segment in upper case; a node without the label has an
// empty cell. The keys the table showed are kept, so that an absent label
// is known to be absent.
func TestLabelColumns(t *testing.T) {
	ref := time.Date(2026, 11, 25, 11, 20, 0, 0, time.UTC)
	tests := []struct {
		name, text string
		node       string
		want       map[string]string
		shown      string
	}{
		{"two keys, one empty everywhere", `$ kubectl get nodes -L lifecycle,karpenter.sh/capacity-type
NAME                                         STATUS   ROLES    AGE   VERSION               LIFECYCLE   CAPACITY-TYPE
ip-10-12-40-118.us-east-2.compute.internal   Ready    <none>   13h   v1.30.4-eks-a737599               spot
ip-10-12-50-61.us-east-2.compute.internal    Ready    <none>   27d   v1.30.4-eks-a737599               on-demand
`, "ip-10-12-40-118.us-east-2.compute.internal", map[string]string{"karpenter.sh/capacity-type": "spot"}, "lifecycle,karpenter.sh/capacity-type"},
		{"repeated -L and --label-columns=", `$ kubectl get no -L topology.kubernetes.io/zone --label-columns=node.kubernetes.io/instance-type -L pool
NAME       STATUS   ROLES           AGE   VERSION   ZONE         INSTANCE-TYPE   POOL
worker-1   Ready    <none>          40d   v1.29.6   eu-west-1a   m6i.xlarge      general
cp-1       Ready    control-plane   90d   v1.29.6   eu-west-1b   m6i.large
`, "cp-1", map[string]string{"topology.kubernetes.io/zone": "eu-west-1b", "node.kubernetes.io/instance-type": "m6i.large", "node-role.kubernetes.io/control-plane": ""},
			"topology.kubernetes.io/zone,node.kubernetes.io/instance-type,pool"},
		{"without -L nothing is claimed", `$ kubectl get nodes
NAME       STATUS   ROLES    AGE   VERSION
worker-1   Ready    <none>   40d   v1.29.6
`, "worker-1", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := object[*corev1.Node](t, kubetext.Parse([]byte(tc.text), ref), "", tc.node)
			if !maps.Equal(n.Labels, tc.want) {
				t.Errorf("labels %v, want %v", n.Labels, tc.want)
			}
			if got := n.Annotations[kubetext.LabelColumnsAnnotation]; got != tc.shown {
				t.Errorf("label columns %q, want %q", got, tc.shown)
			}
		})
	}
}
