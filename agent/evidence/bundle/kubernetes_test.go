package bundle_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
)

func openShop(t *testing.T) *evidence.Sources {
	t.Helper()
	b, err := bundle.OpenDir(evidencetest.ShopBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	return b.Sources(b.CapturedAt)
}

func TestBundleKubernetesConformance(t *testing.T) {
	s := openShop(t)
	if s.Kubernetes == nil {
		t.Fatal("bundle with kubernetes/ has no Kubernetes source")
	}
	evidencetest.RunKubernetes(t, s.Kubernetes, evidencetest.ShopKubeWant())
}

func TestBundleKubernetesDetails(t *testing.T) {
	ctx := context.Background()
	k := openShop(t).Kubernetes
	pods, err := k.Pods(ctx, "shop", "app=checkout")
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods: %v %v", pods, err)
	}
	cs := pods[0].Status.ContainerStatuses[0]
	if cs.RestartCount != 4 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.Reason != "OOMKilled" ||
		cs.LastTerminationState.Terminated.ExitCode != 137 {
		t.Errorf("checkout container status not decoded: %+v", cs)
	}
	evs, err := k.Events(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Reason != "OOMKilling" {
			continue
		}
		// events.k8s.io: note, regarding, series, reporting controller
		if !strings.Contains(e.Message, "Memory cgroup out of memory") || e.InvolvedObject.Kind != "Pod" ||
			e.Source.Component != "kubelet" || e.Count != 4 ||
			e.FirstTimestamp.UTC().Format("15:04:05") != "10:12:39" || e.LastTimestamp.UTC().Format("15:04:05") != "10:38:50" {
			t.Errorf("events.k8s.io event not normalised: %+v", e)
		}
	}
	eps, err := k.Endpoints(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range eps {
		if e.Name == "cart" {
			if got := e.Subsets[0].Ports[0].Port; got != 8080 {
				t.Errorf("named target port resolved to %d, want 8080", got)
			}
		}
	}
	if empty, err := k.Pods(ctx, "nosuchns", ""); err != nil || len(empty) != 0 {
		t.Errorf("unknown namespace: %v %v, want empty", empty, err)
	}
	if _, err := k.Pods(ctx, "../etc", ""); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("path-like namespace: %v, want invalid", err)
	}
}

func TestBundleNoKubernetes(t *testing.T) {
	b, err := bundle.Open(fstest.MapFS{"bundle.json": {Data: []byte(`{}`)}}, "empty")
	if err != nil {
		t.Fatal(err)
	}
	s := b.Sources(evidencetest.ShopCapturedAt)
	if s.Kubernetes != nil || s.Metrics != nil {
		t.Errorf("empty bundle: Kubernetes %v Metrics %v, want plain nils", s.Kubernetes, s.Metrics)
	}
}

func TestBundleKubernetesMalformed(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(evidencetest.ShopBundleDir(), "kubernetes", "shop", "services.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, data string
		line       int
	}{
		{"syntax", "{\n  \"kind\": \"PodList\",\n  \"items\": [\n    {\"metadata\": {\"name\": \"a\"}},\n    {\"metadata\": {\"name\": \"b\"}\n  ]\n}\n", 6},
		{"type", "{\n  \"kind\": \"PodList\",\n  \"items\": [\n    {\"metadata\": {\"name\": \"a\"}},\n    {\"metadata\": {\"name\": 42}}\n  ]\n}\n", 5},
		{"truncated", "{\n  \"kind\": \"PodList\",\n  \"items\": [\n", 4},
		{"not a list", "{\n  \"kind\": \"Pod\"\n}\n", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"kubernetes/shop/pods.json":     {Data: []byte(tc.data)},
				"kubernetes/shop/services.json": {Data: good},
			}
			b, err := bundle.Open(fsys, "broken")
			if err != nil {
				t.Fatal(err)
			}
			k := b.Sources(evidencetest.ShopCapturedAt).Kubernetes
			_, perr := k.Pods(context.Background(), "shop", "")
			err = perr
			var e *evidence.Error
			if !errors.As(err, &e) || e.Code != evidence.CodeMalformed || e.File != "kubernetes/shop/pods.json" || e.Line != tc.line {
				t.Fatalf("error %#v (%v), want malformed kubernetes/shop/pods.json line %d", e, err, tc.line)
			}
			if !strings.Contains(err.Error(), "kubernetes/shop/pods.json:") {
				t.Errorf("message %q does not name the file and line", err)
			}
			// the rest of the bundle still serves
			svcs, err := k.Services(context.Background(), "shop")
			if err != nil || len(svcs) != 3 {
				t.Errorf("services after a broken pods.json: %d, %v", len(svcs), err)
			}
			// and the error is stable (parsed once)
			if _, err2 := k.Pods(context.Background(), "shop", ""); err2 == nil || err2.Error() != perr.Error() {
				t.Errorf("second call: %v", err2)
			}
		})
	}
}

func TestBundlePodLogsBounded(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("==== START logs for container app of pod big/p ====\n")
	for i := 0; i < 50000; i++ {
		sb.WriteString("2026-03-14T10:00:00Z line\n")
	}
	sb.WriteString(strings.Repeat("x", 200<<10) + "\n") // a very long line
	sb.WriteString("==== END logs for container app of pod big/p ====\n")
	fsys := fstest.MapFS{
		"kubernetes/big/pods.json":  {Data: []byte(`{"kind":"PodList","items":[{"metadata":{"name":"p","namespace":"big"},"spec":{"containers":[{"name":"app"}]}}]}`)},
		"kubernetes/big/p/logs.txt": {Data: []byte(sb.String())},
	}
	b, _ := bundle.Open(fsys, "big")
	res, err := b.Sources(evidencetest.ShopCapturedAt).Kubernetes.PodLogs(context.Background(), evidence.PodLogQuery{Namespace: "big", Pod: "p", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lines) != 10 || res.Matched != 50001 || !res.Truncated || res.Scanned != 50001 {
		t.Errorf("lines %d matched %d scanned %d truncated %v", len(res.Lines), res.Matched, res.Scanned, res.Truncated)
	}
	if last := res.Lines[9].Text; len(last) != evidence.MaxPodLogLine {
		t.Errorf("long line kept %d bytes, want %d", len(last), evidence.MaxPodLogLine)
	}
}
