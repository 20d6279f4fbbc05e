package kubetext_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// The prompts terminals show before a command, colour codes, a terminal
// logger's timestamps and continued lines all leave the same command and
// output.
func TestPrompts(t *testing.T) {
	const out = "NAME    READY   STATUS    RESTARTS   AGE\nweb-1   0/1     Pending   0          5m\n"
	for _, tc := range []struct{ name, text string }{
		{"dollar", "$ kubectl get pods -n shop\n" + out},
		{"bash", "ops@bastion:~/work$ kubectl get pods -n shop\n" + out},
		{"rhel", "[ops@bastion ~]$ kubectl get pods -n shop\n" + out},
		{"zsh", "jlee@mbp ~ % kubectl get pods -n shop\n" + out},
		{"starship", "❯ kubectl get pods -n shop\n" + out},
		{"starship with context", "shop on ☁ prod-eu ❯ kubectl get pods -n shop\n" + out},
		{"oh-my-zsh", "➜  infra git:(main) ✗ kubectl get pods -n shop\n" + out},
		{"powershell", "PS C:\\Users\\ops> kubectl get pods -n shop\n" + out},
		{"cmd", "C:\\Users\\ops>kubectl get pods -n shop\n" + out},
		{"root", "root@jumpbox:/srv# kubectl get pods -n shop\n" + out},
		{"oh-my-zsh alias", "➜  ~ kgp -n shop\n" + out},
		{"colours", "\x1b[01;32mops@bastion\x1b[00m:\x1b[01;34m~\x1b[00m$ kubectl get pods -n shop\n" +
			"\x1b[1mNAME\x1b[0m    READY   STATUS    RESTARTS   AGE\nweb-1   0/1     \x1b[33mPending\x1b[0m   0          5m\n"},
		{"continued", "$ kubectl get pods \\\n>   -n shop\n" + out},
		{"continued no ps2", "$ kubectl get pods \\\n    -n shop\n" + out},
		{"stamped", "2026-03-14 10:44:58 $ kubectl get pods -n shop\n" +
			"2026-03-14 10:44:59 NAME    READY   STATUS    RESTARTS   AGE\n2026-03-14 10:44:59 web-1   0/1     Pending   0          5m\n"},
		{"stamped brackets", "[10:44:58] ❯ kubectl get pods -n shop\n" +
			"[10:44:59] NAME    READY   STATUS    RESTARTS   AGE\n[10:44:59] web-1   0/1     Pending   0          5m\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(tc.text), time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC))
			p := object[*corev1.Pod](t, res, "shop", "web-1")
			if p.Status.Phase != corev1.PodPending || !p.CreationTimestamp.Time.Equal(time.Date(2026, 3, 14, 10, 40, 0, 0, time.UTC)) {
				t.Errorf("pod %+v", p.Status)
			}
			if len(res.Skipped) != 0 || len(res.Outputs) != 0 {
				t.Errorf("skipped %+v outputs %+v", res.Skipped, res.Outputs)
			}
		})
	}
	// A log whose lines carry their own timestamps keeps them.
	res := kubetext.Parse([]byte("$ kubectl logs web-1 -n shop\n2026-03-14T10:44:01Z ERROR boom\n2026-03-14T10:44:02Z INFO retry\n"), time.Time{})
	if len(res.Logs) != 1 || res.Logs[0].Lines[0] != "2026-03-14T10:44:01Z ERROR boom" {
		t.Errorf("logs %+v", res.Logs)
	}
}

// kubectl exec output is kept verbatim with where it ran; an interactive
// shell gives one output per typed command; other programs' output is kept
// as text.
func TestExecAndOtherCommands(t *testing.T) {
	text := `$ kubectl exec -n shop checkout-6d8f9c7b5-x2x9k -- curl -sS -m 3 http://payments.shop.svc.cluster.local:8080/healthz
Defaulted container "app" out of: app, istio-proxy
curl: (28) Connection timed out after 3001 milliseconds
command terminated with exit code 28
$ kubectl exec checkout-6d8f9c7b5-x2x9k -n shop -c app -- sh -c 'df -h /data'
Filesystem                Size      Used Available Use% Mounted on
/dev/nvme1n1              9.8G      9.8G         0 100% /data
$ kubectl exec -it deploy/redis -n cache -- redis-cli INFO memory
# Memory
used_memory_human:3.98G
maxmemory_human:4.00G
$ kubectl exec -it web-1 -n shop -- sh
/ # nslookup payments
Server:		10.96.0.10
Address:	10.96.0.10:53

** server can't find payments.shop.svc.cluster.local: NXDOMAIN

/ # env | grep DB_
DB_HOST=postgres.shop
/ # exit
$ kubectl exec -ti api-0 -n shop -- bash
root@api-0:/app# cat /etc/resolv.conf
search shop.svc.cluster.local svc.cluster.local cluster.local
nameserver 10.96.0.10
options ndots:5
root@api-0:/app# exit
exit
$ kubectl exec -it api-1 -n shop -- /bin/sh
$ psql -h ledger-db -U app -c 'select 1'
psql: error: connection to server at "ledger-db" (10.0.7.12), port 5432 failed: FATAL:  password authentication failed for user "app"
$ exit
$ openssl s_client -connect api.partner.example:443 -servername api.partner.example </dev/null 2>/dev/null | openssl x509 -noout -enddate
notAfter=Mar 13 23:59:59 2026 GMT
$ kubectl exec web-2 -n shop -- cat /missing
Error from server (NotFound): pods "web-2" not found
$ kubectl auth can-i get secrets -n shop --as=system:serviceaccount:shop:checkout
no
$ kubectl auth can-i create pods --subresource exec -n shop
yes
$ kubectl auth can-i list nodes --as system:serviceaccount:shop:checkout
Warning: resource 'nodes' is not namespace scoped

no - RBAC: clusterrole.rbac.authorization.k8s.io "node-reader" not found
`
	res := kubetext.Parse([]byte(text), time.Time{})
	type want struct {
		exec               bool
		ns, pod, target, c string
		run                string
		exit               int
		lines              []string
	}
	wants := []want{
		{true, "shop", "checkout-6d8f9c7b5-x2x9k", "checkout-6d8f9c7b5-x2x9k", "app", "curl -sS -m 3 http://payments.shop.svc.cluster.local:8080/healthz", 28,
			[]string{"curl: (28) Connection timed out after 3001 milliseconds"}},
		{true, "shop", "checkout-6d8f9c7b5-x2x9k", "checkout-6d8f9c7b5-x2x9k", "app", "sh -c 'df -h /data'", -1, []string{
			"Filesystem                Size      Used Available Use% Mounted on", "/dev/nvme1n1              9.8G      9.8G         0 100% /data"}},
		{true, "cache", "", "deploy/redis", "", "redis-cli INFO memory", -1, []string{"# Memory", "used_memory_human:3.98G", "maxmemory_human:4.00G"}},
		{true, "shop", "web-1", "web-1", "", "nslookup payments", -1, []string{"Server:        10.96.0.10", "Address:    10.96.0.10:53", "",
			"** server can't find payments.shop.svc.cluster.local: NXDOMAIN", ""}},
		{true, "shop", "web-1", "web-1", "", "env | grep DB_", -1, []string{"DB_HOST=postgres.shop"}},
		{true, "shop", "api-0", "api-0", "", "cat /etc/resolv.conf", -1, []string{"search shop.svc.cluster.local svc.cluster.local cluster.local",
			"nameserver 10.96.0.10", "options ndots:5"}},
		{true, "shop", "api-1", "api-1", "", "psql -h ledger-db -U app -c 'select 1'", -1, []string{
			`psql: error: connection to server at "ledger-db" (10.0.7.12), port 5432 failed: FATAL:  password authentication failed for user "app"`}},
		{false, "", "", "", "", "openssl s_client -connect api.partner.example:443 -servername api.partner.example </dev/null 2>/dev/null | openssl x509 -noout -enddate", -1,
			[]string{"notAfter=Mar 13 23:59:59 2026 GMT"}},
	}
	var got []kubetext.Output
	for _, o := range res.Outputs {
		if !strings.HasPrefix(o.Command, "kubectl auth") {
			got = append(got, o)
		}
	}
	if len(got) != len(wants) {
		for _, o := range got {
			t.Logf("%+v", o)
		}
		t.Fatalf("%d outputs, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		o := got[i]
		if o.Exec != w.exec || o.Namespace != w.ns || o.Pod != w.pod || o.Container != w.c || o.Run != w.run || o.ExitCode != w.exit ||
			w.exec && o.Target != w.target || strings.Join(o.Lines, "\n") != strings.Join(w.lines, "\n") {
			t.Errorf("output %d:\n got %+v\nwant %+v", i, o, w)
		}
	}
	if got[3].Line != 13 || !strings.HasPrefix(got[3].Command, "kubectl exec -it web-1") {
		t.Errorf("session command line %d %q", got[3].Line, got[3].Command)
	}
	if len(res.Absent) != 1 || res.Absent[0].Name != "web-2" || res.Absent[0].Kind != "Pod" {
		t.Errorf("absent %+v", res.Absent)
	}
	perms := res.Permissions
	if len(perms) != 3 || perms[0].Allowed || perms[0].Verb != "get" || perms[0].Resource != "secrets" || perms[0].Namespace != "shop" ||
		perms[0].As != "system:serviceaccount:shop:checkout" || !perms[1].Allowed || perms[1].Resource != "pods" || perms[1].Subresource != "exec" ||
		perms[2].Allowed || perms[2].As != "system:serviceaccount:shop:checkout" || !strings.HasPrefix(perms[2].Reason, "RBAC: clusterrole") || perms[2].Line != 44 {
		t.Errorf("permissions %+v", perms)
	}
	if len(res.Skipped) != 0 {
		t.Errorf("skipped %+v", res.Skipped)
	}
}

// rollout history (as kubectl 1.32 prints it) lists revisions and change
// causes; a --revision page names the revision's ReplicaSet, whose table
// row then carries the revision, its change cause and its Deployment.
func TestRolloutHistory(t *testing.T) {
	ref := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	text := "$ kubectl rollout history deployment/ledger -n pay\n" +
		"deployment.apps/ledger \nREVISION  CHANGE-CAUSE\n1         <none>\n2         helm upgrade ledger charts/ledger --set image.tag=1.9.1\n" +
		"3         kubectl set image deployment/ledger app=registry.example.com/pay/ledger:1.9.2\n\n" +
		"$ kubectl rollout history deploy ledger -n pay --revision=2\ndeployment.apps/ledger with revision #2\nPod Template:\n" +
		"  Labels:\tapp=ledger\n\tpod-template-hash=5b6c7d8f9\n" +
		"  Annotations:\tkubernetes.io/change-cause: helm upgrade ledger charts/ledger --set image.tag=1.9.1\n" +
		"  Service Account:\tledger\n  Containers:\n   app:\n    Image:\tregistry.example.com/pay/ledger:1.9.1\n    Port:\t<none>\n" +
		"    Host Port:\t<none>\n    Environment:\t<none>\n    Mounts:\t<none>\n  Volumes:\t<none>\n  Node-Selectors:\t<none>\n  Tolerations:\t<none>\n\n" +
		"$ kubectl get rs -n pay\nNAME               DESIRED   CURRENT   READY   AGE\nledger-7f9c8d6b5   2         2         2       25m\n" +
		"ledger-5b6c7d8f9   0         0         0       3d19h\nledger-api-6d4f8   1         1         1       13d\n"
	res := kubetext.Parse([]byte(text), ref)
	if len(res.Skipped) != 0 || len(res.Histories) != 2 {
		t.Fatalf("histories %+v skipped %+v", res.Histories, res.Skipped)
	}
	h := res.Histories[0]
	if h.Kind != "Deployment" || h.Name != "ledger" || h.Namespace != "pay" || len(h.Revisions) != 3 || h.Revisions[0].ChangeCause != "" ||
		h.Revisions[2].Number != 3 || h.Revisions[2].ChangeCause != "kubectl set image deployment/ledger app=registry.example.com/pay/ledger:1.9.2" || h.Revisions[1].Line != 5 {
		t.Errorf("history %+v", h)
	}
	r := res.Histories[1].Revisions
	if len(r) != 1 || r[0].Number != 2 || r[0].PodTemplateHash != "5b6c7d8f9" || r[0].Images["app"] != "registry.example.com/pay/ledger:1.9.1" ||
		r[0].ChangeCause != "helm upgrade ledger charts/ledger --set image.tag=1.9.1" {
		t.Errorf("revision page %+v", r)
	}
	rs := object[*appsv1.ReplicaSet](t, res, "pay", "ledger-5b6c7d8f9")
	if rs.Annotations["deployment.kubernetes.io/revision"] != "2" || rs.Annotations["kubernetes.io/change-cause"] != r[0].ChangeCause ||
		len(rs.OwnerReferences) != 1 || rs.OwnerReferences[0].Name != "ledger" || !rs.CreationTimestamp.Time.Equal(ref.Add(-(3*24+19)*time.Hour)) {
		t.Errorf("replica set of revision 2: %+v", rs.ObjectMeta)
	}
	// named as the controller names the Deployment's ReplicaSets: owned, revision unknown
	cur := object[*appsv1.ReplicaSet](t, res, "pay", "ledger-7f9c8d6b5")
	if len(cur.OwnerReferences) != 1 || cur.Annotations["deployment.kubernetes.io/revision"] != "" {
		t.Errorf("current replica set: %+v", cur.ObjectMeta)
	}
	// another Deployment's ReplicaSet is left alone
	if other := object[*appsv1.ReplicaSet](t, res, "pay", "ledger-api-6d4f8"); len(other.OwnerReferences) != 0 {
		t.Errorf("ledger-api's replica set owned by %+v", other.OwnerReferences)
	}
}

// Output kept as text never keeps a secret's value: environment and config
// assignments of passwords, tokens and keys, URL passwords and
// Authorization headers are redacted, and a secret's values asked for in a
// form not read (-o jsonpath) are not kept at all. A custom resource's
// table is kept as text.
func TestKeptTextRedaction(t *testing.T) {
	text := `$ kubectl exec api-0 -n shop -- env
DB_HOST=postgres.shop
DB_PASSWORD=hunter2
STRIPE_API_KEY=sk_live_abc
DATABASE_URL=postgres://app:s3cret@postgres:5432/shop
$ curl -H "Authorization: Bearer eyJhbGciOi" https://api.example.com/v1/me
{"error":"token expired"}
$ kubectl get secret shop-db -n shop -o jsonpath='{.data.password}'
aHVudGVyMg==
$ kubectl get certificates -n shop
NAME       READY   SECRET     AGE
shop-tls   False   shop-tls   3d
`
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Outputs) != 3 {
		t.Fatalf("outputs %+v", res.Outputs)
	}
	env := strings.Join(res.Outputs[0].Lines, "\n")
	if env != "DB_HOST=postgres.shop\nDB_PASSWORD=<redacted>\nSTRIPE_API_KEY=<redacted>\nDATABASE_URL=postgres://app:<redacted>@postgres:5432/shop" {
		t.Errorf("env:\n%s", env)
	}
	if c := res.Outputs[1].Command; strings.Contains(c, "eyJ") || !strings.Contains(c, "Bearer <redacted>") {
		t.Errorf("curl command %q", c)
	}
	if o := res.Outputs[2]; o.Command != "kubectl get certificates -n shop" || len(o.Lines) != 2 || o.Namespace != "shop" {
		t.Errorf("custom resource table %+v", o)
	}
	for _, o := range res.Outputs {
		if strings.Contains(strings.Join(o.Lines, "\n"), "aHVudGVyMg") {
			t.Errorf("a secret's value kept: %+v", o)
		}
	}
	var reasons []string
	for _, s := range res.Skipped {
		reasons = append(reasons, s.Reason)
	}
	if all := strings.Join(reasons, "\n"); !strings.Contains(all, "kubectl get -o jsonpath={.data.password} is not read\n") || !strings.Contains(all, "get of a kind not read (kept as text)") {
		t.Errorf("skipped:\n%s", all)
	}
}

// kubectl logs of a workload reads one of its pods: the one kubectl names
// ("Found 3 pods, using pod/..."), or the only one of its pods the
// transcript shows; otherwise the output is kept as text. kubectl debug
// and kubectl run shells are read as exec shells.
func TestWorkloadLogsAndDebugShells(t *testing.T) {
	text := `$ kubectl get pods -n shop
NAME                        READY   STATUS    RESTARTS   AGE
web-5d9f8c7b6-abcde         1/1     Running   0          1h
web-api-7c8d9e6f5-fghij     1/1     Running   0          1h
worker-0                    1/1     Running   0          1h
worker-1                    1/1     Running   0          1h
$ kubectl logs deploy/web -n shop
2026-03-14T10:40:00Z ERROR upstream timeout
$ kubectl logs deployment/web-api -n shop --all-containers
Found 2 pods, using pod/web-api-7c8d9e6f5-fghij
[app] boom
$ kubectl logs sts/worker -n shop
2026-03-14T10:41:00Z WARN lag
$ kubectl logs deployment/web-api -n shop -c app
Found 2 pods, using pod/web-api-7c8d9e6f5-fghij
Defaulted container "app" out of: app, envoy
2026-03-14T10:42:00Z ERROR db down
$ kubectl debug -it web-5d9f8c7b6-abcde -n shop --image=nicolaka/netshoot --target=app
Defaulting debug container name to debugger-x7k2p.
If you don't see a command prompt, try pressing enter.
web-5d9f8c7b6-abcde  ~  # dig +short payments.shop.svc.cluster.local
~ # nc -zv payments 8080
nc: payments (10.96.14.2:8080): Connection refused
~ # exit
$ kubectl run tmp-shell --rm -it -n shop --image busybox --restart=Never -- sh
If you don't see a command prompt, try pressing enter.
/ # wget -qO- http://payments:8080/healthz
wget: can't connect to remote host (10.96.14.2): Connection refused
/ # exit
pod "tmp-shell" deleted
`
	res := kubetext.Parse([]byte(text), time.Time{})
	var logs []string
	for _, l := range res.Logs {
		logs = append(logs, l.Namespace+"/"+l.Pod+"/"+l.Container+": "+strings.Join(l.Lines, "|"))
	}
	// --all-containers of the pod kubectl chose: its log, containers unknown
	want := "shop/web-api-7c8d9e6f5-fghij/: [app] boom\nshop/web-api-7c8d9e6f5-fghij/app: 2026-03-14T10:42:00Z ERROR db down\nshop/web-5d9f8c7b6-abcde/: 2026-03-14T10:40:00Z ERROR upstream timeout"
	if got := strings.Join(logs, "\n"); got != want {
		t.Errorf("logs:\n%s\nwant\n%s", got, want)
	}
	var outs []string
	for _, o := range res.Outputs {
		outs = append(outs, fmt.Sprintf("%v %s %s %s: %s: %s", o.Exec, o.Pod, o.Target, o.Container, o.Run, strings.Join(o.Lines, "|")))
	}
	wantOuts := []string{
		"false  statefulset/worker : kubectl logs sts/worker -n shop: 2026-03-14T10:41:00Z WARN lag",
		"true web-5d9f8c7b6-abcde web-5d9f8c7b6-abcde debugger-x7k2p: dig +short payments.shop.svc.cluster.local: ",
		"true web-5d9f8c7b6-abcde web-5d9f8c7b6-abcde debugger-x7k2p: nc -zv payments 8080: nc: payments (10.96.14.2:8080): Connection refused",
		"true  pod/tmp-shell (kubectl run) : wget -qO- http://payments:8080/healthz: wget: can't connect to remote host (10.96.14.2): Connection refused",
	}
	if got := strings.Join(outs, "\n"); got != strings.Join(wantOuts, "\n") {
		t.Errorf("outputs:\n%s\nwant\n%s", got, strings.Join(wantOuts, "\n"))
	}
}

// stern's output is read as the logs of the pods and containers its lines
// name; its own lines are not log lines.
func TestStern(t *testing.T) {
	text := `❯ stern checkout -n shop --since 15m
+ checkout-6d8f9c7b5-x2x9k › app
+ checkout-6d8f9c7b5-x2x9k › istio-proxy
checkout-6d8f9c7b5-x2x9k app 2026-03-14T10:40:01Z ERROR payment failed: dial tcp 10.96.14.2:8080: connect: connection refused
checkout-6d8f9c7b5-x2x9k istio-proxy [2026-03-14T10:40:01.120Z] "POST /pay HTTP/1.1" 503 UF
checkout-6d8f9c7b5-x2x9k app 2026-03-14T10:40:02Z INFO retrying
- checkout-6d8f9c7b5-x2x9k › istio-proxy
❯ kubectl stern -A payments
shop payments-7d9f8c6b5-abcde app 2026-03-14T10:40:03Z WARN slow query
`
	res := kubetext.Parse([]byte(text), time.Time{})
	var got []string
	for _, l := range res.Logs {
		got = append(got, fmt.Sprintf("%s/%s/%s: %s", l.Namespace, l.Pod, l.Container, strings.Join(l.Lines, " | ")))
	}
	want := []string{
		"shop/checkout-6d8f9c7b5-x2x9k/app: 2026-03-14T10:40:01Z ERROR payment failed: dial tcp 10.96.14.2:8080: connect: connection refused | 2026-03-14T10:40:02Z INFO retrying",
		`shop/checkout-6d8f9c7b5-x2x9k/istio-proxy: [2026-03-14T10:40:01.120Z] "POST /pay HTTP/1.1" 503 UF`,
		"shop/payments-7d9f8c6b5-abcde/app: 2026-03-14T10:40:03Z WARN slow query",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(res.Outputs) != 0 || len(res.Skipped) != 0 {
		t.Errorf("outputs %+v skipped %+v", res.Outputs, res.Skipped)
	}
}

// After a bare "# " root prompt, only kubectl starts a command: output
// lines that start with "# " (redis-cli's section headers) stay output.
func TestBareRootPrompt(t *testing.T) {
	text := "# kubectl exec redis-0 -n cache -- redis-cli INFO memory\n# Memory\nused_memory_human:3.98G\n# Stats\nevicted_keys:1203\n"
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Outputs) != 1 || len(res.Outputs[0].Lines) != 4 || res.Outputs[0].Pod != "redis-0" {
		t.Errorf("outputs %+v", res.Outputs)
	}
}

// An error kubectl printed instead of output is kept as text: a Forbidden
// answer says what the credentials may not do.
func TestErrorKeptAsText(t *testing.T) {
	text := "$ kubectl get pods -n payments --as=system:serviceaccount:ci:deployer\n" +
		`Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:ci:deployer" cannot list resource "pods" in API group "" in the namespace "payments"` + "\n"
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Outputs) != 1 || res.Outputs[0].Namespace != "payments" || !strings.Contains(res.Outputs[0].Lines[0], "cannot list resource") {
		t.Errorf("outputs %+v", res.Outputs)
	}
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "kubectl answered an error (kept as text)") {
		t.Errorf("skipped %+v", res.Skipped)
	}
}

// kubectl logs --prefix names the pod and container of every line.
func TestPrefixedLogs(t *testing.T) {
	text := "$ kubectl logs -l app=checkout -n shop --prefix --all-containers\n" +
		"[pod/checkout-6d8f9c7b5-x2x9k/app] 2026-03-14T10:40:01Z ERROR payment failed\n" +
		"[pod/checkout-6d8f9c7b5-q7w2e/app] 2026-03-14T10:40:02Z INFO ok\n" +
		"[pod/checkout-6d8f9c7b5-x2x9k/app] 2026-03-14T10:40:03Z ERROR payment failed\n"
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Logs) != 2 || res.Logs[0].Pod != "checkout-6d8f9c7b5-x2x9k" || res.Logs[0].Container != "app" || len(res.Logs[0].Lines) != 2 ||
		res.Logs[0].Lines[1] != "2026-03-14T10:40:03Z ERROR payment failed" || res.Logs[1].Namespace != "shop" || len(res.Outputs) != 0 {
		t.Errorf("logs %+v outputs %+v", res.Logs, res.Outputs)
	}
}

// A pods or events table whose header grep filtered out is read with
// kubectl's columns for that command; rows that do not fit are not read.
func TestHeaderlessTables(t *testing.T) {
	ref := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	text := `$ kubectl get pods -A | grep -v Running
shop          checkout-6d8f9c7b5-x2x9k         0/1     CrashLoopBackOff   7 (2m ago)   25m
logistics     carrier-sync-5d4c3b2a19-x8p2q    0/1     ImagePullBackOff   0            3h
$ kubectl get events -n shop | grep Warning
61s (x58 over 15m)   Warning   ProvisioningFailed   persistentvolumeclaim/report-scratch   storageclass.storage.k8s.io "fast-ssd" not found
2m                   Warning   BackOff              pod/checkout-6d8f9c7b5-x2x9k           Back-off restarting failed container app in pod checkout-6d8f9c7b5-x2x9k_shop
$ kubectl get pods -n shop | grep checkout
checkout-6d8f9c7b5-x2x9k   something else
`
	res := kubetext.Parse([]byte(text), ref)
	p := object[*corev1.Pod](t, res, "shop", "checkout-6d8f9c7b5-x2x9k")
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
		p.Status.ContainerStatuses[0].State.Waiting.Reason != "CrashLoopBackOff" || p.Status.ContainerStatuses[0].RestartCount != 7 {
		t.Errorf("pod %+v", p.Status)
	}
	object[*corev1.Pod](t, res, "logistics", "carrier-sync-5d4c3b2a19-x8p2q")
	if len(res.Events) != 2 || res.Events[0].InvolvedObject.Kind != "PersistentVolumeClaim" || res.Events[0].Count != 58 ||
		res.Events[1].Reason != "BackOff" || res.Events[1].InvolvedObject.Namespace != "shop" {
		t.Errorf("events %+v", res.Events)
	}
	var reasons []string
	for _, s := range res.Skipped {
		reasons = append(reasons, s.Reason)
	}
	all := strings.Join(reasons, "\n")
	if !strings.Contains(all, "columns of kubectl's pod table are assumed") || !strings.Contains(all, "columns of kubectl's events table are assumed") ||
		!strings.Contains(all, "no NAME column") {
		t.Errorf("skipped:\n%s", all)
	}
}
