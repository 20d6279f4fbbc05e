package analyst

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Logs handed over as files without a pod listing are read after the
// listed pods: the service's namespace first, then the others (a scaler's,
// a mesh control plane's), never a listed pod twice, within the bound.
func TestHandedOverPods(t *testing.T) {
	fsys := fstest.MapFS{
		"bundle.json": {Data: []byte(`{"captured_at":"2026-11-25T10:10:00Z"}`)},
		"kubernetes/keda/keda-operator-7d9b8c6f5-l4tnw/logs.txt":     {Data: []byte("2026-11-25T09:00:00Z\tERROR\tscale_handler\terror getting scale decision\n")},
		"kubernetes/billing/invoice-worker-5b9d7c6f8-x2kzl/logs.txt": {Data: []byte("2026-11-25T09:00:00Z INFO rendered invoice\n")},
		"kubernetes/billing/invoice-api-6c7d8e9f0-abcde/logs.txt":    {Data: []byte("2026-11-25T09:00:00Z INFO ok\n")},
		"kubernetes/billing/events.json":                             {Data: []byte(`{"items":[]}`)},
	}
	src := bundleSources(t, fsys, time.Date(2026, 11, 25, 10, 10, 0, 0, time.UTC))
	listed := []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: "invoice-worker-5b9d7c6f8-x2kzl"}}}
	cases := []struct {
		max  int
		want []string
	}{
		{30, []string{"billing/invoice-api-6c7d8e9f0-abcde", "keda/keda-operator-7d9b8c6f5-l4tnw"}},
		{1, []string{"billing/invoice-api-6c7d8e9f0-abcde"}},
		{0, nil},
	}
	for _, c := range cases {
		g := newGatherer(Options{}, Scope{Service: "invoice-worker", Namespace: "billing"}, src)
		var got []string
		for _, p := range g.handedOverPods(context.Background(), listed, c.max) {
			got = append(got, p.Namespace+"/"+p.Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("max %d: pods %v, want %v", c.max, got, c.want)
		}
	}
}
