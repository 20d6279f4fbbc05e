package analyst

import (
	"strings"
	"testing"
	"time"

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
		{`Failed to pull image "acme.azurecr.io/billing/api:3.1": rpc error: code = NotFound desc = failed to pull and unpack image "acme.azurecr.io/billing/api:3.1": no match for platform in manifest: not found`, pullNoPlatform},
		{`Failed to pull image "mcr.microsoft.com/dotnet/framework/aspnet:4.8": rpc error: code = Unknown desc = no matching manifest for linux/arm64/v8 in the manifest list entries`, pullNoPlatform},
		{`Failed to pull image "quay.io/acme/agent:2.0": rpc error: code = Unknown desc = choosing image instance: no image found in image index for architecture "arm64", variant "v8", OS "linux"`, pullNoPlatform},
		{`Failed to pull image "acme/web:1.0": rpc error: code = Unknown desc = image operating system "linux" cannot be used on this platform`, pullNoPlatform},
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

// TestPullRateLimited reads a registry's pull rate limit from the
// kubelet's messages as containerd, CRI-O and Docker relay it, names the
// registry from the image reference, and says what to do: credentials or
// a mirror, not a fix of the image reference.
func TestPullRateLimited(t *testing.T) {
	cases := []struct {
		name, image, msg string
		want             []string // words of the description; nil: not a rate limit
	}{
		{"containerd, Docker Hub, anonymous", "alpine:3.19",
			`Failed to pull image "alpine:3.19": failed to pull and unpack image "docker.io/library/alpine:3.19": failed to resolve reference "docker.io/library/alpine:3.19": unexpected status from HEAD request to https://registry-1.docker.io/v2/library/alpine/manifests/3.19: 429 Too Many Requests - Server message: toomanyrequests: You have reached your unauthenticated pull rate limit. https://www.docker.com/increase-rate-limit`,
			[]string{"Docker Hub (docker.io) refuses the pulls with its pull rate limit (429 Too Many Requests, toomanyrequests)", "pull anonymously"}},
		{"CRI-O, Docker Hub user image", "bitnami/redis:7.2",
			`rpc error: code = Unknown desc = reading manifest 7.2 in docker.io/bitnami/redis: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit`,
			[]string{"Docker Hub (docker.io)", "pull rate limit", "toomanyrequests"}},
		{"containers/image, Quay", "quay.io/prometheus/node-exporter:v1.8.1",
			`Failed to pull image "quay.io/prometheus/node-exporter:v1.8.1": initializing source docker://quay.io/prometheus/node-exporter:v1.8.1: reading manifest v1.8.1 in quay.io/prometheus/node-exporter: received unexpected HTTP status: 429 Too Many Requests`,
			[]string{"Quay (quay.io) refuses the pulls with its pull rate limit"}},
		{"ECR Public", "public.ecr.aws/nginx/nginx:1.25",
			`Failed to pull image "public.ecr.aws/nginx/nginx:1.25": failed to pull and unpack image "public.ecr.aws/nginx/nginx:1.25": failed to copy: httpReadSeeker: failed open: unexpected status code https://public.ecr.aws/v2/nginx/nginx/blobs/sha256:4291ab7c: 429 Too Many Requests - Server message: toomanyrequests: Rate exceeded`,
			[]string{"Amazon ECR Public (public.ecr.aws)", "429"}},
		{"a digest with 429 in it is no rate limit", "ghcr.io/acme/api:1.2",
			`Failed to pull image "ghcr.io/acme/api:1.2": rpc error: code = NotFound desc = failed to pull and unpack image "ghcr.io/acme/api@sha256:429aa01b": not found`,
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rate := pullProblem(c.msg) == pullRateLimited
			if rate != (c.want != nil) {
				t.Fatalf("pullProblem = %q", pullProblem(c.msg))
			}
			if !rate {
				return
			}
			f := &Finding{Kind: KindImagePull, Subject: "worker", Facts: map[string]string{"image": c.image, "message": c.msg}}
			h := &Hypothesis{Kind: KindImagePull, Subject: "worker", Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := explain(t, c.name, imagePull, h, nil)
			if len(recs) == 0 || !strings.Contains(recs[0].Action, "credentials") || !strings.Contains(recs[0].Action, "mirror") || strings.Contains(recs[0].Action, "tag exists") {
				t.Errorf("first action: %+v", recs)
			}
		})
	}
}

// TestRegistryName names the registry of an image reference.
func TestRegistryName(t *testing.T) {
	for image, want := range map[string]string{
		"busybox:1.36":                                       "Docker Hub (docker.io)",
		"docker.io/library/nginx:1.27":                       "Docker Hub (docker.io)",
		"grafana/grafana:11.1.0":                             "Docker Hub (docker.io)",
		"public.ecr.aws/nginx/nginx:1.25":                    "Amazon ECR Public (public.ecr.aws)",
		"640213887150.dkr.ecr.eu-west-1.amazonaws.com/api:5": "Amazon ECR (640213887150.dkr.ecr.eu-west-1.amazonaws.com)",
		"europe-docker.pkg.dev/p/r/img:1":                    "Google Artifact Registry (europe-docker.pkg.dev)",
		"acme.azurecr.io/billing/api:2":                      "Azure Container Registry (acme.azurecr.io)",
		"localhost:5000/tools/jq:1.7":                        "localhost:5000",
	} {
		if got := registryName(image, ""); got != want {
			t.Errorf("registryName(%q) = %q, want %q", image, got, want)
		}
	}
}

// TestPullOtherImages: the images of a pod's other containers, from other
// registries, are named as not failing (a question that suspects the
// application's registry).
func TestPullOtherImages(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "wait", Image: "busybox:1.36"}},
		Containers:     []corev1.Container{{Name: "app", Image: "640213887150.dkr.ecr.us-east-2.amazonaws.com/media/worker:5"}, {Name: "proxy", Image: "envoyproxy/envoy:v1.30"}},
	}}
	got := otherRegistries(p, "busybox:1.36")
	if got != "640213887150.dkr.ecr.us-east-2.amazonaws.com/media/worker:5 from Amazon ECR (640213887150.dkr.ecr.us-east-2.amazonaws.com)" {
		t.Errorf("other images %q", got)
	}
}

// TestPullNodes: pulls that fail only on nodes newer than those where the
// workload's pods run are said to fail there (the older nodes have the
// image); failures on a node where its pods also run say nothing of
// nodes.
func TestPullNodes(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	session := func(failNode string) string {
		return `$ kubectl get pods -n ml -o wide
NAME                          READY   STATUS             RESTARTS   AGE   IP           NODE      NOMINATED NODE   READINESS GATES
embedder-6c8d9f7b4-2kq9x      1/1     Running            0          6d    10.1.0.11    gke-a-1   <none>           <none>
embedder-6c8d9f7b4-8fj2w      0/1     ImagePullBackOff   0          20m   10.1.3.7     ` + failNode + `   <none>           <none>
embedder-6c8d9f7b4-x7c4m      0/1     ErrImagePull       0          20m   10.1.3.9     ` + failNode + `   <none>           <none>
$ kubectl get nodes
NAME      STATUS   ROLES    AGE   VERSION
gke-a-1   Ready    <none>   30d   v1.30.5-gke.1014001
gke-a-9   Ready    <none>   22m   v1.30.5-gke.1014001
$ kubectl get events -n ml
LAST SEEN   TYPE      REASON   OBJECT                         MESSAGE
2m          Warning   Failed   pod/embedder-6c8d9f7b4-8fj2w   Failed to pull image "huggingface/text-embeddings-inference:1.5": rpc error: code = Unknown desc = reading manifest 1.5 in docker.io/huggingface/text-embeddings-inference: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit
`
	}
	for _, c := range []struct {
		node string
		want bool
	}{{"gke-a-9", true}, {"gke-a-1", false}} {
		res := investigateSession(t, now, session(c.node), "embedder pods stuck pulling", "embedder", "ml")
		d := res.RootCause.Description
		if !strings.Contains(d, "Docker Hub (docker.io) refuses the pulls with its pull rate limit") {
			t.Errorf("%s: not the rate limit: %s", c.node, d)
		}
		if got := strings.Contains(d, "the pods that cannot pull are all on 1 node gke-a-9"); got != c.want {
			t.Errorf("%s: nodes said %v, want %v: %s", c.node, got, c.want, d)
		}
	}
}

// TestPullPlatformNodes follows "no match for platform" to the nodes: the
// failing pods are all on nodes of another kubernetes.io/os or
// kubernetes.io/arch than the running ones, and the pod spec has no
// nodeSelector on it.
func TestPullPlatformNodes(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct{ name, nodes, msg, want string }{
		{"windows pool, containerd", `$ kubectl get nodes -L kubernetes.io/os
NAME        STATUS   ROLES    AGE   VERSION   OS
aks-lin-0   Ready    <none>   40d   v1.30.5   linux
akswin000   Ready    <none>   5h    v1.30.5   windows
`, `no match for platform in manifest: not found`, "labelled kubernetes.io/os=windows, while its running pods are on kubernetes.io/os=linux nodes"},
		{"arm64 pool, docker", `$ kubectl get nodes -L kubernetes.io/arch
NAME        STATUS   ROLES    AGE   VERSION   ARCH
aks-lin-0   Ready    <none>   40d   v1.30.5   amd64
akswin000   Ready    <none>   5h    v1.30.5   arm64
`, `no matching manifest for linux/arm64/v8 in the manifest list entries`, "labelled kubernetes.io/arch=arm64, while its running pods are on kubernetes.io/arch=amd64 nodes"},
		{"labels not read", `$ kubectl get nodes
NAME        STATUS   ROLES    AGE   VERSION
aks-lin-0   Ready    <none>   40d   v1.30.5
akswin000   Ready    <none>   5h    v1.30.5
`, `no match for platform in manifest: not found`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			session := `$ kubectl get pods -n web -o wide
NAME                   READY   STATUS             RESTARTS   AGE   IP          NODE        NOMINATED NODE   READINESS GATES
web-6c8d9f7b4-2kq9x    1/1     Running            0          6d    10.1.0.11   aks-lin-0   <none>           <none>
web-6c8d9f7b4-8fj2w    0/1     ImagePullBackOff   0          20m   10.1.3.7    akswin000   <none>           <none>
` + c.nodes + `$ kubectl get events -n web
LAST SEEN   TYPE      REASON   OBJECT                    MESSAGE
2m          Warning   Failed   pod/web-6c8d9f7b4-8fj2w   Failed to pull image "acme.azurecr.io/web:1.0": rpc error: code = NotFound desc = failed to pull and unpack image "acme.azurecr.io/web:1.0": ` + c.msg + `
`
			res := investigateSession(t, now, session, "web pods stuck pulling", "web", "web")
			d := res.RootCause.Description
			if !strings.Contains(d, "no variant for the node's platform") {
				t.Errorf("not the platform: %s", d)
			}
			checkClaim(t, d, c.want, "labelled")
		})
	}
}
