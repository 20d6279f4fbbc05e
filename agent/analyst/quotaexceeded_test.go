package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestQuotaExceeded(t *testing.T) {
	testEvents(t, quotaExceeded, []eventCase{
		{"ReplicaSet", "api-6b7c9d8f4", "FailedCreate", corev1.EventTypeWarning,
			`Error creating: pods "api-6b7c9d8f4-x2k9q" is forbidden: exceeded quota: compute-quota, requested: limits.cpu=2, used: limits.cpu=8, limited: limits.cpu=8`,
			KindQuota, []string{"api cannot create pods: resource quota exceeded", "compute-quota"}},
		{"ReplicaSet", "api-6b7c9d8f4", "FailedCreate", corev1.EventTypeWarning,
			`Error creating: pods "api-6b7c9d8f4-x2k9q" is forbidden: error looking up service account shop/api: serviceaccount "api" not found`, "", nil},
		{"ReplicaSet", "api-6b7c9d8f4", "SuccessfulCreate", corev1.EventTypeNormal, "Created pod: api-6b7c9d8f4-x2k9q", "", nil},
	})
}
