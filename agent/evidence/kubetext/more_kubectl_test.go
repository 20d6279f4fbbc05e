package kubetext_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The second set of goldens covers rollout history and the kinds of
// access and disruption: network policies, pod disruption budgets,
// service accounts, roles and role bindings, printed by real kubectl from
// testdata/cluster-more.

const moreFixtures = "testdata/cluster-more"

var moreCommands = []string{
	"kubectl rollout history deployment/ledger -n pay",
	"kubectl rollout history deploy ledger -n pay --revision=2",
	"kubectl get rs -n pay -o wide",
	"kubectl describe networkpolicy -n pay",
	"kubectl get netpol -n pay",
	"kubectl describe pdb ledger -n pay",
	"kubectl get pdb -n pay",
	"kubectl describe sa ledger -n pay",
	"kubectl get sa -n pay",
	"kubectl describe role ledger-reader -n pay",
	"kubectl describe rolebinding ledger-reader -n pay",
	"kubectl get role,rolebinding -n pay -o wide",
	"kubectl describe endpoints ledger -n pay",
	"kubectl describe namespace pay",
	"kubectl describe sc fast-ssd",
	"kubectl auth can-i get secrets/ledger-db -n pay --as=system:serviceaccount:pay:ledger",
	"kubectl auth can-i list secrets -n pay --as=system:serviceaccount:pay:ledger",
	"kubectl auth can-i watch configmaps -n pay --as system:serviceaccount:pay:ledger",
}

func init() {
	// kubectl auth can-i exits 1 when the answer is no
	failingCommands["kubectl auth can-i list secrets -n pay --as=system:serviceaccount:pay:ledger"] = true
}

var moreRequired = map[string][]string{
	"NetworkPolicy/ledger-egress": {".spec.podSelector.matchLabels.app", ".spec.policyTypes[Egress]", ".spec.ingress[0].ports[0].port",
		".spec.ingress[0].ports[0].protocol", ".spec.ingress[0].from[0].namespaceSelector.matchLabels.kubernetes.io/metadata.name",
		".spec.ingress[0].from[0].podSelector.matchLabels.app", ".spec.egress[0].ports[0].port", ".spec.egress[0].to[0].podSelector.matchLabels.app",
		".spec.egress[1].to[0].ipBlock.cidr", ".spec.egress[1].to[0].ipBlock.except[10.0.5.0/24]"},
	"NetworkPolicy/default-deny":  {".spec.policyTypes[Ingress]"},
	"PodDisruptionBudget/ledger":  {".spec.minAvailable", ".spec.selector.matchLabels.app", ".status.disruptionsAllowed", ".status.expectedPods", ".status.currentHealthy"},
	"ServiceAccount/ledger":       {".imagePullSecrets[name=ghcr-pull]", ".metadata.annotations.eks.amazonaws.com/role-arn"},
	"Role/ledger-reader":          {".rules[0].resources[configmaps]", ".rules[0].verbs[watch]", ".rules[1].resourceNames[ledger-db]", ".rules[1].verbs[get]"},
	"RoleBinding/ledger-reader":   {".roleRef.name", ".roleRef.kind", ".subjects[name=ledger].namespace", ".subjects[name=ledger].kind"},
	"ReplicaSet/ledger-5b6c7d8f9": {".metadata.annotations.deployment.kubernetes.io/revision", ".metadata.annotations.kubernetes.io/change-cause", ".metadata.ownerReferences[name=ledger].kind", ".metadata.creationTimestamp"},
	"Endpoints/ledger":            {".subsets[0].addresses[ip=10.244.3.7]", ".subsets[0].notReadyAddresses[ip=10.244.4.9]", ".subsets[0].ports[name=http].port"},
	"Namespace/pay":               {".status.phase"},
	"StorageClass/fast-ssd":       {".provisioner", ".reclaimPolicy", ".volumeBindingMode", ".allowVolumeExpansion", ".parameters.type", ".metadata.annotations.storageclass.kubernetes.io/is-default-class"},
	"ReplicaSet/ledger-7f9c8d6b5": {".metadata.ownerReferences[name=ledger].kind", ".spec.template.spec.containers[name=app].image"},
}

// checkMore parses a transcript of the cluster-more fixtures: every field
// read equals the source object's, the required ones are read, and the
// rollout history and the service account's missing secret are read.
func checkMore(t *testing.T, text []byte, capturedAt time.Time) {
	t.Helper()
	s, res := parseAgainst(t, moreFixtures, text, capturedAt)
	seen := checkObjectsSound(t, res.Objects, s.Objects, capturedAt, func(what string, got map[string]any) {
		fg := map[string]any{}
		flatten("", got, fg)
		for _, r := range moreRequired[what] {
			found := false
			for p := range fg {
				found = found || strings.HasPrefix(p, r)
			}
			if !found {
				t.Errorf("%s: %s not read", what, r)
			}
		}
	})
	for what := range moreRequired {
		if !seen[what] {
			t.Errorf("%s: not read", what)
		}
	}
	if len(res.Histories) != 2 || len(res.Histories[0].Revisions) != 3 ||
		res.Histories[0].Revisions[1].ChangeCause != "helm upgrade ledger charts/ledger --set image.tag=1.9.1" ||
		res.Histories[1].Revisions[0].PodTemplateHash != "5b6c7d8f9" || res.Histories[1].Revisions[0].Images["app"] != "registry.example.com/pay/ledger:1.9.1" {
		t.Errorf("histories %+v", res.Histories)
	}
	var perms []string
	for _, p := range res.Permissions {
		perms = append(perms, fmt.Sprintf("%s %s %s/%s in %s: %v", p.As, p.Verb, p.Resource, p.Name, p.Namespace, p.Allowed))
	}
	if got, want := strings.Join(perms, "\n"), "system:serviceaccount:pay:ledger get secrets/ledger-db in pay: true\n"+
		"system:serviceaccount:pay:ledger list secrets/ in pay: false\nsystem:serviceaccount:pay:ledger watch configmaps/ in pay: true"; got != want {
		t.Errorf("permissions:\n%s\nwant\n%s", got, want)
	}
	if len(res.Absent) != 1 || res.Absent[0].Kind != "Secret" || res.Absent[0].Name != "ghcr-pull" || res.Absent[0].Namespace != "pay" {
		t.Errorf("absent %+v: want the pull secret kubectl marked (not found)", res.Absent)
	}
}

// TestMoreGoldens parses the committed goldens of this set, and
// regenerates them with -update.
func TestMoreGoldens(t *testing.T) {
	updateGolden(t, "transcripts-more", moreFixtures, moreCommands)
	checkGoldens(t, "transcripts-more", 2, checkMore)
}

// TestKubectlMatchesMoreGoldens runs the commands with the kubectl
// installed: a change of kubectl's output shows here.
func TestKubectlMatchesMoreGoldens(t *testing.T) {
	matchKubectl(t, kubectlPath(t), moreFixtures, moreCommands, checkMore)
}
