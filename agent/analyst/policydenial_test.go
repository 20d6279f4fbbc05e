package analyst

import "testing"

func TestReadPolicyDenial(t *testing.T) {
	cases := []struct {
		name, msg                    string
		ok                           bool
		webhook, policy, rule, words string
	}{
		{"kyverno", "Error creating: admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Pod/shop/web-6d9f-abcde was blocked due to the following policies \n\nrequire-labels:\n  check-for-labels: 'validation error: label ''app.kubernetes.io/name'' is\n    required. rule check-for-labels failed at path /metadata/labels/app.kubernetes.io/name/'",
			true, "validate.kyverno.svc-fail", "require-labels", "check-for-labels",
			"an admission webhook (validate.kyverno.svc-fail) denies the pods: policy require-labels, rule check-for-labels: validation error: label 'app.kubernetes.io/name' is required. rule check-for-labels failed at path /metadata/labels/app.kubernetes.io/name/"},
		{"gatekeeper", `Error creating: admission webhook "validation.gatekeeper.sh" denied the request: [ns-must-have-owner] you must provide labels: {"owner"}`,
			true, "validation.gatekeeper.sh", "ns-must-have-owner", "",
			`an admission webhook (validation.gatekeeper.sh) denies the pods: policy ns-must-have-owner: you must provide labels: {"owner"}`},
		{"other webhook", `Error creating: admission webhook "pod-policy.example.com" denied the request: image registry not allowed`,
			true, "pod-policy.example.com", "", "", "an admission webhook (pod-policy.example.com) denies the pods: image registry not allowed"},
		{"one-line listing", `Error creating: admission webhook "validate.kyverno.svc-fail" denied the request:`,
			false, "validate.kyverno.svc-fail", "", "", "an admission webhook (validate.kyverno.svc-fail) denies the pods"},
		{"quota", `Error creating: pods "x" is forbidden: exceeded quota: compute`, false, "", "", "", ""},
	}
	for _, c := range cases {
		d, ok := readPolicyDenial(c.msg)
		if ok != c.ok || d.Webhook != c.webhook || d.Policy != c.policy || d.Rule != c.rule || c.words != "" && d.words() != c.words {
			t.Errorf("%s: got %v %+v %q", c.name, ok, d, d.words())
		}
	}
}

func TestPolicyChangeFits(t *testing.T) {
	mk := func(kind Kind, desc string) *Finding {
		return &Finding{Kind: kind, Facts: map[string]string{"description": desc}}
	}
	cases := []struct {
		c    *Finding
		want bool
	}{
		{mk(KindConfigChange, "ClusterPolicy require-labels: validationFailureAction Audit -> Enforce"), true},
		{mk(KindInfraChange, "gatekeeper constraint K8sRequiredLabels added"), true},
		{mk(KindConfigChange, "bump require-labels to v2"), true},
		{mk(KindConfigChange, "HPA minReplicas 2 -> 4 for morning wave"), false},
		{mk(KindDeploy, "web 1.4.0"), false},
	}
	for _, c := range cases {
		if got := policyChangeFits("require-labels", c.c); got != c.want {
			t.Errorf("%q: got %v", c.c.fact("description"), got)
		}
	}
}
