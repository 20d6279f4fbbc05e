package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// A workload in trouble whose pods read a Secret that its controller
// cannot sync: a SealedSecret the controller cannot decrypt (its
// ErrUnsealFailed event, its klog line), an ExternalSecret whose provider
// refuses the store (Azure's AADSTS in the controller's JSON log, AWS's
// AccessDeniedException in an UpdateFailed event). A healthy reader, or a
// failing sync of another Secret, is none.
func TestSecretSyncFailed(t *testing.T) {
	at := win.Start.Add(10 * time.Minute)
	pod := func(name string, env []corev1.EnvVar, from []corev1.EnvFromSource, vols []corev1.Volume) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-7b4c5d9f86-q2lfz", Namespace: "shop", Labels: map[string]string{"app": name},
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: name + "-7b4c5d9f86"}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Env: env, EnvFrom: from}}, Volumes: vols},
		}
	}
	keyRef := func(secret, key string) []corev1.EnvVar {
		return []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}}
	}
	envFrom := []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "api-db"}}}}
	vol := []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "worker-creds"}}}}
	event := func(kind, name, reason, msg string, n int32) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: "shop"}, Reason: reason, Message: msg,
			Count: n, FirstTimestamp: metav1.NewTime(at.Add(-time.Hour)), LastTimestamp: metav1.NewTime(at)}
	}
	missingKey := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "checkout-7b4c5d9f86-q2lfz", Namespace: "shop"}, Reason: "Failed",
		Message: "Error: couldn't find key fraud-token in Secret shop/checkout-secrets", Count: 12}
	trouble := func(subject string, kind Kind, line string) []Finding {
		f := Finding{Kind: kind, Subject: subject, Namespace: "shop", Time: at, Severity: SevCritical, Summary: subject + " in trouble"}
		f.setFact("line", line)
		return []Finding{f}
	}
	esoLog := evidence.CommandOutput{Command: "kubectl -n external-secrets logs deploy/external-secrets --since=30m", Lines: []string{
		`{"level":"error","ts":1795690257.4183,"logger":"controllers.ExternalSecret","msg":"error retrieving secret at .data[0], key: api-db-password, err: ClientSecretCredential authentication failed. POST https://login.microsoftonline.com/tenant/oauth2/v2.0/token\n----\nRESPONSE 401 Unauthorized\n{\n  \"error\": \"invalid_client\",\n  \"error_description\": \"AADSTS7000222: The provided client secret keys for app '5c1fa8e3' are expired. Visit the Azure portal to create new keys for your app.\"\n}","ExternalSecret":{"name":"api-db","namespace":"shop"},"SecretStore":{"name":"azure-kv","kind":"ClusterSecretStore"}}`}}
	sealedLog := LogSet{Source: "sealed-secrets-controller-7d9c6b8f4d-xk2p9", Subject: "sealed-secrets-controller", Namespace: "kube-system",
		Templates: []analysis.LogTemplate{{Template: "<*> Error updating <*>", Incident: 3, FirstSeen: at.Add(-5 * time.Minute),
			Example: "2026/11/24 14:24:51 Error updating shop/checkout-secrets, giving up: no key could decrypt secret (fraud-token)"}}}
	cases := []struct {
		name    string
		pods    []corev1.Pod
		events  []corev1.Event
		cmds    []evidence.CommandOutput
		logs    []LogSet
		found   []Finding
		subject string
		want    []string
	}{
		{"SealedSecret event, missing key", []corev1.Pod{pod("checkout", keyRef("checkout-secrets", "fraud-token"), nil, nil)},
			[]corev1.Event{event("SealedSecret", "checkout-secrets", "ErrUnsealFailed", "Failed to unseal: no key could decrypt secret (fraud-token)", 3), missingKey},
			nil, nil, trouble("checkout", KindConfigError, ""), "checkout", []string{"SealedSecret", "no key could decrypt secret (fraud-token)", "without the key fraud-token"}},
		{"the kubelet's event names the Secret, the pod's spec not read", []corev1.Pod{pod("checkout", nil, nil, nil)},
			[]corev1.Event{event("SealedSecret", "checkout-secrets", "ErrUnsealFailed", "Failed to unseal: no key could decrypt secret (fraud-token)", 3), missingKey},
			nil, nil, trouble("checkout", KindConfigError, ""), "checkout", []string{"SealedSecret", "without the key fraud-token"}},
		{"sealed-secrets controller's log line", []corev1.Pod{pod("checkout", keyRef("checkout-secrets", "fraud-token"), nil, nil)},
			nil, nil, []LogSet{sealedLog}, trouble("checkout", KindConfigError, ""), "checkout", []string{"SealedSecret", "shop/checkout-secrets", "no key could decrypt"}},
		{"ExternalSecret, Azure's AADSTS in the controller's JSON log", []corev1.Pod{pod("api", nil, envFrom, nil)},
			nil, []evidence.CommandOutput{esoLog}, nil, trouble("api", KindAuth, `FATAL:  password authentication failed for user "app"`),
			"api", []string{"ExternalSecret", "AADSTS7000222: The provided client secret keys", "ClusterSecretStore azure-kv", "password authentication failed"}},
		{"ExternalSecret, AWS refusal in an UpdateFailed event", []corev1.Pod{pod("worker", nil, nil, vol)},
			[]corev1.Event{event("ExternalSecret", "worker-creds", "UpdateFailed", "error retrieving secret at .data[0], key: prod/worker, err: AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/eso/x is not authorized to perform: secretsmanager:GetSecretValue", 40)},
			nil, nil, trouble("worker", KindCrashLoop, ""), "worker", []string{"ExternalSecret", "AccessDeniedException", "shop/worker-creds"}},
		{"healthy reader: none", []corev1.Pod{pod("checkout", keyRef("checkout-secrets", "fraud-token"), nil, nil)},
			[]corev1.Event{event("SealedSecret", "checkout-secrets", "ErrUnsealFailed", "Failed to unseal: no key could decrypt secret (fraud-token)", 3)},
			nil, nil, nil, "", nil},
		{"another Secret's sync failing: none", []corev1.Pod{pod("checkout", keyRef("checkout-secrets", "fraud-token"), nil, nil)},
			[]corev1.Event{event("ExternalSecret", "grafana-admin", "UpdateFailed", "error retrieving secret at .data[0], key: grafana, err: could not get secret data from provider", 5)},
			nil, nil, trouble("checkout", KindConfigError, ""), "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{Pods: c.pods, Events: c.events}, Commands: c.cmds, Logs: c.logs, Window: win, Scope: Scope{Namespace: "shop"}}
			f := onlyFinding(t, detectSecretSyncFailed(ev, c.found), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindSecretSyncFailed, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			var r recommender
			r.h = h
			recommendSecretSyncFailed(h, Scope{}, &r)
			if len(r.recs) == 0 {
				t.Fatal("no recommendation")
			}
		})
	}
}
