package analyst

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// FuzzCommandReaders feeds hostile output of a command an operator ran
// (psql and mysql, clickhouse-client, jcmd and jstack, grep -c of a dump,
// kafka-consumer-groups, helm, openssl s_client, kubectl gets, etcdctl,
// env, a profile...) to every reader of command output: the table and
// dump readers, and every mechanism's detection with that one command in
// its evidence, run in a pod of the service and on a host. Each must
// return (no panic, no hang). Seeds are the commands' outputs as the
// programs printed them in the repository's own transcripts (a few per
// program).
func FuzzCommandReaders(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/*/*/*.txt")
	perProgram := map[string]int{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if !kubetext.IsTranscript(b) && !kubetext.IsHostTranscript(b) {
			continue
		}
		for _, o := range kubetext.Parse(b, testWindow().End).Outputs {
			prog, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(o.Run), "sudo "), " ")
			if perProgram[prog] < 3 {
				perProgram[prog]++
				f.Add(o.Run, strings.Join(o.Lines, "\n"))
			}
		}
	}
	f.Add("psql -c 'select 1'", "-[ RECORD 1 ]-+--\nx | 1\n+---+\n| a |\n+---+\n*** 1. row ***\n┌─a─┬─b─┐\n│ 1 │")
	f.Add("jcmd 1 Thread.print | grep -c 'A.b'; jcmd 1 Thread.print | grep -c \"qtp", "\"qtp1-2\" #1\n   at a.B.c(B.java:1)\ngoroutine 1 [select]:\nnet/http.(*conn).serve(0x1)\n7")
	f.Fuzz(func(t *testing.T, run, out string) {
		lines := strings.Split(out, "\n")
		for _, tb := range append(sqlTables(lines), chTables(lines)...) {
			for r := range tb.rows {
				for _, c := range tb.cols {
					tb.cell(r, c)
				}
			}
		}
		parseThreads(lines)
		grepCounts(run, lines)
		kubectlTable(lines, "NAME")
		readSClient(run, lines)
		readProfile(lines)
		challengeRows(lines)
		readProxyEnv(lines)
		etcdctlDBSize(lines)
		w := testWindow()
		for _, c := range []evidence.CommandOutput{
			{Command: "kubectl exec -n shop api-5c8f7d9b6-6jlqw -- " + run, Exec: true, Namespace: "shop", Pod: "api-5c8f7d9b6-6jlqw", Run: run, ExitCode: -1, Lines: lines},
			{Command: run, Run: run, Host: "db-01", ExitCode: 1, Lines: lines},
		} {
			ev := &Gathered{Commands: []evidence.CommandOutput{c}, Window: w, Scope: Scope{Service: "api", Namespace: "shop"}}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, m := range mechanisms {
					if m.detect != nil {
						m.detect(ev, nil)
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("detection did not return in 10 s on %q", run)
			}
		}
	})
}
