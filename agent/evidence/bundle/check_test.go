package bundle_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
)

func TestRequireEvidence(t *testing.T) {
	cases := []struct {
		name  string
		fs    fstest.MapFS
		empty bool
	}{
		{"nothing", fstest.MapFS{"README.md": {Data: []byte("hi")}}, true},
		{"bundle.json only", fstest.MapFS{"bundle.json": {Data: []byte(`{}`)}}, true},
		{"empty kubernetes folder", fstest.MapFS{"kubernetes/notes.md": {Data: []byte("x")}}, true},
		{"unrelated yaml", fstest.MapFS{"kubernetes/values.yaml": {Data: []byte("replicas: 3\n")}}, true},
		{"a text file that is no transcript", fstest.MapFS{"notes.txt": {Data: []byte("call bob\n")}}, true},
		{"one pod yaml", fstest.MapFS{"kubernetes/p.yaml": {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: x\n")}}, false},
		{"a transcript", fstest.MapFS{"t.txt": {Data: []byte("$ kubectl logs p -n x\nboom\n")}}, false},
		{"logs", fstest.MapFS{"logs/app.log": {Data: []byte("2026-01-01T00:00:00Z x\n")}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := bundle.Open(tc.fs, "/tmp/incident")
			if err != nil {
				t.Fatal(err)
			}
			err = b.RequireEvidence(context.Background())
			if tc.empty {
				if !errors.Is(err, bundle.ErrEmpty) || !strings.Contains(err.Error(), "/tmp/incident") || !strings.Contains(err.Error(), "kubernetes/") ||
					!strings.Contains(err.Error(), "prometheus/*.om") {
					t.Errorf("error %v, want one naming the bundle and what was looked for", err)
				}
			} else if err != nil {
				t.Errorf("bundle with evidence: %v", err)
			}
		})
	}
}

func TestCheckReport(t *testing.T) {
	fsys := fstest.MapFS{
		"bundle.json":                             {Data: []byte(`{"captured_at": "2026-05-20T09:30:00Z"}`)},
		"kubernetes/web/all.yaml":                 {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: web\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n")},
		"kubernetes/web/pods.json":                {Data: []byte("{\"kind\": \"PodList\", \"items\": [\n{\"metadata\": {\"name\": 7}}]}")},
		"kubernetes/web/p/logs.txt":               {Data: []byte("x\n")},
		"kubernetes/replication-controllers.json": {Data: []byte(`{"kind":"List","items":[]}`)},
		"kubernetes/readme.md":                    {Data: []byte("x")},
		"session.txt":                             {Data: []byte("$ kubectl get pods -n web\nNAME   READY   STATUS    RESTARTS   AGE\np      1/1     Running   0          5m\n$ kubectl frobnicate\nzzz\n")},
		"screenshot.png":                          {Data: []byte{0x89}},
	}
	b, _ := bundle.Open(fsys, "mixed")
	r, err := bundle.Check(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	render := func(items []bundle.CheckItem) string {
		var sb strings.Builder
		for _, it := range items {
			fmt.Fprintf(&sb, "%s:%d %s\n", it.File, it.Line, it.What)
		}
		return sb.String()
	}
	read, skipped, errs := render(r.Read), render(r.Skipped), render(r.Errors)
	for _, want := range []string{"bundle.json:0 captured at 2026-05-20T09:30:00Z", "kubernetes/web/all.yaml:0 1 Pod", "kubernetes/web/p/logs.txt:0 pod logs (logs)", "session.txt:0 transcript: 1 Pod"} {
		if !strings.Contains(read, want) {
			t.Errorf("read lacks %q:\n%s", want, read)
		}
	}
	for _, want := range []string{"kubernetes/web/all.yaml:7 w: kind Widget is not read", "kubernetes/replication-controllers.json:0 ReplicationController", "kubernetes/readme.md:0 not a form read", "screenshot.png:0 not a bundle part", "session.txt:4 kubectl frobnicate"} {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped lacks %q:\n%s", want, skipped)
		}
	}
	if !strings.Contains(errs, "kubernetes/web/pods.json:2 ") {
		t.Errorf("errors lack the bad pods.json line 2:\n%s", errs)
	}
	if r.Empty() {
		t.Error("report says empty")
	}
}

func TestCheckKindsBundle(t *testing.T) {
	b, err := bundle.OpenDir(evidencetest.KindsBundleDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := bundle.Check(context.Background(), b)
	if err != nil || len(r.Errors) > 0 || len(r.Skipped) > 0 {
		t.Errorf("kinds bundle: %v errors %+v skipped %+v", err, r.Errors, r.Skipped)
	}
}

func TestProblems(t *testing.T) {
	b, _ := bundle.Open(fstest.MapFS{
		"kubernetes/ok.yaml":          {Data: []byte("kind: Pod\nmetadata:\n  name: p\n  namespace: x\n")},
		"kubernetes/broken.yaml":      {Data: []byte("kind: Pod\nmetadata:\n  name: p\n---\nkind: Pod\nmetadata: [\n")},
		"kubernetes/shop/pods.json":   {Data: []byte(`{"kind":"PodList","items":[]}`)},
		"kubernetes/other/notes.yaml": {Data: []byte("just: values\n")},
	}, "b")
	ps := b.Problems(context.Background())
	if len(ps) != 1 || ps[0].File != "kubernetes/broken.yaml" || ps[0].Line != 6 {
		t.Errorf("problems %+v, want kubernetes/broken.yaml:6", ps)
	}
	b, _ = bundle.Open(fstest.MapFS{
		"alerts.json":  {Data: []byte("{\"alerts\": [\n  {\"status\": \"firing\", \"labels\": {\"alertname\": \"X\"}, \"startsAt\": \"soon\"}\n]}\n")},
		"logs/app.log": {Data: []byte("2026-01-02T03:04:05Z ok\n")},
	}, "b")
	ps = b.Problems(context.Background())
	if len(ps) != 1 || ps[0].File != "alerts.json" || ps[0].Line == 0 || !strings.Contains(ps[0].What, "startsAt") {
		t.Errorf("problems %+v, want alerts.json with its line and the bad field", ps)
	}
}
