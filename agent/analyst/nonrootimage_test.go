package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestNonRootImage reads the kubelet's refusal of an image under
// runAsNonRoot, in the wordings of several kubelet versions, and the
// image's user from the tools people inspect images with.
func TestNonRootImage(t *testing.T) {
	events := []struct {
		msg  string
		want bool
		user string
	}{
		{`Error: container has runAsNonRoot and image will run as root (pod: "payments-7d9c6b5f48-q2x8k_payments(8a6f2d41-93c7-4b0e-a5d8-1e7c9f3b6a20)", container: worker)`, true, ""},
		{`Error: container has runAsNonRoot and image will run as root`, true, ""},
		{`Error: container has runAsNonRoot and image has non-numeric user (node), cannot verify user is non-root (pod: "web-5c8d_shop(1f2e)", container: web)`, true, "node"},
		{`Error: container's runAsUser breaks non-root policy (pod: "web-5c8d_shop(1f2e)", container: web)`, true, ""},
		{`Error: secret "payments-env" not found`, false, ""},
		{`Failed to pull image "python:3.12-slim": toomanyrequests`, false, ""},
	}
	for _, e := range events {
		ev := &corev1.Event{Reason: "Failed", Message: e.msg}
		_, ok := nonRootImage.event(ev)
		if ok != e.want {
			t.Errorf("event %q: claimed %v, want %v", e.msg, ok, e.want)
		}
		if _, pull := imagePull.event(ev); pull && e.want {
			t.Errorf("event %q also claimed as an image pull", e.msg)
		}
		if ok {
			f := &Finding{}
			nonRootImage.eventFacts(f, ev)
			if f.fact("image_user") != e.user {
				t.Errorf("event %q: image_user %q, want %q", e.msg, f.fact("image_user"), e.user)
			}
		}
	}

	cmds := []evidence.CommandOutput{
		{Run: `crane config europe-docker.pkg.dev/acme/payments/payments-worker:3.3.2 | jq '.config.User, .config.Entrypoint'`, Lines: []string{`"10001"`, `null`}},
		{Run: `crane config europe-docker.pkg.dev/acme/payments/payments-worker:3.4.0 | jq '.config.User, .config.Entrypoint'`, Lines: []string{`null`, `null`}},
		{Run: `docker inspect -f '{{.Config.User}}' ghcr.io/acme/web:2.0.1`, Lines: []string{`root`}},
		{Run: `docker inspect --format '{{.Config.User}}' ghcr.io/acme/web:1.9.0`, Lines: []string{``}},
		{Run: `skopeo inspect --config docker://registry.example.com/team/web:2.0.0`, Lines: []string{`{`, `  "config": {`, `    "User": "65532",`, `    "Env": ["PATH=/usr/bin"]`}},
		{Run: `crane config quay.io/other/unrelated:1.0 | jq .config.User`, Lines: []string{`null`}},
	}
	got := imageUsers(&Gathered{Commands: cmds}, "payments-worker")
	if len(got) != 2 || got[0].user != "user 10001" || got[1].user != "root (no USER)" || got[1].image != "payments-worker:3.4.0" {
		t.Errorf("crane: %+v", got)
	}
	got = imageUsers(&Gathered{Commands: cmds}, "web")
	if len(got) != 3 || got[0].user != "root" || got[1].user != "root (no USER)" || got[2].user != "user 65532" {
		t.Errorf("docker inspect and skopeo: %+v", got)
	}

	f := &Finding{Kind: KindNonRootImage, Subject: "payments-worker"}
	f.setFact("message", "container has runAsNonRoot and image will run as root")
	f.setFact("image_users", "payments-worker:3.3.2 runs as user 10001, payments-worker:3.4.0 runs as root (no USER)")
	d := nonRootImage.describe(&Hypothesis{Kind: KindNonRootImage, Subject: "payments-worker", Primary: []*Finding{f}}, Scope{})
	for _, w := range []string{"runAsNonRoot: true", "will run as root", "3.4.0 runs as root", "CreateContainerConfigError"} {
		if !strings.Contains(d, w) {
			t.Errorf("description lacks %q:\n%s", w, d)
		}
	}
}
