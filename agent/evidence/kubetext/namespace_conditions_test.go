package kubetext

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestDescribeNamespaceConditions reads the conditions kubectl prints for
// a Terminating namespace: what holds its deletion, since when and why; a
// namespace without conditions keeps none.
func TestDescribeNamespaceConditions(t *testing.T) {
	in := `$ kubectl describe ns pr-4821
Name:         pr-4821
Labels:       kubernetes.io/metadata.name=pr-4821
Annotations:  <none>
Status:       Terminating
Conditions:
  Type                                         Status  LastTransitionTime               Reason                Message
  ----                                         ------  ------------------               ------                -------
  NamespaceDeletionDiscoveryFailure            True    Tue, 24 Nov 2026 19:02:41 +0000  DiscoveryFailed       Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1
  NamespaceDeletionGroupVersionParsingFailure  False   Tue, 24 Nov 2026 19:02:41 +0000  ParsedGroupVersions   All legacy kube types successfully parsed
  NamespaceFinalizersRemaining                 False   Tue, 24 Nov 2026 19:02:41 +0000  ContentHasNoFinalizers  All content-preserving finalizers finished

No resource quota.

No LimitRange resource.
$ kubectl describe ns staging
Name:         staging
Labels:       <none>
Annotations:  <none>
Status:       Active

No resource quota.
`
	res := Parse([]byte(in), time.Date(2026, 11, 25, 11, 30, 0, 0, time.UTC))
	got := map[string]*corev1.Namespace{}
	for _, o := range res.Objects {
		if ns, ok := o.(*corev1.Namespace); ok {
			got[ns.Name] = ns
		}
	}
	ns := got["pr-4821"]
	if ns == nil || ns.Status.Phase != corev1.NamespaceTerminating || len(ns.Status.Conditions) != 3 {
		t.Fatalf("pr-4821 = %+v", ns)
	}
	c := ns.Status.Conditions[0]
	if c.Type != corev1.NamespaceDeletionDiscoveryFailure || c.Status != corev1.ConditionTrue || c.Reason != "DiscoveryFailed" ||
		c.Message != "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1" ||
		!c.LastTransitionTime.Time.Equal(time.Date(2026, 11, 24, 19, 2, 41, 0, time.UTC)) {
		t.Errorf("condition = %+v", c)
	}
	if c := ns.Status.Conditions[2]; c.Reason != "ContentHasNoFinalizers" || c.Status != corev1.ConditionFalse {
		t.Errorf("last condition = %+v", c)
	}
	if s := got["staging"]; s == nil || s.Status.Phase != corev1.NamespaceActive || len(s.Status.Conditions) != 0 {
		t.Errorf("staging = %+v", s)
	}
}
