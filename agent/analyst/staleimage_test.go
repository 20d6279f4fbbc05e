package analyst

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestStaleImage: errors confined to the one pod of a workload whose tag
// resolved to another digest name that pod and both digests; when every
// pod runs one digest, when the siblings' logs were not read, or when the
// siblings log the same error, nothing.
func TestStaleImage(t *testing.T) {
	pod := func(name, digest, start string) corev1.Pod {
		var p corev1.Pod
		doc := `{"metadata":{"name":"` + name + `","namespace":"pay","ownerReferences":[{"kind":"ReplicaSet","name":"router-5d7c8b9f6"}]},
"spec":{"containers":[{"name":"router","image":"harbor.internal/pay/router:stable"}]},
"status":{"phase":"Running","startTime":"` + start + `","containerStatuses":[{"name":"router","ready":true,"restartCount":0,
"image":"harbor.internal/pay/router:stable","imageID":"harbor.internal/pay/router@sha256:` + strings.Repeat(digest, 64) + `"}]}}`
		if err := json.Unmarshal([]byte(doc), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const errLine = "2026-11-25T16:40:36.768Z ERROR 1 --- [router] AcquirerClient : authorize failed : javax.net.ssl.SSLHandshakeException: PKIX path building failed"
	errF := Finding{Kind: KindTLS, Subject: "router", Object: "logs router-5d7c8b9f6-4kq2x", Source: SrcLogs, Severity: SevCritical, Weight: 0.7,
		Evidence: []string{"logs router-5d7c8b9f6-4kq2x logged 86 lines: " + quote(errLine, 200)}}
	errF.setFact("line", errLine)
	set := func(errSources ...string) []LogSet {
		return []LogSet{{Source: "router-5d7c8b9f6-4kq2x", Subject: "router", Templates: []analysis.LogTemplate{
			{Example: "2026-11-25T16:40:30Z INFO 1 --- [router] authorize ok", Incident: 500, Sources: []string{"router-5d7c8b9f6-4kq2x", "router-5d7c8b9f6-9zt7m", "router-5d7c8b9f6-hx3lw"}},
			{Example: errLine, Incident: 86, Sources: errSources},
		}}}
	}
	old := pod("router-5d7c8b9f6-4kq2x", "4", "2026-11-25T09:12:40Z")
	cases := []struct {
		name string
		pods []corev1.Pod
		logs []LogSet
		want bool
	}{
		{"one pod on an older digest", []corev1.Pod{old, pod("router-5d7c8b9f6-9zt7m", "9", "2026-11-24T18:02:11Z"), pod("router-5d7c8b9f6-hx3lw", "9", "2026-11-24T18:02:35Z")}, set("router-5d7c8b9f6-4kq2x"), true},
		{"one digest", []corev1.Pod{pod("router-5d7c8b9f6-4kq2x", "9", "2026-11-25T09:12:40Z"), pod("router-5d7c8b9f6-9zt7m", "9", "2026-11-24T18:02:11Z"), pod("router-5d7c8b9f6-hx3lw", "9", "2026-11-24T18:02:35Z")}, set("router-5d7c8b9f6-4kq2x"), false},
		{"siblings log it too", []corev1.Pod{old, pod("router-5d7c8b9f6-9zt7m", "9", "2026-11-24T18:02:11Z"), pod("router-5d7c8b9f6-hx3lw", "9", "2026-11-24T18:02:35Z")}, set("router-5d7c8b9f6-4kq2x", "router-5d7c8b9f6-hx3lw"), false},
		{"siblings not read", []corev1.Pod{old, pod("router-5d7c8b9f6-9zt7m", "9", "2026-11-24T18:02:11Z"), pod("router-5d7c8b9f6-hx3lw", "9", "2026-11-24T18:02:35Z")},
			[]LogSet{{Source: "router-5d7c8b9f6-4kq2x", Subject: "router", Templates: []analysis.LogTemplate{{Example: errLine, Incident: 86}}}}, false},
	}
	for _, tc := range cases {
		ev := &Gathered{K8s: K8sEvidence{Pods: tc.pods}, Logs: tc.logs, Window: Window{End: time.Date(2026, 11, 25, 17, 45, 0, 0, time.UTC)}}
		fs := detectStaleImage(ev, []Finding{errF})
		if (len(fs) == 1) != tc.want {
			t.Fatalf("%s: findings %+v", tc.name, fs)
		}
		if !tc.want {
			continue
		}
		h := &Hypothesis{Kind: KindStaleImage, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
		wantDescribed(t, h, Scope{}, "router-5d7c8b9f6-4kq2x", "sha256:444444444444", "sha256:999999999999", "PKIX path building failed", "image")
		if fs[0].Subject != "router" || len(fs[0].Evidence) < 2 {
			t.Errorf("%s: %+v", tc.name, fs[0])
		}
	}
}

// TestCachedTag: pods of one template on different digests of a mutable
// tag, read from describe's Image ID, a custom-columns table or a jsonpath
// output (docker-pullable:// form); the kubelet's "already present on
// machine" and the registry's digest make the chain. A pull policy of
// Always, pods of two ReplicaSets (a rollout) or one digest are not it.
func TestCachedTag(t *testing.T) {
	dg := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	pod := func(name, rs, node, policy, imageID string) corev1.Pod {
		p := corev1.Pod{}
		p.Name, p.Namespace, p.Spec.NodeName = name, "shop", node
		if rs != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs}}
		}
		if imageID != "" {
			p.Spec.Containers = []corev1.Container{{Name: "api", Image: "registry.example.com/shop/api:stable", ImagePullPolicy: corev1.PullPolicy(policy)}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "api", ImageID: imageID}}
		}
		return p
	}
	pulled := func(pod, msg string) corev1.Event {
		return corev1.Event{Reason: "Pulled", Message: msg, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: pod}}
	}
	cached := `Container image "registry.example.com/shop/api:stable" already present on machine`
	table := evidence.CommandOutput{Command: "kubectl get pods -n shop -o custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image,IMAGEID:.status.containerStatuses[0].imageID", Namespace: "shop",
		Lines: []string{"NAME   IMAGE   IMAGEID",
			"api-7c9d8b6f5-aaaaa   registry.example.com/shop/api:stable   registry.example.com/shop/api@" + dg("1"),
			"api-7c9d8b6f5-bbbbb   registry.example.com/shop/api:stable   registry.example.com/shop/api@" + dg("2")}}
	jsonpath := evidence.CommandOutput{Command: `kubectl get pods -n shop -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.status.containerStatuses[0].imageID}{"\n"}{end}'`, Namespace: "shop",
		Lines: []string{"api-7c9d8b6f5-aaaaa\tdocker-pullable://registry.example.com/shop/api@" + dg("1"),
			"api-7c9d8b6f5-bbbbb\tdocker-pullable://registry.example.com/shop/api@" + dg("2")}}
	crane := evidence.CommandOutput{Command: "crane digest registry.example.com/shop/api:stable", Lines: []string{dg("2")}}
	skopeo := evidence.CommandOutput{Command: "skopeo inspect --format '{{.Digest}}' docker://registry.example.com/shop/api:2.3.0", Lines: []string{dg("1")}}
	cases := []struct {
		name   string
		pods   []corev1.Pod
		cmds   []evidence.CommandOutput
		events []corev1.Event
		want   []string // nil: no finding
	}{
		{"describe image IDs, IfNotPresent, cached and pulled", []corev1.Pod{
			pod("api-7c9d8b6f5-aaaaa", "api-7c9d8b6f5", "node-1", "IfNotPresent", "registry.example.com/shop/api@"+dg("1")),
			pod("api-7c9d8b6f5-ccccc", "api-7c9d8b6f5", "node-3", "IfNotPresent", "registry.example.com/shop/api@"+dg("1")),
			pod("api-7c9d8b6f5-bbbbb", "api-7c9d8b6f5", "node-2", "IfNotPresent", "registry.example.com/shop/api@"+dg("2"))}, nil,
			[]corev1.Event{pulled("api-7c9d8b6f5-aaaaa", cached), pulled("api-7c9d8b6f5-ccccc", cached),
				pulled("api-7c9d8b6f5-bbbbb", `Successfully pulled image "registry.example.com/shop/api:stable" in 6.488s (6.488s including waiting). Image size: 96338120 bytes.`)},
			[]string{"sha256:111111111111 on 2 pods", "sha256:222222222222 on 1 pod", "tag :stable is mutable", "pull policy is IfNotPresent", "already present on machine\" for api-7c9d8b6f5-aaaaa, api-7c9d8b6f5-ccccc", "only api-7c9d8b6f5-bbbbb pulled it"}},
		{"custom-columns table, registry digests, default policy", []corev1.Pod{pod("api-7c9d8b6f5-aaaaa", "", "node-1", "", ""), pod("api-7c9d8b6f5-bbbbb", "", "node-2", "", "")},
			[]evidence.CommandOutput{table, crane, skopeo}, []corev1.Event{pulled("api-7c9d8b6f5-aaaaa", cached)},
			[]string{"(:2.3.0)", "(what :stable is now)", "IfNotPresent (the default", "the registry says :stable is sha256:222222222222"}},
		{"jsonpath, docker-pullable", []corev1.Pod{pod("api-7c9d8b6f5-aaaaa", "", "node-1", "", ""), pod("api-7c9d8b6f5-bbbbb", "", "node-2", "", "")},
			[]evidence.CommandOutput{jsonpath}, []corev1.Event{pulled("api-7c9d8b6f5-aaaaa", cached), pulled("api-7c9d8b6f5-bbbbb", `Successfully pulled image "registry.example.com/shop/api:stable" in 2.1s`)}, []string{"sha256:111111111111 on 1 pod", "sha256:222222222222 on 1 pod"}},
		{"pull policy Always", []corev1.Pod{
			pod("api-7c9d8b6f5-aaaaa", "api-7c9d8b6f5", "node-1", "Always", "registry.example.com/shop/api@"+dg("1")),
			pod("api-7c9d8b6f5-bbbbb", "api-7c9d8b6f5", "node-2", "Always", "registry.example.com/shop/api@"+dg("2"))}, nil, nil, nil},
		{"a rollout: two ReplicaSets", []corev1.Pod{
			pod("api-7c9d8b6f5-aaaaa", "api-7c9d8b6f5", "node-1", "IfNotPresent", "registry.example.com/shop/api@"+dg("1")),
			pod("api-5b4c3d2e1-bbbbb", "api-5b4c3d2e1", "node-2", "IfNotPresent", "registry.example.com/shop/api@"+dg("2"))}, nil, nil, nil},
		{"digests differ, no word of a cache or the registry", []corev1.Pod{
			pod("api-7c9d8b6f5-aaaaa", "api-7c9d8b6f5", "node-1", "IfNotPresent", "registry.example.com/shop/api@"+dg("1")),
			pod("api-7c9d8b6f5-bbbbb", "api-7c9d8b6f5", "node-2", "IfNotPresent", "registry.example.com/shop/api@"+dg("2"))}, nil, nil, nil},
		{"the cached and the pulled pod run one build", []corev1.Pod{
			pod("api-7c9d8b6f5-aaaaa", "api-7c9d8b6f5", "node-1", "IfNotPresent", "registry.example.com/shop/api@"+dg("1")),
			pod("api-7c9d8b6f5-bbbbb", "api-7c9d8b6f5", "node-2", "IfNotPresent", "registry.example.com/shop/api@"+dg("1")),
			pod("api-7c9d8b6f5-ccccc", "api-7c9d8b6f5", "node-3", "IfNotPresent", "registry.example.com/shop/api@"+dg("2"))}, nil,
			[]corev1.Event{pulled("api-7c9d8b6f5-aaaaa", cached), pulled("api-7c9d8b6f5-bbbbb", `Successfully pulled image "registry.example.com/shop/api:stable" in 2.1s`)}, nil},
		{"one digest", []corev1.Pod{
			pod("api-7c9d8b6f5-aaaaa", "api-7c9d8b6f5", "node-1", "IfNotPresent", "registry.example.com/shop/api@"+dg("1")),
			pod("api-7c9d8b6f5-bbbbb", "api-7c9d8b6f5", "node-2", "IfNotPresent", "registry.example.com/shop/api@"+dg("1"))}, nil, []corev1.Event{pulled("api-7c9d8b6f5-aaaaa", cached)}, nil},
	}
	dep := appsv1.Deployment{}
	dep.Name, dep.Namespace = "api", "shop"
	dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "api", Image: "registry.example.com/shop/api:stable"}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{Pods: tc.pods, Events: tc.events, Deployments: []appsv1.Deployment{dep}}, Commands: tc.cmds}
			fs := staleImage.detect(ev, nil)
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "api" || len(fs[0].Evidence) < 2 || fs[0].fact("why") == "" {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindStaleImage, Subject: "api", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, tc.want...)
			if recs := recommend(h, Scope{}); !strings.Contains(recs[0].Action, "immutable reference") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
}
