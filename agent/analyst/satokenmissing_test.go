package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A crash whose last lines say the client could not read the mounted
// service account token, as client-go (klog), fabric8, the Python and the
// Node clients print it, with the ServiceAccount or the pod spec that
// turned the mount off; another missing file or a crash of another kind
// is none.
func TestSATokenMissing(t *testing.T) {
	no := false
	state := func(sa string, podAutomount *bool, lines ...string) *containerState {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tenants-ctl-6d9f8b7c5-x2k4p", Namespace: "ops"},
			Spec: corev1.PodSpec{ServiceAccountName: sa, AutomountServiceAccountToken: podAutomount,
				Volumes: []corev1.Volume{{Name: "config"}}}}
		c := &containerState{Pod: p, Spec: &corev1.Container{Name: "manager"}, Status: corev1.ContainerStatus{Name: "manager"},
			Object: "pod ops/tenants-ctl-6d9f8b7c5-x2k4p container manager", Base: Finding{Object: "pod ops/tenants-ctl-6d9f8b7c5-x2k4p"}}
		for _, l := range lines {
			c.LastLines = append(c.LastLines, evidence.LogLine{Text: l})
		}
		return c
	}
	clientGo := "F0312 07:14:02.118410       1 main.go:88] unable to load in-cluster configuration: open /var/run/secrets/kubernetes.io/serviceaccount/token: no such file or directory"
	fabric8 := "Caused by: java.io.FileNotFoundException: /var/run/secrets/kubernetes.io/serviceaccount/token (No such file or directory)"
	python := "kubernetes.config.config_exception.ConfigException: Service token file does not exist."
	node := "Error: ENOENT: no such file or directory, open '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt'"
	crash := Finding{Kind: KindCrashLoop, Subject: "tenants-ctl", Evidence: []string{"CrashLoopBackOff, exit code 255"}}
	cases := []struct {
		name string
		c    *containerState
		ok   bool
		want []string
	}{
		{"client-go, ServiceAccount without automount", state("tenants-ctl", nil, "I0312 07:14:02.118 starting", clientGo), true, []string{"automountServiceAccountToken: false on its ServiceAccount tenants-ctl", "RBAC permissions are not in question"}},
		{"fabric8, pod spec without automount", state("default", &no, fabric8), true, []string{"automountServiceAccountToken: false on its pod spec", "FileNotFoundException"}},
		{"Python client", state("tenants-ctl", nil, "Traceback (most recent call last):", python), true, []string{"Service token file does not exist"}},
		{"Node client", state("tenants-ctl", nil, node), true, []string{"ca.crt"}},
		{"another missing file: none", state("tenants-ctl", nil, "open /etc/tenants/config.yaml: no such file or directory"), false, nil},
		{"a crash of another kind: none", state("tenants-ctl", nil, "panic: runtime error: invalid memory address or nil pointer dereference"), false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := saTokenMissingFromCrash(crash, c.c)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v: %+v", ok, c.ok, f)
			}
			if !ok {
				return
			}
			h := &Hypothesis{Kind: KindSATokenMissing, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
