package analyst

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// A ConfigMap or Secret edited while the pods that mount one of its keys
// with subPath run on: a ConfigMap volume and a Secret volume, named by the
// change as "<name> ConfigMap" or by a kubectl command. A mount of the whole
// volume (refreshed in place), a pod started after the edit, a release of
// the workload and a change naming another object are none.
func TestConfigNotRefreshed(t *testing.T) {
	dep := func(subPath string, secret bool) appsv1.Deployment {
		vol := corev1.Volume{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "pricing-rules"}}}}
		if secret {
			vol = corev1.Volume{Name: "settings", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "pricing-rules"}}}
		}
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "pricing", Namespace: "shop"}}
		d.Spec.Template.Spec.Volumes = []corev1.Volume{vol}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "settings", MountPath: "/etc/pricing/rules.json", SubPath: subPath}}}}
		if subPath == "" {
			d.Spec.Template.Spec.Containers[0].VolumeMounts[0].MountPath = "/etc/pricing"
		}
		return d
	}
	pod := func(name string, started time.Time) corev1.Pod {
		st := metav1.NewTime(started)
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "pricing-7c9d8b6f5"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &st}}
	}
	edit := win.Start.Add(10 * time.Minute)
	old := []corev1.Pod{pod("pricing-7c9d8b6f5-a1b2c", edit.Add(-72*time.Hour)), pod("pricing-7c9d8b6f5-d3e4f", edit.Add(-70*time.Hour))}
	oneNew := []corev1.Pod{pod("pricing-7c9d8b6f5-a1b2c", edit.Add(-72*time.Hour)), pod("pricing-7c9d8b6f5-x9y8z", edit.Add(5*time.Minute))}
	cmEdit := evidence.Change{Timestamp: edit, Service: "pricing", Kind: "config", Description: "pricing-rules ConfigMap: vat_rate_de 0.19 -> 0.07"}
	kubectlEdit := evidence.Change{Timestamp: edit, Kind: "config", Description: "kubectl -n shop apply -f pricing-rules.yaml"}
	release := evidence.Change{Timestamp: edit, Service: "pricing", Kind: "deploy", Description: "pricing 3.2.0: new pricing-rules format"}
	other := evidence.Change{Timestamp: edit, Service: "pricing", Kind: "config", Description: "pricing-rules-canary ConfigMap: enable rule 7"}
	log := LogSet{Subject: "pricing", Templates: []analysis.LogTemplate{{Example: `level=info msg="watching rules file for changes" path=/etc/pricing/rules.json`}}}
	cases := []struct {
		name    string
		dep     appsv1.Deployment
		pods    []corev1.Pod
		change  evidence.Change
		subject string
		want    []string
	}{
		{"configmap, subPath", dep("rules.json", false), old, cmEdit, "pricing", []string{"ConfigMap pricing-rules", "subPath", "All 2 pods started before", "watches the file"}},
		{"secret, subPath, a kubectl apply", dep("rules.json", true), old, kubectlEdit, "pricing", []string{"Secret pricing-rules", "/etc/pricing/rules.json"}},
		{"whole volume: none", dep("", false), old, cmEdit, "", nil},
		{"a pod started after the edit: none", dep("rules.json", false), oneNew, cmEdit, "", nil},
		{"a release: none", dep("rules.json", false), old, release, "", nil},
		{"another object: none", dep("rules.json", false), old, other, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{K8s: K8sEvidence{Deployments: []appsv1.Deployment{c.dep}, Pods: c.pods}, Changes: []evidence.Change{c.change}, Logs: []LogSet{log}, Window: win, Scope: Scope{Namespace: "shop"}}
			f := onlyFinding(t, detectConfigNotRefreshed(g), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindConfigNotRefreshed, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}

// A ConfigMap key read as an environment variable (configMapKeyRef, or
// envFrom) is set when the container starts: an edit of the ConfigMap
// naming the variable, with every pod older, never reaches them. The
// workload may be known only from a projection of its container (yq).
// A change naming another key of the ConfigMap, or a Secret read so, is
// none.
func TestConfigNotRefreshedEnv(t *testing.T) {
	edit := win.Start.Add(10 * time.Minute)
	st := metav1.NewTime(edit.Add(-50 * time.Hour))
	pods := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "gw-7c9d8b6f5-a1b2c", Namespace: "edge", OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "gw-7c9d8b6f5"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &st}}}
	keyRef := func(cm, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key}}}
	}
	dep := func(ctr corev1.Container) []appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "edge"}}
		d.Spec.Template.Spec.Containers = []corev1.Container{ctr}
		return []appsv1.Deployment{d}
	}
	const projection = `image: registry.example.com/gw:2.1.0
env:
  - name: MAX_CONNS
    valueFrom:
      configMapKeyRef:
        name: gw-settings
        key: MAX_CONNS
volumeMounts: null`
	cmEdit := evidence.Change{Timestamp: edit, Service: "gw", Kind: "config", Description: "kubectl -n edge edit configmap gw-settings: MAX_CONNS 200 -> 800"}
	for _, c := range []struct {
		name    string
		deps    []appsv1.Deployment
		cmds    []evidence.CommandOutput
		change  evidence.Change
		subject string
		want    []string
	}{
		{"configMapKeyRef", dep(corev1.Container{Name: "gw", Env: []corev1.EnvVar{keyRef("gw-settings", "MAX_CONNS")}}), nil, cmEdit, "gw",
			[]string{"reads MAX_CONNS of the ConfigMap gw-settings as an environment variable", "only a restart"}},
		{"envFrom", dep(corev1.Container{Name: "gw", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gw-settings"}}}}}), nil, cmEdit, "gw",
			[]string{"its keys (envFrom)"}},
		{"a yq projection of the container", nil, []evidence.CommandOutput{{Command: `kubectl get deploy gw -n edge -o yaml | yq '.spec.template.spec.containers[0] | {"image": .image, "env": .env, "volumeMounts": .volumeMounts}'`, Namespace: "edge", Lines: strings.Split(projection, "\n")}}, cmEdit, "gw",
			[]string{"reads MAX_CONNS of the ConfigMap gw-settings"}},
		{"another key: none", dep(corev1.Container{Name: "gw", Env: []corev1.EnvVar{keyRef("gw-settings", "LOG_LEVEL")}}), nil, cmEdit, "", nil},
		{"a Secret read so: none", dep(corev1.Container{Name: "gw", Env: []corev1.EnvVar{{Name: "MAX_CONNS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gw-settings"}, Key: "MAX_CONNS"}}}}}), nil, cmEdit, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{K8s: K8sEvidence{Deployments: c.deps, Pods: pods}, Commands: c.cmds, Changes: []evidence.Change{c.change}, Window: win, Scope: Scope{Namespace: "edge"}}
			f := onlyFinding(t, detectConfigNotRefreshed(g), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindConfigNotRefreshed, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
