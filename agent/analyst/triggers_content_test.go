package analyst

import (
	"testing"
	"time"
)

// TestContentTriggers: an image pull failure, a claim that cannot get a
// volume and a quota that refuses pods are triggered by a change whose
// text names what their chain reached (the image's registry, repository
// and tag; the claim or its StorageClass; the ResourceQuota), whoever
// filed it, or by a change of their kind to the subject; a flag or an
// unrelated setting of the subject near the onset is a coincidence.
func TestContentTriggers(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 13, 12, 0, 0, time.UTC)
	change := func(kind Kind, subject string, before time.Duration, desc string) *Finding {
		return &Finding{Kind: kind, Subject: subject, Time: t0.Add(-before), Facts: map[string]string{"description": desc}}
	}
	hyp := func(kind Kind, subject string, facts map[string]string) *Hypothesis {
		return &Hypothesis{Kind: kind, Subject: subject, Onset: t0, Primary: []*Finding{{Kind: kind, Subject: subject, Time: t0, Facts: facts}}}
	}
	pull := hyp(KindImagePull, "orders-api", map[string]string{"image": "harbor.corp.example:8443/shop/orders-api:2.14.3"})
	docker := hyp(KindImagePull, "web", map[string]string{"image": "nginx:latest"})
	claim := hyp(KindVolumeProvision, "ledger-db", map[string]string{"claim": "data-ledger-db-0", "storage_class": "gp3-encrypted"})
	quota := hyp(KindQuota, "catalog-web", map[string]string{"quota": "compute"})
	cases := []struct {
		name    string
		h       *Hypothesis
		changes []*Finding
		want    bool
	}{
		{"a registry moved, filed under the platform", pull, []*Finding{change(KindInfraChange, "platform", 40*time.Minute, "decommission harbor.corp.example:8443, images now on registry.corp.example")}, true},
		{"a tag named by another team's cleanup", pull, []*Finding{change(KindConfigChange, "ci", 20*time.Minute, "retention policy deleted tags older than 2.15 (removed 2.14.3)")}, true},
		{"a deploy of the subject", pull, []*Finding{change(KindDeploy, "orders-api", 5*time.Minute, "orders-api 2.14.3")}, true},
		{"a flag of the subject", pull, []*Finding{change(KindFeatureFlag, "orders-api", 5*time.Minute, "enable new_checkout for 10%")}, false},
		{"the subject moved to a namespace without the pull secret", pull, []*Finding{change(KindInfraChange, "orders-api", 30*time.Minute, "shop namespace split: orders-api moved to namespace shop-v2")}, true},
		{"a setting of the subject that says nothing of pulls", pull, []*Finding{change(KindConfigChange, "orders-api", 5*time.Minute, "ORDERS_PAGE_SIZE 50 -> 100")}, false},
		{"a library image's name alone is no registry", docker, []*Finding{change(KindInfraChange, "platform", 10*time.Minute, "nginx ingress upgraded")}, false},
		{"a StorageClass renamed", claim, []*Finding{change(KindInfraChange, "*", 30*time.Minute, "storage: gp3-encrypted replaced by gp3-kms (new KMS key)")}, true},
		{"a flag of the claim's workload", claim, []*Finding{change(KindFeatureFlag, "ledger-db", 5*time.Minute, "enable audit trail")}, false},
		{"the quota cut, named with its kind", quota, []*Finding{change(KindConfigChange, "platform", 50*time.Minute, "ResourceQuota compute in catalog: requests.cpu 16 -> 12")}, true},
		{"the quota's name without the word quota", quota, []*Finding{change(KindInfraChange, "platform", 50*time.Minute, "new compute nodes for batch")}, false},
		{"more replicas of the subject", quota, []*Finding{change(KindConfigChange, "catalog-web", 10*time.Minute, "HPA maxReplicas 8 -> 16")}, true},
		{"a flag of the subject", quota, []*Finding{change(KindFeatureFlag, "catalog-web", 10*time.Minute, "dark mode on")}, false},
	}
	for _, c := range cases {
		got := nearestChange(c.h, c.changes)
		if (got != nil) != c.want {
			t.Errorf("%s: trigger %v, want %v", c.name, got != nil, c.want)
		}
		if !c.want && !coincidentChange(c.h, c.changes[0]) {
			t.Errorf("%s: not a coincidence", c.name)
		}
	}
}
