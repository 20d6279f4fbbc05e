package kubetext_test

import (
	"bytes"
	"os"
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
