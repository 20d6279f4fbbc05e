package kubetext_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// Disruption budgets as a drain investigation shows them: every
// namespace's table, and one budget as YAML and JSON, printed by real
// kubectl from testdata/cluster-more (goldens in testdata/transcripts-pdb).

var pdbCommands = []string{
	"kubectl get pdb -A",
	"kubectl get pdb ledger -n pay -o yaml",
	"kubectl get poddisruptionbudget ledger -n pay -o json",
}

// checkPDB parses a transcript of the budget commands: the budget is read,
// equal to its source, with its spec and status.
func checkPDB(t *testing.T, text []byte, capturedAt time.Time) {
	t.Helper()
	s, res := parseAgainst(t, moreFixtures, text, capturedAt)
	if len(res.Outputs) != 0 {
		t.Errorf("outputs kept as text: %+v", res.Outputs)
	}
	n := 0
	for _, o := range res.Objects {
		pdb, ok := o.(*policyv1.PodDisruptionBudget)
		if !ok {
			t.Errorf("%T read", o)
			continue
		}
		n++
		src := find(s.Objects("PodDisruptionBudget"), pdb.Namespace, pdb.Name)
		if src == nil {
			t.Errorf("%s/%s: not in the source objects", pdb.Namespace, pdb.Name)
			continue
		}
		checkSound(t, "PodDisruptionBudget/"+pdb.Name, toJSONMap(t, pdb), canonical(t, src), capturedAt)
	}
	if n != 1 {
		t.Fatalf("%d budgets read, want 1 (the table and the documents merged)", n)
	}
	pdb := object[*policyv1.PodDisruptionBudget](t, res, "pay", "ledger")
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 2 || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("spec %+v", pdb.Spec)
	}
	if st := pdb.Status; st.DisruptionsAllowed != 0 || st.ExpectedPods != 2 || st.CurrentHealthy != 2 || st.DesiredHealthy != 2 {
		t.Errorf("status %+v", st)
	}
	if pdb.Spec.Selector == nil || pdb.Spec.Selector.MatchLabels["app"] != "ledger" {
		t.Errorf("selector %+v", pdb.Spec.Selector)
	}
}

func TestPDBGoldens(t *testing.T) {
	updateGolden(t, "transcripts-pdb", moreFixtures, pdbCommands)
	checkGoldens(t, "transcripts-pdb", 1, checkPDB)
}

func TestKubectlMatchesPDBGoldens(t *testing.T) {
	matchKubectl(t, kubectlPath(t), moreFixtures, pdbCommands, checkPDB)
}

// A command whose output went to a file shows none in the transcript:
// what follows it (a bare prompt, stderr) is not read as its output.
func TestRedirectedOutput(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/transcripts-pdb/kubectl-*")
	if len(dirs) == 0 {
		t.Fatal("no goldens")
	}
	golden, err := os.ReadFile(filepath.Join(dirs[len(dirs)-1], "cluster.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// the table, from the golden
	table, _, _ := bytes.Cut(golden, []byte("$ kubectl get pdb ledger"))
	for _, tc := range []struct {
		name, redirect, after string
		kept                  []string
	}{
		{"yaml to a file", "kubectl get pdb ledger -n pay -o yaml > pdb.yaml", "❯ \n", nil},
		{"json appended", "kubectl get pdb ledger -n pay -o json >>pdb.json", "", nil},
		{"both streams", "kubectl get pdb -A -o yaml &> all.yaml", "❯ \n", nil},
		{"stderr shown", "kubectl get pdb nope -n pay -o yaml > nope.yaml",
			"Error from server (NotFound): poddisruptionbudgets.policy \"nope\" not found\n", nil},
		{"warning shown", "kubectl get pdb ledger -n pay -o yaml > pdb.yaml",
			"Warning: policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, unavailable in v1.25+; use policy/v1 PodDisruptionBudget\n❯ \n",
			[]string{"Warning: policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, unavailable in v1.25+; use policy/v1 PodDisruptionBudget"}},
		{"host command", "cat /etc/haproxy/haproxy.cfg > /tmp/cfg", "❯ \n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.ReplaceAll(string(table), "$ ", "❯ ") + "❯ " + tc.redirect + "\n" + tc.after
			res := kubetext.Parse([]byte(text), time.Time{})
			noSkipped(t, res)
			var kept []string
			for _, o := range res.Outputs {
				kept = append(kept, o.Lines...)
			}
			if !slices.Equal(kept, tc.kept) {
				t.Errorf("kept %q, want %q", kept, tc.kept)
			}
			if strings.Contains(tc.after, "NotFound") && (len(res.Absent) != 1 || res.Absent[0].Name != "nope") {
				t.Errorf("absent %+v", res.Absent)
			}
			pdb := object[*policyv1.PodDisruptionBudget](t, res, "pay", "ledger")
			if pdb.Spec.Selector != nil || pdb.Status.ExpectedPods != 0 {
				t.Errorf("the table's budget took fields from no output: %+v", pdb)
			}
		})
	}
	// 2> and 2>&1 leave the output on the terminal
	text := "$ kubectl get pdb ledger -n pay -o yaml 2>/dev/null\n" + string(golden[bytes.Index(golden, []byte("apiVersion: policy/v1")):bytes.Index(golden, []byte("$ kubectl get poddisruptionbudget"))])
	pdb := object[*policyv1.PodDisruptionBudget](t, kubetext.Parse([]byte(text), time.Time{}), "pay", "ledger")
	if pdb.Status.ExpectedPods != 2 {
		t.Errorf("2>/dev/null: status %+v", pdb.Status)
	}
}
