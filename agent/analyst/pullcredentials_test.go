package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	corev1 "k8s.io/api/core/v1"
)

// TestFollowPullCredentials follows a pull the registry refused to the
// credentials the pods present: their ServiceAccount, read from kubectl
// describe sa, lists no imagePullSecrets, while another namespace's does
// and runs the same image. A ServiceAccount that lists a secret, a pull
// refused for another reason, or a ServiceAccount not read, say nothing
// of the kind.
func TestFollowPullCredentials(t *testing.T) {
	now := time.Date(2026, 8, 4, 8, 50, 0, 0, time.UTC)
	const saPage = `$ kubectl describe sa %s -n %s
Name:                %s
Namespace:           %s
Labels:              <none>
Annotations:         <none>
Image pull secrets:  %s
Mountable secrets:   <none>
Tokens:              <none>
Events:              <none>
`
	sa := func(name, ns, secrets string) string {
		return replaceEach(saPage, name, ns, name, ns, secrets)
	}
	pod := func(ns, name, image, sa string, waiting string) corev1.Pod {
		p := corev1.Pod{}
		p.Namespace, p.Name = ns, name
		p.Labels = map[string]string{"app": "renderer"}
		p.Spec.ServiceAccountName = sa
		p.Spec.Containers = []corev1.Container{{Name: "renderer", Image: image}}
		cs := corev1.ContainerStatus{Name: "renderer", Image: image}
		if waiting != "" {
			p.Status.Phase = corev1.PodPending
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
		} else {
			p.Status.Phase = corev1.PodRunning
			cs.State.Running = &corev1.ContainerStateRunning{}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		return p
	}
	const img = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/render/renderer:7.1"
	cases := []struct {
		name, msg, sas string
		wantSA         string
		wantSecret     string
	}{
		{"ECR, no basic auth credentials", `Failed to pull image "` + img + `": rpc error: code = Unknown desc = Error response from daemon: Get https://123456789012.dkr.ecr.eu-west-1.amazonaws.com/v2/render/renderer/manifests/7.1: no basic auth credentials`,
			sa("renderer", "render-v2", "<none>") + sa("renderer", "render", "ecr-pull"), "render-v2/renderer", "ecr-pull"},
		{"Harbor 401, no other namespace read", `Failed to pull image "` + img + `": failed to resolve reference: unexpected status from HEAD request to https://harbor.example/v2/x/manifests/1: 401 Unauthorized`,
			sa("renderer", "render-v2", "<none>"), "render-v2/renderer", ""},
		{"its ServiceAccount lists a secret", `Failed to pull image "` + img + `": 401 Unauthorized`,
			sa("renderer", "render-v2", "ecr-pull") + sa("renderer", "render", "ecr-pull"), "", ""},
		{"tag not found", `Failed to pull image "` + img + `": ` + img + `: not found`,
			sa("renderer", "render-v2", "<none>") + sa("renderer", "render", "ecr-pull"), "", ""},
		{"ServiceAccount not read", `Failed to pull image "` + img + `": denied: requested access to the resource is denied`, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Window: Window{Start: now.Add(-time.Hour), End: now}}
			for _, o := range kubetext.Parse([]byte(c.sas), now).Objects {
				if x, ok := o.(*corev1.ServiceAccount); ok {
					ev.K8s.ServiceAccounts = append(ev.K8s.ServiceAccounts, *x)
				}
			}
			ev.K8s.Pods = []corev1.Pod{pod("render-v2", "renderer-5b8d6f4c7d-9fwlk", img, "renderer", "ImagePullBackOff"), pod("render", "renderer-7f4b9c6d58-6wxkb", img, "renderer", "")}
			f := Finding{Kind: KindImagePull, Subject: "renderer", Namespace: "render-v2", Object: "pod render-v2/renderer-5b8d6f4c7d-9fwlk container renderer", Weight: 0.85}
			f.setFact("image", img)
			f.setFact("message", c.msg)
			found := []Finding{f}
			followPullCredentials(ev, found)
			if got := found[0].fact("pull_sa"); got != c.wantSA {
				t.Fatalf("pull_sa = %q, want %q", got, c.wantSA)
			}
			if got := found[0].fact("pull_secret_elsewhere"); got != c.wantSecret {
				t.Errorf("pull_secret_elsewhere = %q, want %q", got, c.wantSecret)
			}
			if c.wantSA == "" {
				return
			}
			h := &Hypothesis{Kind: KindImagePull, Subject: "renderer", Primary: []*Finding{&found[0]}}
			d := imagePull.describe(h, Scope{})
			if !strings.Contains(d, "no imagePullSecrets") || !strings.Contains(d, c.wantSA) || c.wantSecret != "" && !strings.Contains(d, "image pull secret "+c.wantSecret) {
				t.Errorf("description %q", d)
			}
			r := &recommender{h: h}
			imagePull.recommend(h, Scope{}, r)
			if !strings.Contains(r.recs[0].Action, "imagePullSecrets of ServiceAccount renderer") {
				t.Errorf("first recommendation %q", r.recs[0].Action)
			}
		})
	}
}

// replaceEach replaces each %s of format, in order, with the next value.
func replaceEach(format string, values ...string) string {
	for _, v := range values {
		format = strings.Replace(format, "%s", v, 1)
	}
	return format
}

// TestPullSecretDropped follows a refused pull to the pull secret the
// workload's running pods (the previous ReplicaSet) name and the new pods
// do not, read from a custom-columns listing and from pod JSON.
func TestPullSecretDropped(t *testing.T) {
	now := time.Date(2026, 8, 4, 8, 50, 0, 0, time.UTC)
	const customCols = `$ kubectl get pods -n pay -l app=ledger -o custom-columns='NAME:.metadata.name,IMAGE:.spec.containers[0].image,PULL_SECRETS:.spec.imagePullSecrets[*].name'
NAME                      IMAGE                              PULL_SECRETS
ledger-54d8c7b9f6-9xq2v   %s   %s
ledger-7b9c6d5f8-zr4hp    %s   <none>
`
	const podJSON = `$ kubectl get pods -n pay -o json
{"apiVersion":"v1","kind":"List","items":[
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ledger-54d8c7b9f6-9xq2v","namespace":"pay","labels":{"pod-template-hash":"54d8c7b9f6"}},"spec":{"imagePullSecrets":[{"name":"%s"}],"containers":[{"name":"ledger","image":"%s"}]}},
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ledger-7b9c6d5f8-zr4hp","namespace":"pay","labels":{"pod-template-hash":"7b9c6d5f8"}},"spec":{"containers":[{"name":"ledger","image":"%s"}]}}]}
`
	cases := []struct {
		name, text string
		want       string
	}{
		{"custom columns, quay", replaceEach(customCols, "quay.io/acme/ledger:2.2.4", "quay-pull", "quay.io/acme/ledger:2.3.0"), "quay-pull"},
		{"pod JSON, GHCR", replaceEach(podJSON, "ghcr-creds", "ghcr.io/acme/ledger:2.2.4", "ghcr.io/acme/ledger:2.3.0"), "ghcr-creds"},
		{"the running pod pulls from another registry", replaceEach(customCols, "registry.gitlab.com/acme/ledger:2.2.4", "gitlab-pull", "quay.io/acme/ledger:2.3.0"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Window: Window{Start: now.Add(-time.Hour), End: now}}
			for _, o := range kubetext.Parse([]byte(c.text), now).Objects {
				if p, ok := o.(*corev1.Pod); ok {
					p.Namespace = "pay"
					cs := corev1.ContainerStatus{Name: "ledger"}
					if strings.Contains(p.Name, "zr4hp") {
						cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}
						p.Status.Phase = corev1.PodPending
					} else {
						cs.State.Running = &corev1.ContainerStateRunning{}
						p.Status.Phase = corev1.PodRunning
					}
					p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
					ev.K8s.Pods = append(ev.K8s.Pods, *p)
				}
			}
			if len(ev.K8s.Pods) != 2 {
				t.Fatalf("%d pods read, want 2", len(ev.K8s.Pods))
			}
			f := Finding{Kind: KindImagePull, Subject: "ledger", Namespace: "pay", Object: "pod pay/ledger-7b9c6d5f8-zr4hp container ledger", Weight: 0.85}
			f.setFact("message", `Failed to pull image "x": unexpected status from HEAD request to https://quay.io/v2/acme/ledger/manifests/2.3.0: 401 UNAUTHORIZED`)
			found := []Finding{f}
			followPullCredentials(ev, found)
			if got := found[0].fact("pull_dropped_secret"); got != c.want {
				t.Fatalf("pull_dropped_secret = %q, want %q", got, c.want)
			}
			if c.want == "" {
				return
			}
			h := &Hypothesis{Kind: KindImagePull, Subject: "ledger", Primary: []*Finding{&found[0]}}
			if d := imagePull.describe(h, Scope{}); !strings.Contains(d, "imagePullSecrets "+c.want) || !strings.Contains(d, "dropped the pull secret") {
				t.Errorf("description %q", d)
			}
		})
	}
}
