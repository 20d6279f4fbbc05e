package analyst

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A paused Deployment whose template never rolls out: as kubectl describe
// prints it (only the Progressing condition's reason DeploymentPaused, the
// updated count), as get -o yaml/json has it (spec.paused with the
// condition "Deployment is paused"), and with only spec.paused and the
// ReplicaSets showing no pods of the template's image. Paused with every
// replica updated (nothing pending), paused half-way (both versions
// serve), or a Deployment simply progressing, is none.
func TestDeploymentPaused(t *testing.T) {
	four := int32(4)
	tmpl := func(img string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "quotes", Image: img}}}}
	}
	dep := func(paused bool, cond *appsv1.DeploymentCondition, updated int32) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "quotes", Namespace: "sales"},
			Spec:   appsv1.DeploymentSpec{Replicas: &four, Paused: paused, Template: tmpl("registry.local/quotes:2.1.0")},
			Status: appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: updated, AvailableReplicas: 4}}
		if cond != nil {
			d.Status.Conditions = []appsv1.DeploymentCondition{*cond}
		}
		return d
	}
	describeCond := &appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionUnknown, Reason: "DeploymentPaused"}
	yamlCond := &appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionUnknown, Reason: "DeploymentPaused", Message: "Deployment is paused"}
	progressing := &appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}
	oldRS := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "quotes-5d8f7c9b6", Namespace: "sales",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "quotes"}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &four, Template: tmpl("registry.local/quotes:2.0.3")}, Status: appsv1.ReplicaSetStatus{Replicas: 4}}
	three, one := int32(3), int32(1)
	threeOld := oldRS
	threeOld.Spec.Replicas, threeOld.Status.Replicas = &three, 3
	newReady := func(ready int32) appsv1.ReplicaSet {
		return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "quotes-7b5c6d8f9d", Namespace: "sales",
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "quotes"}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: &one, Template: tmpl("registry.local/quotes:2.1.0")}, Status: appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: ready}}
	}
	halfUnavailable := dep(true, yamlCond, 1)
	halfUnavailable.Status.AvailableReplicas, halfUnavailable.Status.UnavailableReplicas = 3, 1
	cases := []struct {
		name    string
		deps    []appsv1.Deployment
		rss     []appsv1.ReplicaSet
		subject string
		want    []string
	}{
		{"describe: condition only", []appsv1.Deployment{dep(false, describeCond, 0)}, nil, "quotes", []string{"paused", "DeploymentPaused", "quotes:2.1.0", "0 of 4"}},
		{"yaml: spec.paused and condition", []appsv1.Deployment{dep(true, yamlCond, 0)}, []appsv1.ReplicaSet{oldRS}, "quotes", []string{"paused", "quotes:2.0.3", "old pods keep serving"}},
		{"spec.paused, the template's image runs nowhere", []appsv1.Deployment{dep(true, nil, 4)}, []appsv1.ReplicaSet{oldRS}, "quotes", []string{"spec.paused: true"}},
		{"paused with every replica updated: none", []appsv1.Deployment{dep(true, yamlCond, 4)}, nil, "", nil},
		{"paused half-way, the new version's pods all available (describe: 4 desired | 1 updated | 4 available)", []appsv1.Deployment{dep(false, describeCond, 1)}, nil, "quotes",
			[]string{"paused mid-rollout", "1 of 4 replicas run its template", "quotes:2.1.0", "nothing fails on the new version"}},
		{"paused half-way, the new ReplicaSet ready beside the old", []appsv1.Deployment{dep(true, yamlCond, 1)}, []appsv1.ReplicaSet{threeOld, newReady(1)}, "quotes",
			[]string{"paused mid-rollout", "quotes-5d8f7c9b6 (registry.local/quotes:2.0.3, 3 pods)"}},
		{"paused half-way, the new version's pod not ready: none", []appsv1.Deployment{halfUnavailable}, []appsv1.ReplicaSet{threeOld, newReady(0)}, "", nil},
		{"paused half-way, one unavailable, ReplicaSets unknown: none", []appsv1.Deployment{halfUnavailable}, nil, "", nil},
		{"progressing, not paused: none", []appsv1.Deployment{dep(false, progressing, 0)}, []appsv1.ReplicaSet{oldRS}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := onlyFinding(t, detectDeploymentPaused(&K8sEvidence{Deployments: c.deps, ReplicaSets: c.rss}, win), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindDeploymentPaused, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
