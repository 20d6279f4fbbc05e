package bundle_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

// transcriptBundle is a bundle holding only a terminal transcript at its root.
func transcriptBundle(t *testing.T) evidence.Kubernetes {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "transcript", "session.txt"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(fstest.MapFS{
		"bundle.json": {Data: []byte(`{"captured_at": "2026-02-17T09:05:00Z"}`)},
		"session.txt": {Data: data},
		"notes.txt":   {Data: []byte("nothing to read here\n")},
	}, "transcript")
	if err != nil {
		t.Fatal(err)
	}
	k := b.Sources(b.CapturedAt).Kubernetes
	if k == nil {
		t.Fatal("a bundle with a transcript at its root has no Kubernetes source")
	}
	return k
}

func TestBundleTranscriptAtRoot(t *testing.T) {
	k := transcriptBundle(t)
	ctx := context.Background()
	pods, err := k.Pods(ctx, "orders", "")
	if err != nil || len(pods) == 0 {
		t.Fatalf("pods from describe: %d, %v", len(pods), err)
	}
	nss, err := k.Namespaces(ctx)
	if err != nil || !strings.Contains(strings.Join(nss, ","), "orders") {
		t.Errorf("namespaces: %v %v", nss, err)
	}
	evs, err := k.Events(ctx, "orders")
	if err != nil || len(evs) == 0 {
		t.Errorf("events from describe sections: %d %v", len(evs), err)
	}
	for _, e := range evs {
		if e.Name == "" || e.LastTimestamp.IsZero() {
			t.Errorf("event without name or time: %+v", e)
		}
	}
	res, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "orders", Pod: "orders-api-7f9c8d6b5-qx2lp", Since: time.Date(2026, 2, 17, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Matched != 3 || res.Lines[2].Text != "fatal: DATABASE_URL is not set" || res.Lines[2].Source != "orders-api-7f9c8d6b5-qx2lp/app" {
		t.Errorf("kubectl logs output not served: %+v", res)
	}
	if _, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "orders", Pod: "orders-api-7f9c8d6b5-qx2lp", Previous: true}); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("previous logs the transcript does not hold: %v, want not found", err)
	}
	if len(pods) != 2 {
		t.Errorf("pods: %d, want 2 (a table row and a describe page of one pod merge)", len(pods))
	}
}

// A structured copy of an object wins over its text form.
func TestBundleStructuredWinsOverText(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "transcript", "session.txt"))
	if err != nil {
		t.Fatal(err)
	}
	k0 := transcriptBundle(t)
	pods, _ := k0.Pods(context.Background(), "orders", "")
	name := pods[0].Name
	pod := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "` + name + `", "namespace": "orders", "labels": {"from": "yaml"}}, "spec": {"containers": [{"name": "app", "image": "x"}]}}`
	b, _ := bundle.Open(fstest.MapFS{
		"kubectl.txt":              {Data: data},
		"kubernetes/orders/p.json": {Data: []byte(pod)},
	}, "mixed")
	k := b.Sources(b.CapturedAt).Kubernetes
	got, err := evidence.GetObject(context.Background(), k, "Pod", "orders", name)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetLabels()["from"] != "yaml" {
		t.Errorf("text form won over the structured object: %v", got.GetLabels())
	}
	all, _ := k.Pods(context.Background(), "orders", "")
	if len(all) != len(pods) {
		t.Errorf("%d pods, want %d (one object served once)", len(all), len(pods))
	}
}
