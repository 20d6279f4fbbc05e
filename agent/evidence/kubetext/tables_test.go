package kubetext_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// testdata/tables.txt holds kubectl get tables the goldens do not show:
// pods in many states, older event columns, filtered output, a secrets
// table. Their columns follow kube-apiserver's printers (kubectl prints the
// columns the API server sends).

func object[T runtime.Object](t *testing.T, res *kubetext.Result, ns, name string) T {
	t.Helper()
	for _, o := range res.Objects {
		if v, ok := o.(T); ok {
			m := o.(metav1.Object)
			if m.GetName() == name && m.GetNamespace() == ns {
				return v
			}
		}
	}
	var zero T
	t.Fatalf("%T %s/%s not read", zero, ns, name)
	return zero
}

func TestGetTables(t *testing.T) {
	data, err := os.ReadFile("testdata/tables.txt")
	if err != nil {
		t.Fatal(err)
	}
	ref := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	res := kubetext.Parse(data, ref)

	crash := object[*corev1.Pod](t, res, "shop", "checkout-6d8f9c7b5-x2x9k")
	if len(crash.Status.ContainerStatuses) != 1 {
		t.Fatalf("crashlooping pod statuses: %+v", crash.Status.ContainerStatuses)
	}
	cs := crash.Status.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.RestartCount != 7 || cs.Ready || cs.Name != "" {
		t.Errorf("crashlooping container: %+v", cs)
	}
	if ft := cs.LastTerminationState.Terminated; ft == nil || !ft.FinishedAt.Time.Equal(ref.Add(-2*time.Minute)) {
		t.Errorf("last restart time: %+v", cs.LastTerminationState)
	}
	if crash.Status.Phase != "" {
		t.Errorf("phase %q: a table row showing CrashLoopBackOff does not show the phase", crash.Status.Phase)
	}
	if crash.Spec.NodeName != "node-1" || crash.Status.PodIP != "10.244.1.17" || !crash.CreationTimestamp.Time.Equal(ref.Add(-25*time.Minute)) {
		t.Errorf("crashlooping pod: node %q ip %q created %v", crash.Spec.NodeName, crash.Status.PodIP, crash.CreationTimestamp)
	}
	if crash.Annotations[kubetext.SourceAnnotation] != "get-wide" {
		t.Errorf("source annotation: %v", crash.Annotations)
	}
	if p := object[*corev1.Pod](t, res, "shop", "report-28511430-7xk2p"); p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" || p.Status.PodIP != "" {
		t.Errorf("pending pod: %+v", p.Status)
	}
	if p := object[*corev1.Pod](t, res, "shop", "notify-84f6d7c9bd-zbddt"); p.Status.ContainerStatuses[0].State.Waiting.Reason != "CreateContainerConfigError" ||
		!p.CreationTimestamp.Time.Equal(ref.Add(-(3*time.Hour + 12*time.Minute))) {
		t.Errorf("config error pod: %+v %v", p.Status.ContainerStatuses, p.CreationTimestamp)
	}
	if p := object[*corev1.Pod](t, res, "shop", "web-7d9c5b7f9-q8x2n"); len(p.Status.ContainerStatuses) != 0 || p.Status.Phase != corev1.PodRunning {
		t.Errorf("two-container pod: statuses %+v (which container restarted is not shown)", p.Status.ContainerStatuses)
	}
	if p := object[*corev1.Pod](t, res, "shop", "batch-import-k2m9z"); p.Status.ContainerStatuses[0].State.Terminated.Reason != "OOMKilled" {
		t.Errorf("OOMKilled pod: %+v", p.Status.ContainerStatuses)
	}
	if p := object[*corev1.Pod](t, res, "shop", "old-api-6f7d8-zz9x1"); p.Status.Reason != "Evicted" || p.Status.Phase != corev1.PodFailed {
		t.Errorf("evicted pod: %+v", p.Status)
	}

	if d := object[*appsv1.Deployment](t, res, "kube-system", "coredns"); *d.Spec.Replicas != 2 || d.Status.ReadyReplicas != 2 {
		t.Errorf("coredns: %+v", d.Status)
	}
	if d := object[*appsv1.Deployment](t, res, "shop", "checkout"); d.Status.UpdatedReplicas != 1 || d.Status.AvailableReplicas != 3 {
		t.Errorf("checkout deployment: %+v", d.Status)
	}
	n2 := object[*corev1.Node](t, res, "", "node-2")
	if !n2.Spec.Unschedulable || len(n2.Status.Conditions) != 1 || n2.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Errorf("node-2: %+v %+v", n2.Spec, n2.Status.Conditions)
	}
	if n1 := object[*corev1.Node](t, res, "", "node-1"); n1.Status.NodeInfo.KubeletVersion != "v1.30.2" || n1.Status.Addresses[0].Address != "10.0.0.11" {
		t.Errorf("node-1: %+v", n1.Status)
	}
	gw := object[*corev1.Service](t, res, "shop", "gateway")
	if gw.Spec.Type != corev1.ServiceTypeLoadBalancer || len(gw.Spec.Ports) != 2 || gw.Spec.Ports[1].NodePort != 30443 || gw.Status.LoadBalancer.Ingress[0].IP != "203.0.113.9" {
		t.Errorf("gateway service: %+v %+v", gw.Spec, gw.Status)
	}
	pvc := object[*corev1.PersistentVolumeClaim](t, res, "shop", "report-scratch")
	if pvc.Status.Phase != corev1.ClaimPending || *pvc.Spec.StorageClassName != "fast-ssd" || pvc.Spec.VolumeName != "" {
		t.Errorf("pending claim: %+v %+v", pvc.Spec, pvc.Status)
	}
	hpa := object[*autoscalingv2.HorizontalPodAutoscaler](t, res, "shop", "checkout")
	if hpa.Spec.MaxReplicas != 10 || hpa.Status.CurrentReplicas != 10 || *hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization != 91 ||
		*hpa.Spec.Metrics[0].Resource.Target.AverageUtilization != 70 || hpa.Spec.Metrics[0].Resource.Name != "cpu" {
		t.Errorf("hpa at max: %+v %+v", hpa.Spec, hpa.Status)
	}
	if s := object[*autoscalingv2.HorizontalPodAutoscaler](t, res, "shop", "search"); len(s.Status.CurrentMetrics) != 0 || len(s.Spec.Metrics) != 1 {
		t.Errorf("hpa without metrics: %+v", s.Status)
	}
	if j := object[*batchv1.Job](t, res, "shop", "report-28511400"); len(j.Status.Conditions) != 1 || j.Status.Conditions[0].Type != batchv1.JobFailed {
		t.Errorf("failed job: %+v", j.Status)
	}
	if ep := object[*corev1.Endpoints](t, res, "shop", "gateway"); len(ep.Subsets) != 0 {
		t.Errorf("endpoints <none>: %+v", ep.Subsets)
	}

	if len(res.Events) != 5 {
		t.Fatalf("events: %d, want 5: %+v", len(res.Events), res.Events)
	}
	pf := res.Events[1]
	if pf.InvolvedObject.Kind != "PersistentVolumeClaim" || pf.InvolvedObject.Name != "report-scratch" || pf.Namespace != "shop" ||
		pf.Reason != "ProvisioningFailed" || !pf.LastTimestamp.Time.Equal(ref.Add(-61*time.Second)) || pf.Count != 1 {
		t.Errorf("ProvisioningFailed event: %+v", pf)
	}
	nn := res.Events[3]
	if nn.InvolvedObject.Kind != "Node" || nn.InvolvedObject.Namespace != "" || nn.Namespace != "default" || nn.Type != "Warning" {
		t.Errorf("node event: %+v", nn)
	}
	old := res.Events[4]
	if old.InvolvedObject.Kind != "Pod" || old.InvolvedObject.Name != "api-5d8f9c7b5-k2x9k" || old.Count != 96 || old.Source.Host != "node-3" ||
		!old.FirstTimestamp.Time.Equal(ref.Add(-24*time.Minute)) || old.InvolvedObject.FieldPath != "spec.containers{api}" {
		t.Errorf("old-format event: %+v", old)
	}

	// A secret row: its type and key count, no keys, no values.
	if s := object[*corev1.Secret](t, res, "shop", "checkout-db"); s.Type != corev1.SecretTypeOpaque || len(s.Data) != 0 ||
		s.Annotations[kubetext.DataCountAnnotation] != "1" || !s.CreationTimestamp.Time.Equal(ref.Add(-40*24*time.Hour)) {
		t.Errorf("secret row: %+v", s)
	}

	// The filtered table is reported, not guessed; the version is kept as text.
	var reasons []string
	for _, s := range res.Skipped {
		reasons = append(reasons, s.Command+": "+s.Reason)
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{"grep checkout: no NAME column", "kubectl version output is not read into objects (kept as text)"} {
		if !strings.Contains(all, want) {
			t.Errorf("skipped: want %q in\n%s", want, all)
		}
	}
	// the filtered table and the version are kept as text
	if len(res.Outputs) != 2 || !strings.Contains(res.Outputs[0].Command, "| grep checkout") ||
		!strings.HasPrefix(res.Outputs[1].Command, "kubectl version") || len(res.Outputs[1].Lines) == 0 {
		t.Errorf("outputs: %+v", res.Outputs)
	}
}

func TestCommandLines(t *testing.T) {
	ref := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	for _, tc := range []struct {
		cmd        string
		ns, pod, c string
		prev       bool
		skipped    bool
	}{
		{"kubectl logs web-1 -n shop", "shop", "web-1", "", false, false},
		{"kubectl logs -nshop web-1 -c app --previous", "shop", "web-1", "app", true, false},
		{"kubectl logs --namespace=shop pod/web-1 --container=app -p", "shop", "web-1", "app", true, false},
		{"kubectl logs web-1 app --tail 100 --previous=true", "", "web-1", "app", true, false},
		{"kubectl --context prod logs web-1 -n 'shop'", "shop", "web-1", "", false, false},
		{"user@host:~$ kubectl logs web-1 2>&1", "", "web-1", "", false, false},
		{"[ops@bastion ~]$ kubectl logs web-1 -n shop", "shop", "web-1", "", false, false},
		{"PS C:\\Users\\ops> kubectl logs web-1", "", "web-1", "", false, false},
		{"% kubectl logs web-1 -c app", "", "web-1", "app", false, false},
		{"KUBECONFIG=/tmp/kc sudo kubectl logs -n shop web-1", "shop", "web-1", "", false, false},
		{"kubectl logs deploy/web", "", "", "", false, true},
		{"kubectl logs -l app=web", "", "", "", false, true},
	} {
		text := "$ " + tc.cmd + "\nline one\nline two\n"
		if !strings.HasPrefix(tc.cmd, "kubectl") && !strings.HasPrefix(tc.cmd, "KUBECONFIG") {
			text = tc.cmd + "\nline one\nline two\n"
		}
		res := kubetext.Parse([]byte(text), ref)
		if tc.skipped {
			if len(res.Logs) != 0 || len(res.Skipped) != 1 {
				t.Errorf("%s: want skipped, got %+v %+v", tc.cmd, res.Logs, res.Skipped)
			}
			continue
		}
		if len(res.Logs) != 1 {
			t.Errorf("%s: logs %+v skipped %+v", tc.cmd, res.Logs, res.Skipped)
			continue
		}
		l := res.Logs[0]
		if l.Namespace != tc.ns || l.Pod != tc.pod || l.Container != tc.c || l.Previous != tc.prev || len(l.Lines) != 2 {
			t.Errorf("%s: %+v", tc.cmd, l)
		}
	}
}

func TestDescribeForms(t *testing.T) {
	ref := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	// kind/name and kind name forms, aliases, -A, multiple objects.
	text := `$ kubectl describe deploy/api -n shop
Name:                   api
Namespace:              shop
Selector:               app=api
Replicas:               2 desired | 2 updated | 2 total | 0 available | 2 unavailable
StrategyType:           RollingUpdate
Events:                 <none>
$ kubectl describe no
Name:               n1
Taints:             node.kubernetes.io/not-ready:NoSchedule
                    node.kubernetes.io/unreachable:NoExecute
Unschedulable:      false
Events:             <none>


Name:               n2
Taints:             <none>
Events:             <none>
$ kubectl describe pods,svc -n shop
Name: x
$ date
Sat Mar 14 10:45:00 UTC 2026
`
	res := kubetext.Parse([]byte(text), ref)
	d := object[*appsv1.Deployment](t, res, "shop", "api")
	if *d.Spec.Replicas != 2 || d.Status.UnavailableReplicas != 2 || d.Status.AvailableReplicas != 0 || d.Spec.Selector.MatchLabels["app"] != "api" {
		t.Errorf("deployment: %+v %+v", d.Spec, d.Status)
	}
	n1 := object[*corev1.Node](t, res, "", "n1")
	if len(n1.Spec.Taints) != 2 || n1.Spec.Taints[1].Key != "node.kubernetes.io/unreachable" || n1.Spec.Taints[1].Effect != corev1.TaintEffectNoExecute {
		t.Errorf("taints: %+v", n1.Spec.Taints)
	}
	object[*corev1.Node](t, res, "", "n2")
	if len(res.Skipped) != 1 {
		t.Errorf("skipped: %+v", res.Skipped)
	}
	// a describe of mixed kinds and another program's output are kept as text
	if len(res.Outputs) != 2 || res.Outputs[0].Lines[0] != "Name: x" || res.Outputs[1].Command != "date" || res.Outputs[1].Exec ||
		res.Outputs[1].Lines[0] != "Sat Mar 14 10:45:00 UTC 2026" || !strings.Contains(res.Skipped[0].Reason, "mixed resource kinds (kept as text)") {
		t.Errorf("outputs: %+v, skipped %+v", res.Outputs, res.Skipped)
	}
}

// Output that is an error is reported, not read; a log that merely starts
// with "error:" is a log; "No resources found" is an empty answer.
func TestErrorsAndEmptyAnswers(t *testing.T) {
	text := `$ kubectl describe pod gone -n shop
Error from server (NotFound): pods "gone" not found
$ kubectl logs web-1 -n shop --previous
Error from server (BadRequest): previous terminated container "app" in pod "web-1" not found
$ kubectl logs web-1 -n shop
error: connection refused to db:5432
retrying in 5s
$ kubectl get pods -n empty
No resources found in empty namespace.
`
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Logs) != 1 || len(res.Logs[0].Lines) != 2 || res.Logs[0].Previous {
		t.Errorf("logs: %+v", res.Logs)
	}
	// NotFound is an answer (the pod is absent), BadRequest an error.
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "BadRequest") || res.Skipped[0].Line != 3 {
		t.Errorf("skipped: %+v", res.Skipped)
	}
	if len(res.Absent) != 1 || res.Absent[0] != (kubetext.Absence{Kind: "Pod", Namespace: "shop", Name: "gone", Line: 2,
		Command: "kubectl describe pod gone -n shop", Message: `Error from server (NotFound): pods "gone" not found`}) {
		t.Errorf("absent: %+v", res.Absent)
	}
}

// kubectl's NotFound answers are recorded as absences, whatever the verb,
// among found objects too (kubectl prints them on stderr, which a terminal
// interleaves); no object is made of them.
func TestNotFoundAnswers(t *testing.T) {
	text := `$ kubectl describe secret ghcr-creds -n logistics
Error from server (NotFound): secrets "ghcr-creds" not found
$ kubectl get deploy web api -n shop
NAME   READY   UP-TO-DATE   AVAILABLE   AGE
web    2/2     2            2           3d
Error from server (NotFound): deployments.apps "api" not found
$ kubectl get pvc data -n nowhere
Error from server (NotFound): namespaces "nowhere" not found
$ kubectl logs web-0 -n shop
Error from server (NotFound): pods "web-0" not found
$ kubectl get cm a b
Error from server (NotFound): configmaps "a" not found
Error from server (NotFound): configmaps "b" not found
$ kubectl get widgets w -n shop
Error from server (NotFound): widgets.example.com "w" not found
$ kubectl logs web-1 -n shop
2026-03-14T10:00:00Z calling the API
Error from server (NotFound): pods "x" not found
`
	res := kubetext.Parse([]byte(text), time.Time{})
	want := []string{"Secret logistics/ghcr-creds 2", "Deployment shop/api 6", "Namespace /nowhere 8", "Pod shop/web-0 10",
		"ConfigMap /a 12", "ConfigMap /b 13"}
	var got []string
	for _, a := range res.Absent {
		got = append(got, fmt.Sprintf("%s %s/%s %d", a.Kind, a.Namespace, a.Name, a.Line))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("absent:\n%v\nwant\n%v", got, want)
	}
	if len(res.Objects) != 1 || len(res.Logs) != 1 || res.Logs[0].Pod != "web-1" || len(res.Logs[0].Lines) != 2 {
		t.Errorf("objects %d (want the one deployment found), logs %+v", len(res.Objects), res.Logs)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Line != 15 || !strings.Contains(res.Skipped[0].Reason, "kind not read") {
		t.Errorf("skipped: %+v", res.Skipped)
	}
}

func TestTopSum(t *testing.T) {
	text := `$ kubectl top pod -n shop --sum
NAME     CPU(cores)   MEMORY(bytes)
web-1    120m         200Mi
web-2    80m          100Mi
         ________     ________
         200m         300Mi
`
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Usage) != 2 || len(res.Skipped) != 0 || res.Usage[1].Name != "web-2" || res.Usage[1].CPU.MilliValue() != 80 {
		t.Errorf("usage %+v skipped %+v", res.Usage, res.Skipped)
	}
}

// A prompt is not taken from output: indented lines and lines whose
// "$ " is not followed by kubectl stay output.
func TestPromptsInOutput(t *testing.T) {
	text := "$ kubectl logs web-1\nprice is 5$ today\n  $ kubectl get pods\nok> kubectl is great\n"
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Logs) != 1 || len(res.Logs[0].Lines) != 3 {
		t.Errorf("logs: %+v skipped %+v", res.Logs, res.Skipped)
	}
}

func TestAgesAndUnknownTime(t *testing.T) {
	text := "$ kubectl events -n shop\nLAST SEEN           TYPE      REASON    OBJECT      MESSAGE\n3h12m (x4 over 2d3h)   Warning   BackOff   Pod/web-1   back-off\n<unknown>           Normal    Pulled    Pod/web-1   pulled\n"
	ref := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	res := kubetext.Parse([]byte(text), ref)
	if len(res.Events) != 2 {
		t.Fatalf("events: %+v %+v", res.Events, res.Skipped)
	}
	e := res.Events[0]
	if !e.LastTimestamp.Time.Equal(ref.Add(-(3*time.Hour + 12*time.Minute))) || !e.FirstTimestamp.Time.Equal(ref.Add(-51*time.Hour)) || e.Count != 4 {
		t.Errorf("aged event: %+v", e)
	}
	if !res.Events[1].LastTimestamp.IsZero() {
		t.Errorf("an <unknown> age must stay unknown: %v", res.Events[1].LastTimestamp)
	}
	// Without a capture time, relative ages stay unknown.
	res = kubetext.Parse([]byte(text), time.Time{})
	if !res.Events[0].LastTimestamp.IsZero() {
		t.Errorf("no capture time: %v", res.Events[0].LastTimestamp)
	}
}

func TestGetAll(t *testing.T) {
	text := `$ kubectl get all -n shop
NAME                           READY   STATUS    RESTARTS   AGE
pod/checkout-5c4b8d9f7-aaaaa   1/1     Running   0          22d

NAME               TYPE        CLUSTER-IP    EXTERNAL-IP   PORT(S)   AGE
service/checkout   ClusterIP   10.96.12.34   <none>        80/TCP    40d

NAME                       READY   UP-TO-DATE   AVAILABLE   AGE
deployment.apps/checkout   3/3     3            3           40d

NAME                                 DESIRED   CURRENT   READY   AGE
replicaset.apps/checkout-5c4b8d9f7   3         3         3       22d

NAME                                           REFERENCE             TARGETS        MINPODS   MAXPODS   REPLICAS   AGE
horizontalpodautoscaler.autoscaling/checkout   Deployment/checkout   cpu: 12%/70%   3         10        3          40d
`
	res := kubetext.Parse([]byte(text), time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC))
	if len(res.Objects) != 5 || len(res.Skipped) != 0 {
		t.Fatalf("objects %d, skipped %+v", len(res.Objects), res.Skipped)
	}
	if p := object[*corev1.Pod](t, res, "shop", "checkout-5c4b8d9f7-aaaaa"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod: %+v", p.Status)
	}
	if rs := object[*appsv1.ReplicaSet](t, res, "shop", "checkout-5c4b8d9f7"); rs.Status.ReadyReplicas != 3 {
		t.Errorf("replicaset: %+v", rs.Status)
	}
	object[*corev1.Service](t, res, "shop", "checkout")
	object[*appsv1.Deployment](t, res, "shop", "checkout")
	object[*autoscalingv2.HorizontalPodAutoscaler](t, res, "shop", "checkout")
}

// A describe page and a table row of the same pod merge: the page wins,
// the row fills what the page lacks; a -o yaml copy replaces both.
func TestMergeForms(t *testing.T) {
	text := `$ kubectl get pods -n shop -o wide
NAME    READY   STATUS             RESTARTS   AGE   IP          NODE     NOMINATED NODE   READINESS GATES
web-1   0/1     CrashLoopBackOff   4          10m   10.0.0.5    node-1   <none>           <none>
$ kubectl describe pod web-1 -n shop
Name:         web-1
Namespace:    shop
Status:       Running
Containers:
  app:
    Image:          web:1
    State:          Waiting
      Reason:       CrashLoopBackOff
    Ready:          False
    Restart Count:  4
Events:       <none>
`
	ref := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	res := kubetext.Parse([]byte(text), ref)
	p := object[*corev1.Pod](t, res, "shop", "web-1")
	if p.Annotations[kubetext.SourceAnnotation] != "describe" || p.Status.ContainerStatuses[0].Name != "app" ||
		p.Status.PodIP != "10.0.0.5" || !p.CreationTimestamp.Time.Equal(ref.Add(-10*time.Minute)) || len(res.Objects) != 1 {
		t.Errorf("merged pod: %+v %+v", p.ObjectMeta, p.Status)
	}
	text += `$ kubectl get pod web-1 -n shop -o yaml
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
status:
  phase: Running
`
	res = kubetext.Parse([]byte(text), ref)
	p = object[*corev1.Pod](t, res, "shop", "web-1")
	if _, ok := p.Annotations[kubetext.SourceAnnotation]; ok || len(p.Status.ContainerStatuses) != 0 || len(res.Objects) != 1 {
		t.Errorf("structured copy must win: %+v", p)
	}
}

// Limits: objects beyond MaxObjects are dropped and reported once.
func TestLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("$ kubectl get pods -n shop\nNAME   READY   STATUS    RESTARTS   AGE\n")
	for i := 0; i < kubetext.MaxObjects+10; i++ {
		fmt.Fprintf(&b, "p-%d   1/1     Running   0          5m\n", i)
	}
	res := kubetext.Parse([]byte(b.String()), time.Time{})
	if len(res.Objects) != kubetext.MaxObjects || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "rows: the rest are dropped") {
		t.Errorf("objects %d, skipped %+v", len(res.Objects), res.Skipped)
	}
	long := "$ kubectl logs p\n" + strings.Repeat("x", kubetext.MaxLine*2) + "\n"
	res = kubetext.Parse([]byte(long), time.Time{})
	if len(res.Logs) != 1 || len(res.Logs[0].Lines[0]) != kubetext.MaxLine {
		t.Errorf("long line: %d bytes kept", len(res.Logs[0].Lines[0]))
	}
}

// get configmaps and get secrets tables (as kube-apiserver's printer columns
// give them) are objects with their DATA count and age; no keys, no values.
func TestConfigMapAndSecretTables(t *testing.T) {
	text := `$ kubectl get configmaps -n reporting
NAME                    DATA   AGE
kube-root-ca.crt        1      402d
report-api-config-v10   2      61d
$ kubectl get secrets -n logistics
NAME               TYPE                             DATA   AGE
carrier-api-keys   Opaque                           3      3d
ghcr-pull          kubernetes.io/dockerconfigjson   1      3d
$ kubectl describe cm report-api-config-v10 -n reporting
Name:         report-api-config-v10
Namespace:    reporting
Labels:       <none>
Annotations:  <none>

Data
====
application.yaml:
----
server: {}
timezone:
----
UTC

BinaryData
====

Events:  <none>
`
	ref := time.Date(2027, 1, 19, 8, 50, 0, 0, time.UTC)
	res := kubetext.Parse([]byte(text), ref)
	if len(res.Skipped) != 0 {
		t.Fatalf("skipped: %+v", res.Skipped)
	}
	cm := object[*corev1.ConfigMap](t, res, "reporting", "kube-root-ca.crt")
	if cm.Annotations[kubetext.DataCountAnnotation] != "1" || len(cm.Data) != 0 || !cm.CreationTimestamp.Time.Equal(ref.Add(-402*24*time.Hour)) {
		t.Errorf("config map row: %+v", cm.ObjectMeta)
	}
	// the describe page gives the keys; the row adds its count
	cm = object[*corev1.ConfigMap](t, res, "reporting", "report-api-config-v10")
	if cm.Annotations[kubetext.DataCountAnnotation] != "2" || len(cm.Data) != 2 || cm.Annotations[kubetext.SourceAnnotation] != "describe" {
		t.Errorf("config map row and page: %+v %v", cm.ObjectMeta, cm.Data)
	}
	s := object[*corev1.Secret](t, res, "logistics", "ghcr-pull")
	if s.Type != corev1.SecretTypeDockerConfigJson || s.Annotations[kubetext.DataCountAnnotation] != "1" || len(s.Data) != 0 || s.Annotations[kubetext.SourceAnnotation] != "get" {
		t.Errorf("secret row: %+v", s)
	}
	if s := object[*corev1.Secret](t, res, "logistics", "carrier-api-keys"); s.Type != corev1.SecretTypeOpaque || s.Annotations[kubetext.DataCountAnnotation] != "3" {
		t.Errorf("secret row: %+v", s)
	}
}

// kubectl rollout status: the last state printed is what it states, with
// the counts it gives; rollout history is reported as not read.
func TestRolloutStatus(t *testing.T) {
	cases := []struct {
		name, text                 string
		kind                       string
		updated, available, desire int32
		done, deadline             bool
		line                       int
		skipped                    string
	}{
		{name: "waiting, watched", kind: "Deployment", updated: 2, available: 1, desire: -1, line: 4, text: `$ kubectl rollout status deploy/api -n web
Waiting for deployment "api" rollout to finish: 1 out of 3 new replicas have been updated...
Waiting for deployment "api" rollout to finish: 2 out of 3 new replicas have been updated...
Waiting for deployment "api" rollout to finish: 1 of 2 updated replicas are available...
`},
		{name: "new replicas", kind: "Deployment", updated: 1, available: -1, desire: 3, line: 2, text: `$ kubectl rollout status deployment api -n web --watch=false
Waiting for deployment "api" rollout to finish: 1 out of 3 new replicas have been updated...
`},
		{name: "timed out", kind: "Deployment", updated: 3, available: -1, desire: 4, line: 2, text: `$ kubectl -n web rollout status deploy/api --timeout 30s
Waiting for deployment "api" rollout to finish: 3 out of 4 new replicas have been updated...
error: timed out waiting for the condition
`},
		{name: "deadline", kind: "Deployment", updated: -1, available: -1, desire: -1, deadline: true, line: 3, text: `$ kubectl rollout status deploy/api -n web
Waiting for deployment "api" rollout to finish: 0 of 1 updated replicas are available...
error: deployment "api" exceeded its progress deadline
`},
		{name: "done", kind: "Deployment", updated: -1, available: -1, desire: -1, done: true, line: 2, text: `$ kubectl rollout status deploy/api -n web --timeout=2m
deployment "api" successfully rolled out
`},
		{name: "daemon set", kind: "DaemonSet", updated: 2, available: -1, desire: 5, line: 2, text: `$ kubectl rollout status ds/api -n web
Waiting for daemon set "api" rollout to finish: 2 out of 5 new pods have been updated...
`},
		{name: "stateful set", kind: "StatefulSet", updated: 3, available: -1, desire: -1, done: true, line: 2, text: `$ kubectl rollout status sts/api -n web
statefulset rolling update complete 3 pods at revision api-7d9f8c6b5...
`},
		{name: "unknown line", skipped: "not understood", text: `$ kubectl rollout status deploy/api -n web
something else entirely
`},
		{name: "not rolling update", skipped: "kubectl answered an error", text: `$ kubectl rollout status ds/node-exporter -n monitoring
error: rollout status is only available for RollingUpdate strategy type
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(tc.text), time.Time{})
			if len(res.Objects) != 0 {
				t.Errorf("objects %d: a status line alone makes no object", len(res.Objects))
			}
			if tc.skipped != "" {
				if len(res.Rollouts) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, tc.skipped) {
					t.Errorf("rollouts %+v, skipped %+v, want skipped %q", res.Rollouts, res.Skipped, tc.skipped)
				}
				return
			}
			if len(res.Skipped) != 0 || len(res.Rollouts) != 1 {
				t.Fatalf("rollouts %+v skipped %+v", res.Rollouts, res.Skipped)
			}
			r := res.Rollouts[0]
			lines := strings.Split(tc.text, "\n")
			want := strings.TrimPrefix(lines[tc.line-1], "error: ")
			if r.Kind != tc.kind || r.Namespace != "web" || r.Name != "api" || r.Line != tc.line || r.Status != want ||
				r.Updated != tc.updated || r.Available != tc.available || r.Desired != tc.desire || r.Done != tc.done || r.DeadlineExceeded != tc.deadline {
				t.Errorf("rollout %+v", r)
			}
		})
	}
}

// A rollout status is put on the transcript's copy of its workload (before
// or after it, with or without -n), never over a structured copy.
func TestRolloutStatusOnWorkload(t *testing.T) {
	text := `$ kubectl rollout status deploy/api
error: deployment "api" exceeded its progress deadline
$ kubectl get deploy -n web
NAME   READY   UP-TO-DATE   AVAILABLE   AGE
api    0/3     1            0           2h
web    3/3     3            3           9d
$ kubectl rollout status deploy/web -n web
deployment "web" successfully rolled out
$ kubectl rollout status deploy/gone -n web
deployment "gone" successfully rolled out
`
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Skipped) != 0 || len(res.Rollouts) != 3 || len(res.Objects) != 2 {
		t.Fatalf("objects %d rollouts %+v skipped %+v", len(res.Objects), res.Rollouts, res.Skipped)
	}
	api := object[*appsv1.Deployment](t, res, "web", "api")
	if api.Annotations[kubetext.RolloutAnnotation] != `deployment "api" exceeded its progress deadline` || api.Annotations[kubetext.SourceAnnotation] != "get" ||
		len(api.Status.Conditions) != 1 || api.Status.Conditions[0].Reason != "ProgressDeadlineExceeded" || api.Status.UpdatedReplicas != 1 || *api.Spec.Replicas != 3 {
		t.Errorf("api: %+v %+v", api.ObjectMeta, api.Status)
	}
	web := object[*appsv1.Deployment](t, res, "web", "web")
	if web.Annotations[kubetext.RolloutAnnotation] != `deployment "web" successfully rolled out` || web.Status.AvailableReplicas != 3 {
		t.Errorf("web: %+v %+v", web.ObjectMeta, web.Status)
	}
	// a structured copy wins as it is
	res = kubetext.Parse([]byte(`$ kubectl get deploy api -n web -o yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: web
$ kubectl rollout status deploy/api -n web
deployment "api" successfully rolled out
`), time.Time{})
	if d := object[*appsv1.Deployment](t, res, "web", "api"); len(d.Annotations) != 0 || len(res.Rollouts) != 1 {
		t.Errorf("structured copy: %+v, rollouts %+v", d.ObjectMeta, res.Rollouts)
	}
}

// get resourcequota rows list "resource: used/hard" under REQUEST and
// LIMIT (kube-apiserver's printer): the quota's status.
func TestQuotaTable(t *testing.T) {
	text := `$ kubectl get quota -n risk
NAME           AGE   REQUEST                                                 LIMIT
risk-compute   12d   pods: 5/20, requests.cpu: 4500m/8, requests.memory: 11Gi/16Gi   limits.cpu: 9/12, limits.memory: 14Gi/16Gi
empty          1d
`
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Skipped) != 0 {
		t.Fatalf("skipped: %+v", res.Skipped)
	}
	q := object[*corev1.ResourceQuota](t, res, "risk", "risk-compute")
	used, hard := q.Status.Used[corev1.ResourceLimitsMemory], q.Status.Hard[corev1.ResourceLimitsMemory]
	if used.String() != "14Gi" || hard.String() != "16Gi" || len(q.Status.Hard) != 5 || len(q.Spec.Hard) != 0 {
		t.Errorf("quota: %+v", q.Status)
	}
	if cpu := q.Status.Used[corev1.ResourceRequestsCPU]; cpu.MilliValue() != 4500 {
		t.Errorf("requests.cpu used %s", cpu.String())
	}
	if e := object[*corev1.ResourceQuota](t, res, "risk", "empty"); len(e.Status.Hard) != 0 {
		t.Errorf("empty quota: %+v", e.Status)
	}
}
