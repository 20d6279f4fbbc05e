package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPullProblem reads why a pull failed from the kubelet's messages as
// containerd and the kubelet print them.
func TestPullProblem(t *testing.T) {
	cases := []struct{ msg, want string }{
		{`Failed to pull image "registry.acme.dev/admin-portal:v2.31": rpc error: code = NotFound desc = failed to pull and unpack image "registry.acme.dev/admin-portal:v2.31": failed to resolve reference "registry.acme.dev/admin-portal:v2.31": registry.acme.dev/admin-portal:v2.31: not found`, pullNoTag},
		{`Failed to pull image "acme.azurecr.io/partners/partner-portal:4.2.0": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://acme.azurecr.io/oauth2/token: 401 Unauthorized`, pullNoCredentials},
		{`Failed to pull image "ghcr.io/acme/api:1.2": rpc error: code = Unknown desc = failed to resolve reference: dial tcp: lookup ghcr.io: no such host`, pullUnreachable},
		{`Back-off pulling image "busybox:1.36"`, ""},
	}
	for _, c := range cases {
		if got := pullProblem(c.msg); got != c.want {
			t.Errorf("pullProblem(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}

// TestPullSecretMissing checks that a pod naming an image pull secret
// that does not exist is followed to that secret: the pull goes without
// credentials, whatever the registry answers.
func TestPullSecretMissing(t *testing.T) {
	testEvents(t, imagePull, []eventCase{
		{"Pod", "shipping-rates-7c9d8b6f5-q2w8x", "FailedToRetrieveImagePullSecret", corev1.EventTypeWarning,
			`Unable to retrieve some image pull secrets (ghcr-creds); attempting to pull the image may not succeed.`,
			KindImagePull, []string{"image pull secret ghcr-creds", "does not exist"}},
		{"Pod", "shipping-rates-7c9d8b6f5-q2w8x", "Pulling", corev1.EventTypeNormal, `Pulling image "ghcr.io/haulmark/shipping-rates:1.0.0"`, "", nil},
	})
}
