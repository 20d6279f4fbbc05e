package kubetext_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// BenchmarkParse reads the kubectl 1.32 golden repeated 20 times (about
// 0.5 MB: 320 describe pages, tables, logs).
func BenchmarkParse(b *testing.B) {
	g, err := os.ReadFile("testdata/transcripts/kubectl-1.32/cluster.txt")
	if err != nil {
		b.Fatal(err)
	}
	data := bytes.Repeat(g, 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		kubetext.Parse(data, fuzzRef)
	}
}

// BenchmarkParseHostile reads inputs shaped to make a reader slow: a
// command continued over every line, long lines after a prompt glyph, an
// exec shell of 50,000 commands, stamped lines, logs of workloads and
// rollout histories against many ReplicaSets, logs of a workload with
// thousands of pods, a long helm history. Each stays near linear
// (`go test ./agent/evidence/kubetext -run '^$' -bench ParseHostile`).
func BenchmarkParseHostile(b *testing.B) {
	long := strings.Repeat("a ", 1000)
	for _, in := range []struct{ name, text string }{
		{"continued", strings.Repeat("$ kubectl get pods \\\n", 50000)},
		{"glyph-lines", strings.Repeat("❯ "+long+"\n", 2000)},
		{"exec-shell", "$ kubectl exec -it p -- sh\n" + strings.Repeat("/ # env\nA=1\n", 50000)},
		{"stamped", strings.Repeat("2026-03-14 10:44:58 $ kubectl get pods\n2026-03-14 10:44:58 NAME READY\n", 20000)},
		{"workload-logs", strings.Repeat("$ kubectl get pods\nNAME READY\nx-abcd1-efgh2 1/1\n$ kubectl logs deploy/x\nline\n", 5000)},
		{"workload-logs-many-pods", "$ kubectl get pods -n ns\nNAME  READY  STATUS  RESTARTS  AGE\n" + manyPods(5000) +
			strings.Repeat("$ kubectl logs deploy/web -n ns\nline\n", 5000)},
		{"helm-history", "$ helm history web -n ns\nREVISION\tUPDATED                 \tSTATUS    \tCHART\n" +
			strings.Repeat("1       \tSun Mar  1 09:12:40 2026\tsuperseded\tweb-2.3.0\n", 20000)},
		{"histories", strings.Repeat("$ kubectl get rs\nNAME DESIRED\nx-abcd1 1\n$ kubectl rollout history deploy/x\nREVISION  CHANGE-CAUSE\n1 a\n", 5000)},
	} {
		b.Run(in.name, func(b *testing.B) {
			data := []byte(in.text)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				kubetext.Parse(data, fuzzRef)
			}
		})
	}
}

// manyPods is a get pods table's rows of n pods of one Deployment.
func manyPods(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "web-5d9f8b7c6-%05d  1/1  Running  0  5m\n", i)
	}
	return b.String()
}
