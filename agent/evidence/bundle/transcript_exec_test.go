package bundle_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// kubectl exec output reaches the pod's logs (after what kubectl logs
// printed, each exec a stream led by the command run) and, with other
// commands' output, the CommandOutputReader; rollout history dates a
// revision through its ReplicaSet's age.
const execTranscript = `❯ kubectl get pods -n shop
NAME                        READY   STATUS    RESTARTS   AGE
checkout-6d8f9c7b5-x2x9k    1/1     Running   0          3h
❯ kubectl logs checkout-6d8f9c7b5-x2x9k -n shop
2027-01-20T17:20:01Z ERROR payment call failed: context deadline exceeded
❯ kubectl exec -n shop checkout-6d8f9c7b5-x2x9k -- curl -sS -m 3 http://payments:8080/healthz
Defaulted container "app" out of: app, istio-proxy
curl: (28) Connection timed out after 3001 milliseconds
command terminated with exit code 28
❯ dig +short payments.shop.svc.cluster.local
10.96.14.2
❯ kubectl rollout history deploy/checkout -n shop --revision=7
deployment.apps/checkout with revision #7
Pod Template:
  Labels:	app=checkout
	pod-template-hash=6d8f9c7b5
  Annotations:	kubernetes.io/change-cause: deploy 2.4.1 (pipeline 5512)
  Containers:
   app:
    Image:	registry.example.com/shop/checkout:2.4.1
❯ kubectl get rs -n shop
NAME                  DESIRED   CURRENT   READY   AGE
checkout-6d8f9c7b5    2         2         2       25m
`

func TestTranscriptExecAndHistory(t *testing.T) {
	ctx := context.Background()
	b := formsBundle(t, fstest.MapFS{"session.txt": {Data: []byte(execTranscript)}})
	src := b.Sources(b.CapturedAt)
	k := src.Kubernetes
	res, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "shop", Pod: "checkout-6d8f9c7b5-x2x9k", Since: b.CapturedAt.Add(-30 * 60e9), Until: b.CapturedAt})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range res.Lines {
		got = append(got, l.Source+" "+l.Text)
	}
	want := []string{
		"checkout-6d8f9c7b5-x2x9k/ 2027-01-20T17:20:01Z ERROR payment call failed: context deadline exceeded",
		"checkout-6d8f9c7b5-x2x9k/app $ curl -sS -m 3 http://payments:8080/healthz",
		"checkout-6d8f9c7b5-x2x9k/app curl: (28) Connection timed out after 3001 milliseconds",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pod logs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// another container's logs do not hold it
	if res, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "shop", Pod: "checkout-6d8f9c7b5-x2x9k", Container: "istio-proxy"}); err != nil ||
		len(res.Lines) != 1 || strings.Contains(res.Lines[0].Text, "curl") {
		t.Errorf("istio-proxy logs: %v %+v", err, res)
	}
	outs, err := k.(evidence.CommandOutputReader).CommandOutputs(ctx, "shop")
	if err != nil || len(outs) != 2 {
		t.Fatalf("outputs %v %+v", err, outs)
	}
	if o := outs[0]; !o.Exec || o.Pod != "checkout-6d8f9c7b5-x2x9k" || o.Container != "app" || o.ExitCode != 28 || o.Source != "session.txt:6" {
		t.Errorf("exec output %+v", o)
	}
	if o := outs[1]; o.Exec || o.Run != "dig +short payments.shop.svc.cluster.local" || o.Lines[0] != "10.96.14.2" || o.Source != "session.txt:10" {
		t.Errorf("dig output %+v", o)
	}
	if outs, _ := k.(evidence.CommandOutputReader).CommandOutputs(ctx, "web"); len(outs) != 1 {
		t.Errorf("namespace web: %+v (want the dig output only)", outs)
	}
	// the revision's ReplicaSet: owned, numbered, with its change cause and age
	rss, err := k.ReplicaSets(ctx, "shop")
	if err != nil || len(rss) != 1 {
		t.Fatalf("replica sets %v %+v", err, rss)
	}
	rs := rss[0]
	if rs.Annotations["deployment.kubernetes.io/revision"] != "7" || rs.Annotations["kubernetes.io/change-cause"] != "deploy 2.4.1 (pipeline 5512)" ||
		len(rs.OwnerReferences) != 1 || rs.OwnerReferences[0].Name != "checkout" || !rs.CreationTimestamp.Time.Equal(b.CapturedAt.Add(-25*60e9)) {
		t.Errorf("replica set %+v", rs.ObjectMeta)
	}
	read, _ := checkReport(t, ctx, b)
	if all := strings.Join(read, "\n"); !strings.Contains(all, "1 kubectl rollout history, 1 kubectl exec outputs, 1 other command outputs kept as text") {
		t.Errorf("check read:\n%s", all)
	}
}

// Network policies, endpoints and a service account's missing pull secret
// read from describe pages reach the Kubernetes source as objects and
// absences.
func TestTranscriptAccessKinds(t *testing.T) {
	ctx := context.Background()
	text := `$ kubectl describe netpol deny-egress -n shop
Name:         deny-egress
Namespace:    shop
Created on:   2027-01-20 16:00:00 +0000 UTC
Labels:       <none>
Annotations:  <none>
Spec:
  PodSelector:     app=checkout
  Not affecting ingress traffic
  Allowing egress traffic:
    <none> (Selected pods are isolated for egress connectivity)
  Policy Types: Egress
$ kubectl describe ep payments -n shop
Name:         payments
Namespace:    shop
Labels:       app=payments
Annotations:  <none>
Subsets:
Events:  <none>
$ kubectl describe sa checkout -n shop
Name:                checkout
Namespace:           shop
Labels:              <none>
Annotations:         <none>
Image pull secrets:  ghcr-pull (not found)
Mountable secrets:   <none>
Tokens:              <none>
Events:              <none>
`
	b := formsBundle(t, fstest.MapFS{"session.txt": {Data: []byte(text)}})
	k := b.Sources(b.CapturedAt).Kubernetes
	nps, err := k.Objects(ctx, "NetworkPolicy", "shop", "")
	if err != nil || len(nps) != 1 {
		t.Fatalf("network policies %v %+v", err, nps)
	}
	eps, err := k.Endpoints(ctx, "shop")
	if err != nil || len(eps) != 1 || eps[0].Name != "payments" || len(eps[0].Subsets) != 0 {
		t.Errorf("endpoints %v %+v", err, eps)
	}
	if !k.(evidence.KindHolder).HoldsKind(ctx, "Secret") {
		t.Error("the pull secret kubectl marked (not found) does not count as asked about")
	}
	if _, err := evidence.Get[corev1.Secret](ctx, k, "shop", "ghcr-pull"); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("missing pull secret: %v", err)
	}
}

// Notes in Markdown at the bundle root are read as transcripts: the
// commands in their code blocks, not the prose around them; a file with no
// kubectl command in it is not.
func TestMarkdownNotes(t *testing.T) {
	ctx := context.Background()
	notes := "# Incident 4711\n\nCheckout was failing, I looked at the pods:\n\n```console\n" +
		"❯ kgp -n shop\nNAME                       READY   STATUS             RESTARTS   AGE\n" +
		"checkout-6d8f9c7b5-x2x9k   0/1     CrashLoopBackOff   7          25m\n```\n\n" +
		"Then the node looked fine. Next steps: page the DB team.\n"
	b := formsBundle(t, fstest.MapFS{"notes.md": {Data: []byte(notes)}, "README.md": {Data: []byte("# Bundle\n\n$ make test\nok\n")}})
	k := b.Sources(b.CapturedAt).Kubernetes
	if k == nil {
		t.Fatal("no Kubernetes source from notes.md")
	}
	pods, err := k.Pods(ctx, "shop", "")
	if err != nil || len(pods) != 1 || pods[0].Status.ContainerStatuses[0].State.Waiting.Reason != "CrashLoopBackOff" {
		t.Fatalf("pods %v %+v", err, pods)
	}
	outs, _ := k.(evidence.CommandOutputReader).CommandOutputs(ctx, "")
	if len(outs) != 0 {
		t.Errorf("prose or README kept as output: %+v", outs)
	}
	read, skipped := checkReport(t, ctx, b)
	got := strings.Join(append(read, skipped...), "\n")
	if !strings.Contains(got, "notes.md transcript: 1 Pod") || !strings.Contains(got, "README.md not a bundle part") {
		t.Errorf("check:\n%s", got)
	}
}

// A kubectl exec that could not run its command (the binary not in the
// image, the container gone) leaves the tool's error in the command
// outputs, not in the pod's log: the container printed nothing.
func TestTranscriptExecFailureNotLogged(t *testing.T) {
	ctx := context.Background()
	text := `$ kubectl get pods -n maps
NAME                          READY   STATUS    RESTARTS   AGE
geo-router-6b9d7c5f48-tx4kq   1/1     Running   3          40m
$ kubectl logs geo-router-6b9d7c5f48-tx4kq -n maps
level=info msg="starting geo-router"
$ kubectl exec -n maps geo-router-6b9d7c5f48-tx4kq -- ls /bin/
error: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec "0c9a7e": OCI runtime exec failed: exec failed: unable to start container process: exec: "ls": executable file not found in $PATH: unknown
$ kubectl exec -n maps geo-router-6b9d7c5f48-tx4kq -- bash
OCI runtime exec failed: exec failed: container_linux.go:380: starting container process caused: exec: "bash": executable file not found in $PATH: unknown
command terminated with exit code 126
$ kubectl exec -n maps geo-router-6b9d7c5f48-tx4kq -c sidecar -- cat /etc/hostname
error: unable to upgrade connection: container not found ("sidecar")
$ kubectl exec -n maps geo-router-6b9d7c5f48-tx4kq -- wget -qO- localhost:9090/healthz
ok
`
	b := formsBundle(t, fstest.MapFS{"session.txt": {Data: []byte(text)}})
	k := b.Sources(b.CapturedAt).Kubernetes
	res, err := k.PodLogs(ctx, evidence.PodLogQuery{Namespace: "maps", Pod: "geo-router-6b9d7c5f48-tx4kq", Since: b.CapturedAt.Add(-24 * 3600e9), Until: b.CapturedAt})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range res.Lines {
		got = append(got, l.Text)
	}
	want := []string{
		`level=info msg="starting geo-router"`,
		"$ wget -qO- localhost:9090/healthz",
		"ok",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pod logs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	outs, err := k.(evidence.CommandOutputReader).CommandOutputs(ctx, "maps")
	if err != nil || len(outs) != 4 {
		t.Fatalf("outputs %v %+v", err, outs)
	}
	if o := outs[1]; o.ExitCode != 126 || len(o.Lines) != 1 || !strings.Contains(o.Lines[0], "OCI runtime exec failed") {
		t.Errorf("failed exec kept as output: %+v", o)
	}
}
