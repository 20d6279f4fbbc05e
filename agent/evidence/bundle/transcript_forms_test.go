package bundle_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

// A transcript's NotFound answers, kubectl top rows, config map and secret
// tables and rollout status reach the evidence interfaces and bundle check.
const formsTranscript = `jlee@mbp ~ % kubectl describe secret ghcr-creds -n logistics
Error from server (NotFound): secrets "ghcr-creds" not found
jlee@mbp ~ % kubectl get secrets -n logistics
NAME               TYPE                             DATA   AGE
carrier-api-keys   Opaque                           3      3d
ghcr-pull          kubernetes.io/dockerconfigjson   1      3d
jlee@mbp ~ % kubectl get pvc scratch -n logistics
Error from server (NotFound): persistentvolumeclaims "scratch" not found
jlee@mbp ~ % kubectl -n logistics top pod
NAME                              CPU(cores)   MEMORY(bytes)
shipping-rates-6f7b8d9c45-k9wtx   12m          96Mi
carrier-sync-5d4c3b2a19-x8p2q     40m          210Mi
jlee@mbp ~ % kubectl top node
NAME                          CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)
gke-logi-main-3c1f8a2d-p0x7   1710m        43%      11024Mi         78%
jlee@mbp ~ % kubectl -n logistics rollout status deploy/shipping-rates
Waiting for deployment "shipping-rates" rollout to finish: 0 of 1 updated replicas are available...
`

func TestTranscriptAbsences(t *testing.T) {
	ctx := context.Background()
	b := formsBundle(t, fstest.MapFS{"debug-session.txt": {Data: []byte(formsTranscript)}})
	k := b.Sources(b.CapturedAt).Kubernetes
	h := k.(evidence.KindHolder)
	// asked about and answered NotFound: the kind is held, the object is not
	for _, kind := range []string{"Secret", "PersistentVolumeClaim"} {
		if !h.HoldsKind(ctx, kind) {
			t.Errorf("HoldsKind(%s) false after kubectl's NotFound answer", kind)
		}
	}
	if h.HoldsKind(ctx, "ConfigMap") {
		t.Error("HoldsKind(ConfigMap) true: nothing was asked about config maps")
	}
	_, err := evidence.Get[corev1.Secret](ctx, k, "logistics", "ghcr-creds")
	if evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("the absent secret: %v, want not_found", err)
	}
	if _, err := evidence.Get[corev1.PersistentVolumeClaim](ctx, k, "logistics", "scratch"); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("the absent claim: %v, want not_found", err)
	}
	// the secrets table: objects with type and key count, no values
	s, err := evidence.Get[corev1.Secret](ctx, k, "logistics", "ghcr-pull")
	if err != nil || s.Type != corev1.SecretTypeDockerConfigJson || len(s.Data) != 0 || s.CreationTimestamp.IsZero() {
		t.Errorf("ghcr-pull: %+v %v", s, err)
	}
	// a transcript holding only a NotFound answer is evidence
	only := formsBundle(t, fstest.MapFS{"t.txt": {Data: []byte("$ kubectl get secret x -n y\nError from server (NotFound): secrets \"x\" not found\n")}})
	if err := only.RequireEvidence(ctx); err != nil {
		t.Errorf("NotFound-only transcript: %v", err)
	}
}

func TestTranscriptUsage(t *testing.T) {
	ctx := context.Background()
	b := formsBundle(t, fstest.MapFS{"kubernetes/session.txt": {Data: []byte(formsTranscript)}})
	u, ok := b.Sources(b.CapturedAt).Kubernetes.(evidence.UsageReader)
	if !ok {
		t.Fatal("the bundle's Kubernetes source serves no usage")
	}
	render := func(us []evidence.Usage) string {
		var parts []string
		for _, x := range us {
			parts = append(parts, fmt.Sprintf("%s %s/%s %s %s %d%% %d%% %s %s", x.Kind, x.Namespace, x.Name, x.CPU.String(), x.Memory.String(),
				x.CPUPercent, x.MemoryPercent, x.Time.Format("15:04"), x.Source))
		}
		return strings.Join(parts, "\n")
	}
	for _, tc := range []struct{ kind, ns, want string }{
		{"Pod", "logistics", "Pod logistics/carrier-sync-5d4c3b2a19-x8p2q 40m 210Mi -1% -1% 17:25 kubernetes/session.txt:12\n" +
			"Pod logistics/shipping-rates-6f7b8d9c45-k9wtx 12m 96Mi -1% -1% 17:25 kubernetes/session.txt:11"},
		{"Pod", "other", ""},
		{"Node", "", "Node /gke-logi-main-3c1f8a2d-p0x7 1710m 11024Mi 43% 78% 17:25 kubernetes/session.txt:15"},
	} {
		got, err := u.Usage(ctx, tc.kind, tc.ns)
		if err != nil || render(got) != tc.want {
			t.Errorf("Usage(%s, %q) = %v\n%s\nwant\n%s", tc.kind, tc.ns, err, render(got), tc.want)
		}
	}
	if all, _ := u.Usage(ctx, "", ""); len(all) != 3 {
		t.Errorf("all usage: %d rows, want 3", len(all))
	}
	if _, err := u.Usage(ctx, "Deployment", ""); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("usage of deployments: %v, want invalid", err)
	}
	// a transcript holding only top output is evidence, and check reports it
	only := formsBundle(t, fstest.MapFS{"top.txt": {Data: []byte("$ kubectl top node\nNAME   CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)\nn1     412m         10%      2981Mi          38%\n")}})
	if err := only.RequireEvidence(ctx); err != nil {
		t.Errorf("top-only transcript: %v", err)
	}
	r, err := bundle.Check(ctx, only)
	if err != nil || len(r.Read) != 2 || r.Read[1].What != "transcript: 1 kubectl top node rows" || len(r.Skipped) != 0 {
		t.Errorf("check of a top-only transcript: %v read %+v skipped %+v", err, r.Read, r.Skipped)
	}
}

func TestCheckTranscriptForms(t *testing.T) {
	b := formsBundle(t, fstest.MapFS{"debug-session.txt": {Data: []byte(formsTranscript)}})
	r, err := bundle.Check(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	// the rollout status names no workload the transcript shows: no object
	want := "transcript: 2 Secret, 2 kubectl top pod rows, 1 kubectl top node rows, 1 kubectl rollout status, 2 pods seen only in kubectl logs, exec or top (state unknown), 1 PersistentVolumeClaim, 1 Secret not found (kubectl's NotFound answers)"
	if len(r.Read) != 2 || r.Read[1].What != want || len(r.Skipped) != 0 {
		t.Errorf("check read %+v skipped %+v\nwant %q", r.Read, r.Skipped, want)
	}
}
