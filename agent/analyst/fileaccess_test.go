package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A file access the operating system refused is explained by who the
// process runs as (id, runAsUser, the image's nonroot user, a Dockerfile
// USER) and who owns the path (ls -l), with the fsGroup the pod lacks.
func TestFileAccessWhy(t *testing.T) {
	lsOut := evidence.CommandOutput{Command: `kubectl exec -n batch dbg -- ls -ln /data`, Lines: []string{
		"total 8",
		"drwxr-xr-x    3 0        0             4096 Nov 22 01:31 out",
	}}
	cases := []struct {
		name    string
		line    string
		ev      Gathered
		want    []string // in fact file_why
		refused bool
	}{
		{"Python PermissionError, securityContext by jsonpath, nonroot image from the change",
			`PermissionError: [Errno 13] Permission denied: '/data/out/2026-11-25'`,
			Gathered{Commands: []evidence.CommandOutput{lsOut,
				{Command: `kubectl get pod exporter-1 -o jsonpath='{.spec.securityContext}'`, Lines: []string{`{"runAsNonRoot":true}`}}},
				Changes: []evidence.Change{{Service: "exporter", Kind: "deploy", Description: "base image python:3.12-slim -> gcr.io/distroless/python3-debian12:nonroot"}}},
			[]string{"uid 65532", "/data/out is owned by root (uid 0)", "only root may write it", "no fsGroup"}, true},
		{"Go open error, id output, -o yaml securityContext with runAsUser and no fsGroup",
			`2026/11/25 01:31:02 open /data/out/report.csv: permission denied`,
			Gathered{Commands: []evidence.CommandOutput{lsOut,
				{Command: `kubectl exec exporter-1 -- id`, Lines: []string{"uid=1001(app) gid=1001(app) groups=1001(app)"}},
				{Command: `kubectl get pod exporter-1 -o yaml`, Lines: []string{"  securityContext:", "    runAsUser: 1001", "    runAsGroup: 1001"}}}},
			[]string{"uid 1001 (app)", "/data/out is owned by root", "no fsGroup"}, true},
		{"Java AccessDeniedException, the image's USER from the change, pod image named",
			`java.nio.file.AccessDeniedException: /data/out/batch.tmp`,
			Gathered{Commands: []evidence.CommandOutput{lsOut},
				Changes: []evidence.Change{{Service: "exporter", Kind: "deploy", Description: "Dockerfile: add USER 10001 (non-root)"}}},
			[]string{"USER 10001", "/data/out is owned by root"}, true},
		{"a Chainguard nonroot image on the pod",
			`EACCES: permission denied, mkdir '/data/out/x'`,
			Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "exporter-7d9f"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "cgr.dev/chainguard/node:latest-nonroot"}}}}}}},
			[]string{"uid 65532"}, true},
		{"not a file refusal: nothing read",
			`psycopg2.OperationalError: FATAL: password authentication failed for user "report"`,
			Gathered{Commands: []evidence.CommandOutput{lsOut}}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &Finding{Kind: KindJobFailed, Subject: "exporter", Time: time.Now()}
			f.setFact("line", c.line)
			fileAccessWhy(&c.ev, f)
			if got := f.fact("file_refused") != ""; got != c.refused {
				t.Fatalf("file_refused = %v, want %v", got, c.refused)
			}
			why := f.fact("file_why")
			if len(c.want) == 0 && why != "" {
				t.Errorf("unexpected why: %s", why)
			}
			for _, w := range c.want {
				if !strings.Contains(why, w) {
					t.Errorf("why lacks %q: %s", w, why)
				}
			}
			if len(c.want) > 0 {
				h := &Hypothesis{Kind: KindJobFailed, Subject: "exporter", Primary: []*Finding{f}}
				if !ownerOrUser(h) {
					t.Error("calibration does not see the owner or user read")
				}
				if d := jobFailed.describe(h, Scope{}); strings.Contains(d, "authentication") || !strings.Contains(d, "refused the file access") {
					t.Errorf("description mislabels the refusal: %s", d)
				}
			}
		})
	}
}
