package kubetext_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// The fuzz targets feed hostile input to every reader: the whole
// transcript, and the output of each command form behind a fixed command
// line. Each run must return (no panic, no hang) with bounded results.
// Seeds are the kubectl goldens; `go test` runs the seeds and the corpus,
// `go test -fuzz FuzzParse` explores.

func seeds(f *testing.F) [][]byte {
	f.Helper()
	files, _ := filepath.Glob("testdata/transcripts*/*/cluster.txt")
	helm, _ := filepath.Glob("testdata/transcripts-helm/*/session.txt")
	files = append(files, helm...)
	files = append(files, "testdata/tables.txt")
	var out [][]byte
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

var fuzzRef = time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)

func checkBounded(t *testing.T, data []byte) {
	t.Helper()
	res := kubetext.Parse(data, fuzzRef)
	if len(res.Objects) > kubetext.MaxObjects || len(res.Events) > kubetext.MaxEvents || len(res.Skipped) > kubetext.MaxSkips ||
		len(res.Absent) > kubetext.MaxAbsent || len(res.Usage) > kubetext.MaxObjects || len(res.Outputs) > kubetext.MaxOutputs ||
		len(res.Histories) > kubetext.MaxObjects || len(res.Permissions) > kubetext.MaxObjects {
		t.Fatalf("unbounded result: %d objects, %d events, %d skipped, %d absent, %d usage, %d outputs", len(res.Objects), len(res.Events), len(res.Skipped),
			len(res.Absent), len(res.Usage), len(res.Outputs))
	}
	n := 0
	for _, o := range res.Outputs {
		n += len(o.Lines)
	}
	for _, l := range res.Logs {
		n += len(l.Lines)
		for _, line := range l.Lines {
			if len(line) > kubetext.MaxLine*4 {
				t.Fatalf("line of %d bytes kept", len(line))
			}
		}
	}
	if n > kubetext.MaxLogLines {
		t.Fatalf("%d log lines kept", n)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Add([]byte("$ kubectl get pods\nNAME  READY\nx  1/1\n$ kubectl logs x\n$ kubectl\n$ \n$"))
	f.Fuzz(func(t *testing.T, data []byte) { checkBounded(t, data) })
}

// commandForms are the command lines each form-specific target puts in
// front of the fuzzed output.
var commandForms = []string{
	"kubectl describe pod p -n ns", "kubectl describe deploy d -n ns", "kubectl describe rs r -n ns",
	"kubectl describe sts s -n ns", "kubectl describe ds d -n ns", "kubectl describe job j -n ns",
	"kubectl describe cj c -n ns", "kubectl describe node n", "kubectl describe pvc c -n ns",
	"kubectl describe pv v", "kubectl describe svc s -n ns", "kubectl describe ing i -n ns",
	"kubectl describe hpa h -n ns", "kubectl describe cm c -n ns", "kubectl describe secret s -n ns", "kubectl get pods -o wide -A", "kubectl get deploy,rs,sts,ds,svc,pvc,pv,ing,hpa,ep,no,job,cj -A",
	"kubectl get events -A", "kubectl events -n ns", "kubectl logs p -c c -p -n ns", "kubectl top pod -A --containers",
	"kubectl top node", "kubectl get pods -o yaml -n ns", "kubectl get pods -o json -n ns",
	"kubectl get cm,secrets -A", "kubectl get secret a b -n ns", "kubectl rollout status deploy/d -n ns",
	"kubectl rollout status sts/s -n ns", "kubectl rollout status ds/d -n ns", "kubectl rollout history deploy/d -n ns",
	"kubectl describe quota -n ns", "kubectl describe limits l -n ns", "kubectl get quota -A",
	"kubectl rollout history deploy/d -n ns --revision=2", "kubectl exec -n ns p -c c -- curl -sv http://x:8080/",
	"kubectl exec -it p -n ns -- sh", "kubectl auth can-i get secrets -n ns --as=system:serviceaccount:ns:sa",
	"kubectl describe netpol -n ns", "kubectl describe pdb p -n ns", "kubectl describe sa s -n ns", "kubectl describe role r -n ns",
	"kubectl describe rolebinding r -n ns", "kubectl describe clusterrole c", "kubectl describe clusterrolebinding c",
	"kubectl get netpol,pdb,sa,role,rolebinding -A -o wide", "kubectl get clusterrole,clusterrolebinding -o wide",
	"dig +short x.ns.svc.cluster.local", "stern p -n ns", "kubectl stern -A p", "kubectl logs deploy/d -n ns",
	"kubectl debug -it p -n ns --image=busybox -- sh", "kubectl get pods -A -o wide | grep -v Running",
	"kubectl get events -A | grep Warning", "kubectl logs -l app=a --prefix -n ns",
	"helm history r -n ns", "helm history r -n ns -o yaml", "helm ls -A -o json", "helm status r -n ns",
	"kubectl get pods -A -o wide --no-headers", "kubectl get ev -n ns --no-headers", "kubectl logs p -n ns --all-containers",
	"kubectl describe pod p -n ns | tail -5",
}

// FuzzPrompts puts fuzzed prompts, colour codes and timestamps in front of
// a command and its output.
func FuzzPrompts(f *testing.F) {
	for _, p := range []string{"$ ", "❯ ", "➜  dir git:(main) ✗ ", "user@host:~$ ", "[u@h ~]$ ", "% ", "PS C:\\> ", "C:\\>", "root@p:/# ",
		"\x1b[32m$\x1b[0m ", "2026-03-14 10:44:58 $ ", "[10:44:58] ❯ "} {
		f.Add(p, []byte("kubectl exec -it p -- sh\n/ # env\nA=1\n$ exit\n$ kubectl get pods \\\n> -n ns\nNAME READY\np 1/1\n"))
		f.Add(p, []byte("ssh -p 22 ops@lb-01 'sudo cat /etc/haproxy/haproxy.cfg' > cfg 2>&1\n"+p+"\nops@h:~$ dig x\n;; timed out\n"))
	}
	f.Fuzz(func(t *testing.T, prompt string, body []byte) {
		checkBounded(t, append([]byte(prompt), body...))
	})
}

func FuzzForms(f *testing.F) {
	n := 0
	for _, s := range seeds(f) {
		// each golden section behind its own command and two other forms
		// (the fuzzer varies the form too)
		for _, sec := range strings.Split(string(s), "\n$ ") {
			cmd, body, _ := strings.Cut(sec, "\n")
			for i, form := range commandForms {
				if form == strings.TrimPrefix(cmd, "$ ") || i == n%len(commandForms) || i == (n*7+3)%len(commandForms) {
					f.Add(uint8(i), []byte(body))
				}
			}
			n++
		}
	}
	f.Fuzz(func(t *testing.T, form uint8, body []byte) {
		cmd := commandForms[int(form)%len(commandForms)]
		checkBounded(t, append([]byte("$ "+cmd+"\n"), body...))
	})
}
