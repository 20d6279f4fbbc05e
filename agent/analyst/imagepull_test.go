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

// TestPullReasonFromEvent checks that the registry's answer is read from
// whichever finding holds it: a container's state often says only
// "Back-off pulling image" while its event quotes the registry.
func TestPullReasonFromEvent(t *testing.T) {
	const image = "acme.azurecr.io/partners/partner-portal:4.2.0"
	state := &Finding{Kind: KindImagePull, Subject: "partner-portal", Source: SrcKubernetes,
		Facts: map[string]string{"image": image, "message": `Back-off pulling image "` + image + `"`}}
	event := &Finding{Kind: KindImagePull, Subject: "partner-portal", Source: SrcEvents,
		Facts: map[string]string{"image": image, "message": `Failed to pull image "` + image + `": failed to pull and unpack image "` + image + `": failed to resolve reference "` + image + `": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://acme.azurecr.io/oauth2/token?scope=repository%3Apartners%2Fpartner-portal%3Apull&service=acme.azurecr.io: 401 Unauthorized`}}
	h := &Hypothesis{Kind: KindImagePull, Subject: "partner-portal", Primary: []*Finding{state, event}}
	if got := pullProblem(pullMessage(h)); got != pullNoCredentials {
		t.Fatalf("pull problem %q, want %q", got, pullNoCredentials)
	}
	wantDescribed(t, h, Scope{}, "unauthorized", "Failed to pull image", image)
	backOff := &Hypothesis{Kind: KindImagePull, Subject: "partner-portal", Primary: []*Finding{state}}
	if got := pullMessage(backOff); got != state.Facts["message"] || pullProblem(got) != "" {
		t.Errorf("only a back-off: message %q", got)
	}
}
