package analyst

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestSTSPartition: a StatefulSet whose partition leaves the lower
// ordinals on the old revision is named with the partition and the change
// that set it; one fully rolled (same revisions) or without a partition,
// or with OnDelete, is nothing.
func TestSTSPartition(t *testing.T) {
	const doc = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: orders-db
  namespace: orders
spec:
  replicas: 3
  serviceName: orders-db-hl
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      partition: %P
status:
  replicas: 3
  readyReplicas: 3
  currentReplicas: %C
  updatedReplicas: %U
  currentRevision: orders-db-6b9c
  updateRevision: %R
`
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	read := func(p, c, u, r string) appsv1.StatefulSet {
		var ss appsv1.StatefulSet
		y := strings.NewReplacer("%P", p, "%C", c, "%U", u, "%R", r).Replace(doc)
		if err := yaml.Unmarshal([]byte(y), &ss); err != nil {
			t.Fatal(err)
		}
		return ss
	}
	onDelete := read("1", "2", "1", "orders-db-7f1a")
	onDelete.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	cases := []struct {
		name string
		ss   appsv1.StatefulSet
		want bool
	}{
		{"held by partition", read("2", "2", "1", "orders-db-7f1a"), true},
		{"fully rolled, partition 0", read("0", "3", "3", "orders-db-6b9c"), false},
		{"partition kept but nothing pending", read("2", "3", "3", "orders-db-6b9c"), false},
		{"on delete", onDelete, false},
	}
	for _, tc := range cases {
		ev := &Gathered{K8s: K8sEvidence{StatefulSets: []appsv1.StatefulSet{tc.ss}},
			Window: Window{BaselineStart: now.Add(-6 * time.Hour), Start: now.Add(-time.Hour), End: now},
			Scope:  Scope{Service: "orders-db", Namespace: "orders"},
			Earlier: []evidence.Change{{Timestamp: now.Add(-300 * time.Hour), Service: "orders-db", Kind: "config",
				Description: "statefulset updateStrategy.rollingUpdate.partition: 2 to canary the exporter on orders-db-2"}},
			Changes: []evidence.Change{{Timestamp: now.Add(-40 * time.Minute), Service: "orders-db", Kind: "deploy", Description: "image postgres 16.3 -> 16.4"}}}
		fs := detectSTSPartition(ev, nil)
		if (len(fs) == 1) != tc.want {
			t.Fatalf("%s: findings %+v", tc.name, fs)
		}
		if !tc.want {
			continue
		}
		f := fs[0]
		if f.Weight < 0.9 || !f.Time.Equal(now.Add(-40*time.Minute)) || len(f.Evidence) < 3 {
			t.Errorf("%s: weight %.2f time %s evidence %q", tc.name, f.Weight, f.Time, f.Evidence)
		}
		h := &Hypothesis{Kind: KindSTSPartition, Subject: f.Subject, Primary: []*Finding{&f}}
		wantDescribed(t, h, Scope{}, "partition=2", "orders-db-0, orders-db-1 stay on the old revision", "ordinal >= 2 (orders-db-2)", "canary the exporter")
	}
}
