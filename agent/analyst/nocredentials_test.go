package analyst

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A run whose cloud SDK found no credentials is followed to the
// ServiceAccount its pods run as: one without the identity annotation the
// namespace's other ServiceAccounts carry is why.
func TestNoCredentialsWhy(t *testing.T) {
	end := time.Date(2026, 11, 26, 7, 40, 0, 0, time.UTC)
	sa := func(name string, created time.Time, ann map[string]string, labels map[string]string) corev1.ServiceAccount {
		return corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "billing", CreationTimestamp: metav1.NewTime(created), Annotations: ann, Labels: labels}}
	}
	irsa := map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/reports-prod"}
	bare := sa("invoice-export", end.Add(-40*time.Hour), map[string]string{"meta.helm.sh/release-name": "billing-jobs"}, map[string]string{"helm.sh/chart": "billing-jobs-3.1.0"})
	peers := []corev1.ServiceAccount{bare, sa("reports", end.Add(-400*24*time.Hour), irsa, nil), sa("default", end.Add(-900*24*time.Hour), nil, nil)}
	podAs := func(name string) []corev1.Pod {
		return []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "invoice-export-29927640-m6jd5", Namespace: "billing"}, Spec: corev1.PodSpec{ServiceAccountName: name}}}
	}
	jobAs := func(name string) []batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "invoice-export-29927640", Namespace: "billing"}}
		j.Spec.Template.Spec.ServiceAccountName = name
		return []batchv1.Job{j}
	}
	win := Window{Start: end.Add(-time.Hour), End: end}
	cases := []struct {
		name string
		line string
		k8s  K8sEvidence
		want []string // in the description; none: nothing concluded
	}{
		{"botocore, the pod's ServiceAccount, recreated by a chart",
			`botocore.exceptions.NoCredentialsError: Unable to locate credentials`,
			K8sEvidence{Pods: podAs("invoice-export"), ServiceAccounts: peers},
			[]string{"ServiceAccount invoice-export carries no eks.amazonaws.com/role-arn", "IRSA", "reports in the namespace carry it", "by the chart billing-jobs-3.1.0"}},
		{"AWS SDK for Java v2, the Job's pod template (the pod is gone)",
			`Exception in thread "main" software.amazon.awssdk.core.exception.SdkClientException: Unable to load credentials from any of the providers in the chain AwsCredentialsProviderChain(credentialsProviders=[SystemPropertyCredentialsProvider(), EnvironmentVariableCredentialsProvider(), WebIdentityTokenCredentialsProvider(), ProfileCredentialsProvider(), ContainerCredentialsProvider(), InstanceProfileCredentialsProvider()])`,
			K8sEvidence{Jobs: jobAs("invoice-export"), ServiceAccounts: peers},
			[]string{"ServiceAccount invoice-export", "eks.amazonaws.com/role-arn"}},
		{"AWS SDK for Go v1",
			`2026/11/26 02:01:55 upload: NoCredentialProviders: no valid providers in chain. Deprecated.`,
			K8sEvidence{Pods: podAs("invoice-export"), ServiceAccounts: peers},
			[]string{"ServiceAccount invoice-export"}},
		{"AWS SDK for Go v2",
			`operation error S3: PutObject, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found, operation error ec2imds: GetMetadata, http response error StatusCode: 404, request to EC2 IMDS failed`,
			K8sEvidence{Pods: podAs("invoice-export"), ServiceAccounts: peers},
			[]string{"ServiceAccount invoice-export"}},
		{"AWS SDK for JavaScript v3",
			`CredentialsProviderError: Could not load credentials from any providers`,
			K8sEvidence{Pods: podAs("invoice-export"), ServiceAccounts: peers},
			[]string{"ServiceAccount invoice-export"}},
		{"the ServiceAccount carries its role: not this",
			`botocore.exceptions.NoCredentialsError: Unable to locate credentials`,
			K8sEvidence{Pods: podAs("reports"), ServiceAccounts: peers}, nil},
		{"no ServiceAccount of the namespace carries an identity: nothing says one is used",
			`botocore.exceptions.NoCredentialsError: Unable to locate credentials`,
			K8sEvidence{Pods: podAs("invoice-export"), ServiceAccounts: []corev1.ServiceAccount{bare}}, nil},
		{"the ServiceAccount was not read",
			`botocore.exceptions.NoCredentialsError: Unable to locate credentials`,
			K8sEvidence{Pods: podAs("invoice-export")}, nil},
		{"a denial, not missing credentials",
			`botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the PutObject operation: Access Denied`,
			K8sEvidence{Pods: podAs("invoice-export"), ServiceAccounts: peers}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &Finding{Kind: KindJobFailed, Subject: "invoice-export", Namespace: "billing", Time: end.Add(-5 * time.Hour)}
			f.setFact("line", c.line)
			f.setFact("job", "invoice-export-29927640")
			f.setFact("cronjob", "invoice-export")
			f.setFact("pod", "invoice-export-29927640-m6jd5")
			ev := &Gathered{K8s: c.k8s, Window: win}
			noCredentialsWhy(ev, f)
			h := &Hypothesis{Kind: KindJobFailed, Subject: "invoice-export", Primary: []*Finding{f}}
			d := jobFailed.describe(h, Scope{})
			if len(c.want) == 0 {
				if f.fact("no_creds_sa") != "" || strings.Contains(d, "carries no") {
					t.Errorf("concluded a ServiceAccount without an identity: %s", d)
				}
				return
			}
			wantDescribed(t, h, Scope{}, c.want...)
			r := &recommender{h: h}
			jobFailed.recommend(h, Scope{}, r)
			if len(r.recs) == 0 || !strings.Contains(r.recs[0].Action, "eks.amazonaws.com/role-arn") || !strings.Contains(r.recs[0].Action, "invoice-export") {
				t.Errorf("first recommendation: %+v", r.recs)
			}
		})
	}
}
