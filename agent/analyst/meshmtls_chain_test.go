package analyst_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/agent/eval"
	"github.com/rootcause/rootcause/finding"
)

// meshSession is a troubleshooting session: a CronJob's pod in a namespace
// without injection gets its calls reset by a namespace whose mTLS is
// STRICT.
func meshSession(callerLabels, policyMode string, withEnvoyLog bool) string {
	s := `$ kubectl get pods -n reporting
NAME                              READY   STATUS   RESTARTS   AGE
ledger-sync-29926300-8kq2w        0/1     Error    0          9m

$ kubectl get jobs -n reporting
NAME                   STATUS   COMPLETIONS   DURATION   AGE
ledger-sync-29926300   Failed   0/1           9m         9m

$ kubectl logs ledger-sync-29926300-8kq2w -n reporting
2026-11-25T03:01:02.114Z INFO sync starting, source=http://ledger.payments.svc.cluster.local:9090/v2/entries
2026-11-25T03:01:02.130Z WARN retrying GET http://ledger.payments.svc.cluster.local:9090/v2/entries: read tcp 10.40.2.17:51234->10.40.6.9:9090: read: connection reset by peer
2026-11-25T03:01:04.131Z WARN retrying GET http://ledger.payments.svc.cluster.local:9090/v2/entries: read tcp 10.40.2.17:51240->10.40.6.9:9090: read: connection reset by peer
2026-11-25T03:01:08.133Z ERROR sync failed: Get "http://ledger.payments.svc.cluster.local:9090/v2/entries": read tcp 10.40.2.17:51252->10.40.6.9:9090: read: connection reset by peer

$ kubectl get pa -n payments
NAME      MODE     AGE
default   ` + policyMode + `   2d

$ kubectl get ns payments reporting --show-labels
NAME        STATUS   AGE    LABELS
payments    Active   300d   istio-injection=enabled,kubernetes.io/metadata.name=payments
reporting   Active   200d   ` + callerLabels + `
`
	if withEnvoyLog {
		s += `
$ kubectl logs ledger-6f7d8c9b5-q2w4e -n payments -c istio-proxy --since=15m
[2026-11-25T03:01:02.129Z] "- - -" 0 NR filter_chain_not_found - "-" 0 0 0 - "-" "-" "-" "-" "-" - - 10.40.6.9:9090 10.40.2.17:51234 - -
[2026-11-25T03:01:04.130Z] "- - -" 0 NR filter_chain_not_found - "-" 0 0 0 - "-" "-" "-" "-" "-" - - 10.40.6.9:9090 10.40.2.17:51240 - -
`
	}
	return s
}

func TestMeshMTLSChain(t *testing.T) {
	cases := []struct {
		name      string
		session   string
		wantMesh  bool
		wantWords []string
	}{
		{"STRICT, caller outside the mesh, sidecar refuses plaintext",
			meshSession("kubernetes.io/metadata.name=reporting,team=finance", "STRICT", true), true,
			[]string{"PeerAuthentication payments/default mode STRICT", "namespace reporting has no istio-injection label", "2 connections: NR filter_chain_not_found", "connection reset by peer"}},
		{"STRICT and a caller outside the mesh, no sidecar log",
			meshSession("kubernetes.io/metadata.name=reporting,team=finance", "STRICT", false), true,
			[]string{"PeerAuthentication payments/default mode STRICT", "runs without an Istio sidecar"}},
		{"the caller is in the mesh",
			meshSession("istio-injection=enabled,kubernetes.io/metadata.name=reporting", "STRICT", true), false, nil},
		{"PERMISSIVE and no refusal seen",
			meshSession("kubernetes.io/metadata.name=reporting,team=finance", "PERMISSIVE", false), false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runScenarioFiles(t, map[string]string{
				"bundle.json":   `{"captured_at":"2026-11-25T03:10:00Z"}`,
				"session.txt":   c.session,
				"changes.json":  `[]`,
				"scenario.json": `{"title":"t","now":"2026-11-25T03:10:00Z","request":{"agent_name":"planner","message":"why did ledger-sync fail with connection reset by peer?","context":{"namespace":"reporting","service":"ledger-sync"}}}`,
			})
			d := res.RootCause.Description
			t.Logf("%v%%: %s", res.RootCause.Confidence, d)
			if got := strings.Contains(d, "closed by the service mesh"); got != c.wantMesh {
				t.Fatalf("mesh root %v, want %v: %s", got, c.wantMesh, d)
			}
			for _, w := range c.wantWords {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if !c.wantMesh && res.RootCause.Confidence > 70 {
				t.Errorf("a Job failed on reset connections, no mechanism behind them, at %v%%: %s", res.RootCause.Confidence, d)
			}
		})
	}
}

// runScenarioFiles writes files (name to content) into a new bundle
// directory and investigates the scenario they make.
func runScenarioFiles(t *testing.T, files map[string]string) *finding.Result {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return runScenarioDir(t, dir)
}

// runScenarioDir investigates the scenario written in dir.
func runScenarioDir(t *testing.T, dir string) *finding.Result {
	t.Helper()
	s, err := eval.LoadScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := eval.Run(context.Background(), s, analyst.New(analyst.Options{}), eval.Options{Catalog: testCatalog()})
	if err != nil || out.Result == nil {
		t.Fatalf("run: %v", err)
	}
	return out.Result
}
