package bundle_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// A pod the transcripts show only through commands run in it or about it
// (kubectl logs, kubectl exec, kubectl top pod) is listed, with its name
// and namespace and nothing else: its state stays unknown. A fuller form of
// the same pod (a table row, a structured file) wins; a pod kubectl
// answered NotFound for, or one whose namespace the command did not say,
// is not made up.
const seenTranscript = `$ kubectl top pod -n shop
NAME                         CPU(cores)   MEMORY(bytes)
checkout-5f8c7d6b9-2qkzn     88m          312Mi
payments-7b9c6d5f8-4hx2p     40m          190Mi
$ kubectl logs checkout-5f8c7d6b9-2qkzn -n shop -c app --since=85m
2027-01-20T17:20:01Z ERROR upstream call failed: getaddrinfo EAI_AGAIN payments.shop.svc.cluster.local
$ kubectl exec -n shop checkout-5f8c7d6b9-2qkzn -- cat /etc/resolv.conf
Defaulted container "app" out of: app, istio-proxy
nameserver 10.8.0.10
$ kubectl top pod -n kube-system --containers
POD                       NAME      CPU(cores)   MEMORY(bytes)
coredns-6f9b8d7c5-x4lqz   coredns   250m         61Mi
$ kubectl logs web-1
hello from the context's namespace
$ kubectl logs gone-7d9f8c6b5-abcde -n shop
Error from server (NotFound): pods "gone-7d9f8c6b5-abcde" not found
$ kubectl top pod gone-7d9f8c6b5-abcde -n shop
NAME                   CPU(cores)   MEMORY(bytes)
gone-7d9f8c6b5-abcde   1m           5Mi
`

const seenTable = `$ kubectl get pods -n kube-system
NAME                      READY   STATUS    RESTARTS   AGE
coredns-6f9b8d7c5-x4lqz   0/1     Running   7          70m
`

const seenPodsJSON = `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "payments-7b9c6d5f8-4hx2p", "namespace": "shop", "labels": {"app": "payments"}},
 "spec": {"containers": [{"name": "payments", "image": "payments:1.2"}]},
 "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}`

func TestSeenPods(t *testing.T) {
	ctx := context.Background()
	b := formsBundle(t, fstest.MapFS{
		"a-session.txt":                {Data: []byte(seenTranscript)},
		"b-session.txt":                {Data: []byte(seenTable)},
		"kubernetes/shop/pod-pay.json": {Data: []byte(seenPodsJSON)},
	})
	k := b.Sources(b.CapturedAt).Kubernetes
	pods, err := k.Pods(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]corev1.Pod{}
	var names []string
	for _, p := range pods {
		byName[p.Name] = p
		names = append(names, p.Namespace+"/"+p.Name)
	}
	want := "kube-system/coredns-6f9b8d7c5-x4lqz shop/checkout-5f8c7d6b9-2qkzn shop/payments-7b9c6d5f8-4hx2p"
	if strings.Join(names, " ") != want {
		t.Fatalf("pods %q, want %q", names, want)
	}
	seen := byName["checkout-5f8c7d6b9-2qkzn"]
	if a := seen.Annotations; a[kubetext.SourceAnnotation] != kubetext.SeenForm || a[kubetext.ContainersSeenAnnotation] != "app" ||
		a[kubetext.SeenInAnnotation] != "a-session.txt:3 kubectl top pod; a-session.txt:5 kubectl logs; a-session.txt:7 kubectl exec" {
		t.Errorf("seen pod annotations %v", a)
	}
	// only what the commands showed: the state is unknown
	seen.Annotations = nil
	if want := (corev1.Pod{ObjectMeta: seen.ObjectMeta}); seen.Name == "" || seen.Status.Phase != "" || len(seen.Spec.Containers) != 0 ||
		len(seen.Labels) != 0 || len(seen.OwnerReferences) != 0 || seen.Spec.NodeName != "" || len(seen.Status.Conditions) != 0 {
		t.Errorf("seen pod holds more than it was shown: %+v (want %+v)", seen, want)
	}
	// the table row and the structured file win over the sightings
	if p := byName["coredns-6f9b8d7c5-x4lqz"]; p.Annotations[kubetext.SourceAnnotation] != "get" || p.Status.Phase != corev1.PodRunning {
		t.Errorf("coredns: %+v", p)
	}
	if p := byName["payments-7b9c6d5f8-4hx2p"]; p.Annotations[kubetext.SourceAnnotation] != "" || p.Labels["app"] != "payments" {
		t.Errorf("payments: %+v", p)
	}
	// the listing reaches the seen pod's logs and exec outputs
	res, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "shop", Pod: seen.Name, Since: b.CapturedAt.Add(-3600e9), Until: b.CapturedAt})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range res.Lines {
		lines = append(lines, l.Source+" "+l.Text)
	}
	if got := strings.Join(lines, "\n"); !strings.Contains(got, "checkout-5f8c7d6b9-2qkzn/app 2027-01-20T17:20:01Z ERROR upstream call failed") ||
		!strings.Contains(got, "checkout-5f8c7d6b9-2qkzn/app nameserver 10.8.0.10") {
		t.Errorf("logs of the seen pod:\n%s", got)
	}
	// a container the commands did not name is no error: the list is not whole
	if _, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "shop", Pod: seen.Name, Container: "istio-proxy"}); err != nil {
		t.Errorf("istio-proxy logs: %v", err)
	}
	nss, _ := k.Namespaces(ctx)
	if strings.Join(nss, ",") != "kube-system,shop" {
		t.Errorf("namespaces %q", nss)
	}

	reads, _ := checkReport(t, ctx, b)
	if got := strings.Join(reads, "\n"); !strings.Contains(got, "a-session.txt transcript: 2 kubectl logs outputs, 4 kubectl top pod rows, 1 kubectl exec outputs, 3 pods seen only in kubectl logs, exec or top (state unknown), 1 Pod not found") {
		t.Errorf("check:\n%s", got)
	}
}

// SeenPods keeps the first-seen order, names at most a few places and
// takes no name Kubernetes would refuse.
func TestSeenPodsNames(t *testing.T) {
	var s []kubetext.Sighting
	for i := 0; i < 8; i++ {
		s = append(s, kubetext.Sighting{File: "t.txt", Line: i + 1, What: "kubectl logs", Namespace: "shop", Pod: "web-1", Container: []string{"b", "a"}[i%2]})
	}
	s = append(s,
		kubetext.Sighting{File: "t.txt", Line: 20, What: "kubectl exec", Namespace: "shop", Pod: "Web_1"},
		kubetext.Sighting{File: "t.txt", Line: 21, What: "kubectl exec", Namespace: "", Pod: "web-2"},
		kubetext.Sighting{File: "t.txt", Line: 22, What: "kubectl exec", Namespace: "shop", Pod: "web-3", Container: "bad name"},
		kubetext.Sighting{File: "t.txt", Line: 23, What: "kubectl exec", Namespace: "shop", Pod: "known"})
	pods := kubetext.SeenPods(s, func(ns, name string) bool { return name == "known" })
	if len(pods) != 2 || pods[0].Name != "web-1" || pods[1].Name != "web-3" {
		t.Fatalf("pods %+v", pods)
	}
	if a := pods[0].Annotations; a[kubetext.ContainersSeenAnnotation] != "a,b" || strings.Count(a[kubetext.SeenInAnnotation], ";") != 4 {
		t.Errorf("annotations %v", a)
	}
	if _, ok := pods[1].Annotations[kubetext.ContainersSeenAnnotation]; ok {
		t.Errorf("web-3: %v", pods[1].Annotations)
	}
}
