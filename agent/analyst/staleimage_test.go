package analyst

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/analysis"
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
		d := describe(h, Scope{})
		for _, w := range []string{"router-5d7c8b9f6-4kq2x", "sha256:444444444444", "sha256:999999999999", "PKIX path building failed", "image"} {
			if !strings.Contains(d, w) {
				t.Errorf("%s: %q does not say %q", tc.name, d, w)
			}
		}
		if fs[0].Subject != "router" || len(fs[0].Evidence) < 2 {
			t.Errorf("%s: %+v", tc.name, fs[0])
		}
	}
}
