package analyst

import (
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestQuotaHolder(t *testing.T) {
	pod := func(name string, mem string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shared"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		c := corev1.Container{Name: "main"}
		if mem != "" {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}
		}
		p.Spec.Containers = []corev1.Container{c}
		return p
	}
	pods := func(prefix string, n int, mem string) []corev1.Pod {
		var out []corev1.Pod
		for i := 0; i < n; i++ {
			out = append(out, pod(fmt.Sprintf("%s-%05d", prefix, i), mem))
		}
		return out
	}
	job := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "chargeback-backfill", Namespace: "shared"}}
	job.Spec.Template.Spec.Containers = []corev1.Container{{Name: "backfill", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}}}}
	cases := []struct {
		name string
		pods []corev1.Pod
		jobs []batchv1.Job
		want string
	}{
		{"a Job's pods, requests from its template", append(pods("chargeback-backfill", 20, ""), pods("payments-api-5b8f7d9c6", 6, "2Gi")...), []batchv1.Job{job}, "chargeback-backfill's 20 running pods (80Gi of requests.memory in all)"},
		{"a deployment's pods, requests in their spec", append(pods("reports-7d9c8b6f5", 12, "6Gi"), pods("web-5b8f7d9c6", 4, "2Gi")...), nil, "reports's 12 running pods (72Gi"},
		{"requests unknown, most pods", append(pods("etl-loader-7d9c8b6f5", 9, ""), pods("web-5b8f7d9c6", 2, "")...), nil, "etl-loader's 9 running pods"},
		{"held by many small workloads: none", append(append(pods("a-svc", 3, "4Gi"), pods("b-svc", 3, "4Gi")...), pods("web-5b8f7d9c6", 4, "4Gi")...), nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &Finding{Kind: KindQuota, Subject: "web", Namespace: "shared", Facts: map[string]string{
				"quota": "team-compute", "quota_resource": "requests.memory", "quota_requested": "2Gi", "quota_used": "95Gi", "quota_hard": "96Gi"}}
			if c.name == "requests unknown, most pods" {
				f.Facts["quota_resource"] = "pods"
			}
			quotaHolder(&Gathered{K8s: K8sEvidence{Pods: c.pods, Jobs: c.jobs}}, f)
			h := &Hypothesis{Kind: KindQuota, Subject: "web", Primary: []*Finding{f}}
			d := describe(h, Scope{})
			if c.want == "" && strings.Contains(d, "held by") || c.want != "" && !strings.Contains(d, c.want) {
				t.Errorf("description %q, want %q", d, c.want)
			}
		})
	}
}
