package bundle_test

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

// TestLoggedPods: the pods whose logs a bundle holds as files are named,
// listed or not (a proxy's log copied from its namespace without its pod),
// and their logs are served.
func TestLoggedPods(t *testing.T) {
	envoy := "==== START logs for container envoy of pod projectcontour/envoy-7x2qk ====\n" +
		`[2026-11-23T16:21:33.028Z] "GET /v2/fares HTTP/1.1" 503 UF,URX 0 145 2 - "1.2.3.4" "okhttp/4.12.0" "id" "api.example.com" "10.40.1.203:8080"` + "\n" +
		"==== END logs for container envoy of pod projectcontour/envoy-7x2qk ====\n"
	fsys := fstest.MapFS{
		"kubernetes/travel/pods.json":                                {Data: []byte(`{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"fares-api-1","namespace":"travel"}}]}`)},
		"kubernetes/travel/fares-api-1/logs.txt":                     {Data: []byte("2026-11-23T16:30:11Z request\n")},
		"kubernetes/projectcontour/envoy-7x2qk/logs.txt":             {Data: []byte(envoy)},
		"kubernetes/projectcontour/notes/readme.md":                  {Data: []byte("not a pod\n")},
		"kubernetes/kube-system/coredns-1/logs-coredns-previous.txt": {Data: []byte("panic\n")},
	}
	k, l, all := loggedPods(t, fsys, time.Date(2026, 11, 23, 16, 40, 0, 0, time.UTC))
	ctx := context.Background()
	want := []evidence.PodRef{{Namespace: "kube-system", Name: "coredns-1"}, {Namespace: "projectcontour", Name: "envoy-7x2qk"}, {Namespace: "travel", Name: "fares-api-1"}}
	if !slices.Equal(all, want) {
		t.Fatalf("logged pods %v, want %v", all, want)
	}
	one, _ := l.LoggedPods(ctx, "projectcontour")
	if len(one) != 1 || one[0].Name != "envoy-7x2qk" {
		t.Fatalf("projectcontour: %v", one)
	}
	if _, err := l.LoggedPods(ctx, "../x"); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Fatalf("bad namespace: %v", err)
	}
	lr, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "projectcontour", Pod: "envoy-7x2qk"})
	if err != nil || len(lr.Lines) != 1 || lr.Lines[0].Time.IsZero() {
		t.Fatalf("envoy's log: %+v %v", lr, err)
	}
}

// loggedPods opens fsys as a bundle read at now and returns its Kubernetes
// source, that source as a logged-pod lister and the pods it lists in all
// namespaces.
func loggedPods(t *testing.T, fsys fstest.MapFS, now time.Time) (evidence.Kubernetes, evidence.LoggedPodLister, []evidence.PodRef) {
	t.Helper()
	b, err := bundle.Open(fsys, "b")
	if err != nil {
		t.Fatal(err)
	}
	k := b.Sources(now).Kubernetes
	l, ok := k.(evidence.LoggedPodLister)
	if !ok {
		t.Fatal("the bundle's Kubernetes source does not list logged pods")
	}
	all, err := l.LoggedPods(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return k, l, all
}
