package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	corev1 "k8s.io/api/core/v1"
)

// TestMissingRef names what a CreateContainerConfigError message says is
// missing, as the kubelet prints it.
func TestMissingRef(t *testing.T) {
	cases := []struct{ msg, want string }{
		{`configmap "billing-worker-settings" not found`, "configmap billing-worker-settings"},
		{`secret "db-credentials" not found`, "secret db-credentials"},
		{`couldn't find key DB_PASSWORD in Secret web/web-db`, "key DB_PASSWORD in secret web/web-db"},
		{`container has runAsNonRoot and image will run as root`, ""},
	}
	for _, c := range cases {
		if got := missingRef(c.msg); got != c.want {
			t.Errorf("missingRef(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}

// TestConfigErrorLatestEvent: events of one kind on one pod tell its
// history; the one seen last is its state now. A Secret first not found,
// then found without the key the pod asks for, is missing that key, in
// whichever order the events were listed.
func TestConfigErrorLatestEvent(t *testing.T) {
	const describeEvents = `$ kubectl describe pod web-6f4c8b9d7-r8xvm -n shop
Name:             web-6f4c8b9d7-r8xvm
Namespace:        shop
Status:           Pending
Controlled By:  ReplicaSet/web-6f4c8b9d7
Containers:
  app:
    Image:          ghcr.io/acme/web:3.2.0
    State:          Waiting
      Reason:       CreateContainerConfigError
    Ready:          False
    Restart Count:  0
Events:
  Type     Reason     Age                  From               Message
  ----     ------     ----                 ----               -------
  Normal   Scheduled  35m                  default-scheduler  Successfully assigned shop/web-6f4c8b9d7-r8xvm to node-1
  Warning  Failed     25m (x12 over 35m)   kubelet            Error: secret "web-db" not found
  Normal   Pulled     30s (x158 over 35m)  kubelet            Container image "ghcr.io/acme/web:3.2.0" already present on machine
  Warning  Failed     30s (x112 over 25m)  kubelet            Error: couldn't find key DB_PASSWORD in Secret shop/web-db
`
	const getEvents = `$ kubectl get events -n shop --sort-by=.lastTimestamp
LAST SEEN   TYPE      REASON      OBJECT                    MESSAGE
30s         Warning   Failed      pod/web-6f4c8b9d7-r8xvm   Error: couldn't find key DB_PASSWORD in Secret shop/web-db
25m         Warning   Failed      pod/web-6f4c8b9d7-r8xvm   Error: secret "web-db" not found
`
	now := time.Date(2026, 5, 6, 13, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	for name, session := range map[string]string{"describe page": describeEvents, "events newest first": getEvents} {
		res := kubetext.Parse([]byte(session), now)
		var pods []corev1.Pod
		for _, o := range res.Objects {
			if p, ok := o.(*corev1.Pod); ok {
				pods = append(pods, *p)
			}
		}
		var got *Finding
		for _, f := range DetectEvents(res.Events, pods, w) {
			if f.Kind == KindConfigError {
				got = &f
			}
		}
		if got == nil {
			t.Fatalf("%s: no config error from %d events", name, len(res.Events))
		}
		if m := got.fact("missing"); m != "key DB_PASSWORD in secret shop/web-db" {
			t.Errorf("%s: missing %q, want the key", name, m)
		}
		if !strings.Contains(got.Summary, "couldn't find key") || !strings.Contains(got.Evidence[0], "couldn't find key") {
			t.Errorf("%s: summary %q, evidence %q: the latest event should lead", name, got.Summary, got.Evidence)
		}
	}
}

// TestLatestEventBackOff: a back-off that goes on after the failure it
// repeats stopped being logged is not a new state: the failure keeps the
// facts.
func TestLatestEventBackOff(t *testing.T) {
	const session = `$ kubectl describe pod rates-6f7b8d9c45-k9wtx -n logistics
Name:             rates-6f7b8d9c45-k9wtx
Namespace:        logistics
Status:           Pending
Controlled By:  ReplicaSet/rates-6f7b8d9c45
Containers:
  rates:
    Image:          ghcr.io/haulmark/rates:1.0.0
    State:          Waiting
      Reason:       ImagePullBackOff
    Ready:          False
    Restart Count:  0
Events:
  Type     Reason     Age                From     Message
  ----     ------     ----               ----     -------
  Warning  Failed     22m (x4 over 24m)  kubelet  Failed to pull image "ghcr.io/haulmark/rates:1.0.0": rpc error: code = NotFound desc = failed to pull and unpack image "ghcr.io/haulmark/rates:1.0.0": not found
  Warning  Failed     30s (x43 over 24m) kubelet  Error: ImagePullBackOff
`
	now := time.Date(2027, 1, 20, 17, 21, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	res := kubetext.Parse([]byte(session), now)
	fs := DetectEvents(res.Events, nil, w)
	if len(fs) == 0 {
		t.Fatalf("no finding from %d events", len(res.Events))
	}
	for _, f := range fs {
		if !strings.Contains(f.fact("message"), "not found") || !strings.Contains(f.Summary, "Failed to pull") {
			t.Errorf("%s: message %q, summary %q: the back-off superseded the failure", f.Kind, f.fact("message"), f.Summary)
		}
	}
}

// TestVolumeKeyMissing: a ConfigMap or Secret volume (or a projected one)
// that asks for an item its object does not hold keeps the pods in
// ContainerCreating; the kubelet's FailedMount names the volume and the
// key, the pod spec the object.
func TestVolumeKeyMissing(t *testing.T) {
	testEvents(t, configError, []eventCase{
		{"Pod", "docs-site-5c6d8f9b7-2mvlq", "FailedMount", corev1.EventTypeWarning,
			`MountVolume.SetUp failed for volume "nginx-conf" : configmap references non-existent config key: default.conf`,
			KindConfigError, []string{"docs-site pods stay in ContainerCreating", "volume nginx-conf", "key default.conf of its ConfigMap, which has no such key"}},
		{"Pod", "gateway-7d9f8b6c5-x2k9p", "FailedMount", corev1.EventTypeWarning,
			`MountVolume.SetUp failed for volume "tls" : references non-existent secret key: tls.crt`,
			KindConfigError, []string{"volume tls", "key tls.crt of its Secret"}},
		{"Pod", "agent-0", "FailedMount", corev1.EventTypeWarning,
			`MountVolume.SetUp failed for volume "bundle" : configmap references non-existent config key: ca.pem`,
			KindConfigError, []string{"volume bundle", "key ca.pem"}},
	})
	// The generic timeout stays a mount failure.
	testEvents(t, mountFailure, []eventCase{
		{"Pod", "docs-site-5c6d8f9b7-2mvlq", "FailedMount", corev1.EventTypeWarning,
			"Unable to attach or mount volumes: unmounted volumes=[nginx-conf], unattached volumes=[nginx-conf kube-api-access-5xv9t]: timed out waiting for the condition",
			KindMountFailure, []string{"volume mount fails"}},
	})

	now := time.Date(2026, 10, 12, 11, 5, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	for name, c := range map[string]struct{ volume, msg, want string }{
		"configmap volume": {`  nginx-conf:
    Type:      ConfigMap (a volume populated by a ConfigMap)
    Name:      docs-site-nginx
    Optional:  false`, `MountVolume.SetUp failed for volume "nginx-conf" : configmap references non-existent config key: default.conf`,
			"key default.conf of ConfigMap docs-site-nginx, which has no such key"},
		"secret volume": {`  nginx-conf:
    Type:        Secret (a volume populated by a Secret)
    SecretName:  docs-site-tls
    Optional:    false`, `MountVolume.SetUp failed for volume "nginx-conf" : references non-existent secret key: tls.key`,
			"key tls.key of Secret docs-site-tls, which has no such key"},
	} {
		session := `$ kubectl describe pod docs-site-5c6d8f9b7-2mvlq -n web
Name:             docs-site-5c6d8f9b7-2mvlq
Namespace:        web
Status:           Pending
Controlled By:    ReplicaSet/docs-site-5c6d8f9b7
Containers:
  nginx:
    Image:          europe-docker.pkg.dev/acme-web/sites/docs-site:2026.10.12-2
    State:          Waiting
      Reason:       ContainerCreating
    Ready:          False
    Restart Count:  0
Volumes:
` + c.volume + `
Events:
  Type     Reason       Age                 From               Message
  ----     ------       ----                ----               -------
  Warning  FailedMount  55s (x23 over 31m)  kubelet            ` + c.msg + `
`
		res := kubetext.Parse([]byte(session), now)
		ev := &Gathered{Window: w}
		for _, o := range res.Objects {
			if p, ok := o.(*corev1.Pod); ok {
				ev.K8s.Pods = append(ev.K8s.Pods, *p)
			}
		}
		found := DetectEvents(res.Events, ev.K8s.Pods, w)
		fs := detectVolumeKeySource(ev, found)
		if len(fs) != 1 {
			t.Fatalf("%s: findings %+v from %+v", name, fs, found)
		}
		h := &Hypothesis{Kind: KindConfigError, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
		if d := describe(h, Scope{}); !strings.Contains(d, c.want) {
			t.Errorf("%s: %q does not say %q", name, d, c.want)
		}
	}
}

// TestLatestEventReplaced: a scheduling failure that began only after an
// earlier one stopped, and went on, is the pod's state now, however few
// minutes apart they are (a claim bound since, its volume in a zone the
// nodes are not in); two failures seen together keep the first's facts.
func TestLatestEventReplaced(t *testing.T) {
	page := func(rows ...string) string {
		return `$ kubectl describe pod db-3 -n data
Name:             db-3
Namespace:        data
Status:           Pending
Controlled By:  StatefulSet/db
Events:
  Type     Reason            Age                 From               Message
  ----     ------            ----                ----               -------
` + strings.Join(rows, "\n") + "\n"
	}
	const unbound = "  Warning  FailedScheduling  63m                 default-scheduler  0/9 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/9 nodes are available: 9 Preemption is not helpful for scheduling."
	const zone = "  Warning  FailedScheduling  58m (x12 over 62m)  default-scheduler  0/9 nodes are available: 3 node(s) had volume node affinity conflict, 6 node(s) didn't match Pod's node affinity/selector. preemption: 0/9 nodes are available: 9 Preemption is not helpful for scheduling."
	const together = "  Warning  FailedScheduling  58m (x12 over 64m)  default-scheduler  0/9 nodes are available: 3 node(s) had volume node affinity conflict, 6 node(s) didn't match Pod's node affinity/selector. preemption: 0/9 nodes are available: 9 Preemption is not helpful for scheduling."
	now := time.Date(2026, 11, 22, 16, 10, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-2 * time.Hour), End: now}
	for _, tc := range []struct {
		name string
		rows []string
		want string
	}{
		{"replaced", []string{unbound, zone}, "volume node affinity conflict"},
		{"replaced, newest first", []string{zone, unbound}, "volume node affinity conflict"},
		{"seen together", []string{unbound, together}, "unbound immediate"},
	} {
		res := kubetext.Parse([]byte(page(tc.rows...)), now)
		var got *Finding
		for _, f := range DetectEvents(res.Events, nil, w) {
			if f.Kind == KindUnschedulable {
				got = &f
			}
		}
		if got == nil {
			t.Fatalf("%s: no unschedulable finding from %d events", tc.name, len(res.Events))
		}
		if !strings.Contains(got.fact("message"), tc.want) {
			t.Errorf("%s: message %q, want %q", tc.name, got.fact("message"), tc.want)
		}
	}
}
