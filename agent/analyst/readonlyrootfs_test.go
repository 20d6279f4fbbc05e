package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A crash whose last lines say a write failed with EROFS in a container
// whose root file system is read-only: Tomcat's tempDir, Python's errno 30
// and nginx's mkdir, the setting added by a Kyverno mutate rule or a
// Gatekeeper Assign mutator or in the template itself; a writable root
// file system, or a crash that says nothing of a read-only one, is none.
func TestReadOnlyRootFS(t *testing.T) {
	yes, no := true, false
	state := func(ro *bool, annotations map[string]string, lines ...string) *containerState {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ledger-7c9b5d8f46-2mfqd", Namespace: "fin", Annotations: annotations}}
		spec := &corev1.Container{Name: "ledger"}
		if ro != nil {
			spec.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ro}
		}
		c := &containerState{Pod: p, Spec: spec, Status: corev1.ContainerStatus{Name: "ledger"}, Object: "pod fin/ledger-7c9b5d8f46-2mfqd container ledger"}
		for _, l := range lines {
			c.LastLines = append(c.LastLines, evidence.LogLine{Text: l})
		}
		return c
	}
	kyverno := map[string]string{"policies.kyverno.io/last-applied-patches": "add-ro-rootfs.restrict-pods.kyverno.io: added /spec/containers/0/securityContext/readOnlyRootFilesystem\n"}
	gatekeeper := map[string]string{"gatekeeper.sh/mutation-id": "3f1c", "gatekeeper.sh/mutations": "Assign//readonly-root:1"}
	tomcat := []string{
		"Caused by: org.springframework.boot.web.server.WebServerException: Unable to create tempDir. java.io.tmpdir is set to /tmp",
		"Caused by: java.nio.file.FileSystemException: /tmp/tomcat.8080.731850: Read-only file system"}
	python := []string{`  File "/usr/local/lib/python3.12/tempfile.py", line 368, in mkdtemp`, "OSError: [Errno 30] Read-only file system: '/app/.cache/matplotlib'"}
	nginx := []string{`nginx: [emerg] mkdir() "/var/cache/nginx/client_temp" failed (30: Read-only file system)`}
	crash := Finding{Kind: KindCrashLoop, Subject: "ledger", Evidence: []string{"CrashLoopBackOff, exit code 1"}}
	cases := []struct {
		name   string
		c      *containerState
		ok     bool
		want   []string
		policy string
	}{
		{"Tomcat tempDir, Kyverno mutate rule", state(&yes, kyverno, tomcat...), true, []string{"/tmp/tomcat.8080.731850", "admission policy restrict-pods (rule add-ro-rootfs)", "older pods keep running"}, "restrict-pods"},
		{"Python errno 30, Gatekeeper Assign", state(&yes, gatekeeper, python...), true, []string{"/app/.cache/matplotlib", "readonly-root"}, "readonly-root"},
		{"nginx mkdir, set in the template", state(&yes, nil, nginx...), true, []string{"/var/cache/nginx/client_temp", "EROFS"}, ""},
		{"writable root file system: none", state(&no, kyverno, tomcat...), false, nil, ""},
		{"no security context: none", state(nil, nil, nginx...), false, nil, ""},
		{"read-only root, crash of another kind: none", state(&yes, kyverno, "java.lang.IllegalStateException: missing property ledger.url"), false, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := readOnlyRootFSFromCrash(crash, c.c)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v: %+v", ok, c.ok, f)
			}
			if !ok {
				return
			}
			if f.fact("policy") != c.policy {
				t.Errorf("policy %q, want %q", f.fact("policy"), c.policy)
			}
			h := &Hypothesis{Kind: KindReadOnlyRootFS, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
	h := &Hypothesis{Kind: KindReadOnlyRootFS, Subject: "ledger", Primary: []*Finding{{Kind: KindReadOnlyRootFS, Facts: map[string]string{"policy": "restrict-pods"}}}}
	if !readOnlyRootFS.fitsChange(h, &Finding{Kind: KindConfigChange, Summary: "config change: platform-policies: add restrict-pods ClusterPolicy"}) ||
		readOnlyRootFS.fitsChange(h, &Finding{Kind: KindInfraChange, Summary: "node group general-v30 -> general-v31 (new AMI)"}) {
		t.Error("only the policy's change triggers it, not the node upgrade that recreated the pods")
	}
}
