package kubetext_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "regenerate the kubectl transcript goldens with the kubectl on PATH (or $KUBECTL)")

// anchor is the capture time of the fixtures in testdata/cluster.
var anchor = time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)

// kubectlPath finds kubectl: $KUBECTL, else PATH. In CI a missing kubectl
// fails the test; elsewhere it skips.
func kubectlPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	p, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kubectl is needed by this test: apt-get install kubernetes-client")
		}
		t.Skip("kubectl not found (apt-get install kubernetes-client, or set KUBECTL): skipping the test against real kubectl")
	}
	return p
}

// kubectlMinor returns the client's version as "1.20".
func kubectlMinor(t *testing.T, kubectl string) (string, int) {
	t.Helper()
	out, err := exec.Command(kubectl, "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubectl version: %v", err)
	}
	var v struct {
		ClientVersion struct{ Major, Minor string } `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("kubectl version: %v", err)
	}
	minor := 0
	fmt.Sscanf(v.ClientVersion.Minor, "%d", &minor)
	return v.ClientVersion.Major + "." + fmt.Sprint(minor), minor
}

// transcriptCommands are the commands of the cluster transcript; minVersion
// is the first kubectl minor version that has the command.
var transcriptCommands = []struct {
	cmd        string
	minVersion int
}{
	{"kubectl describe pod checkout-6d8f9c7b5-x2x9k -n shop", 0},
	{"kubectl describe pod worker-0 -n shop", 0},
	{"kubectl describe po/report-28511430-7xk2p --namespace=shop", 0},
	{"kubectl describe deployment checkout -n shop", 0},
	{"kubectl describe rs checkout-6d8f9c7b5 -n shop", 0},
	{"kubectl describe sts worker -n shop", 0},
	{"kubectl -n shop describe job report-28511430", 0},
	{"kubectl describe cronjob report -n shop", 0},
	{"kubectl describe ds node-exporter -n monitoring", 0},
	{"kubectl describe pod node-exporter-7x9kq -n monitoring", 0},
	{"kubectl describe node node-1", 0},
	{"kubectl describe pvc -n shop", 0},
	{"kubectl describe pv pv-checkout-data", 0},
	{"kubectl describe cm checkout-config -n shop", 0},
	{"kubectl describe secret checkout-db -n shop", 0},
	{"kubectl describe svc checkout -n shop", 0},
	{"kubectl describe ingress shop -n shop", 0},
	{"kubectl describe hpa checkout -n shop", 0},
	{"kubectl describe hpa search -n shop", 0},
	{"kubectl describe node node-2", 0},
	{"kubectl describe svc gateway -n shop", 0},
	{"kubectl describe job migrate-schema -n shop", 0},
	{"kubectl events -n shop", 26},
	{"kubectl get pods -n shop -o wide", 0},
	{"kubectl get pods -A", 0},
	{"kubectl get rs -n shop -o wide", 0},
	{"kubectl get deploy -n shop", 0},
	{"kubectl get events -n shop", 0},
	{"kubectl get nodes -o wide", 0},
	{"kubectl get svc -A -o wide", 0},
	{"kubectl get pvc -n shop -o wide", 0},
	{"kubectl get pv", 0},
	{"kubectl get sts -n shop -o wide", 0},
	{"kubectl get ds -A", 0},
	{"kubectl get jobs -n shop -o wide", 0},
	{"kubectl get cj -n shop", 0},
	{"kubectl get hpa -n shop", 0},
	{"kubectl get ing -n shop", 0},
	{"kubectl get ep -n shop", 0},
	{"kubectl get events -A -o wide", 0},
	{"kubectl logs checkout-6d8f9c7b5-x2x9k -n shop -c app --previous", 0},
	{"kubectl logs -n shop worker-0", 0},
	{"kubectl top pod -n shop", 0},
	{"kubectl top pod -n shop --containers", 0},
	{"kubectl top node", 0},
	{"kubectl get pod worker-0 -n shop -o yaml", 0},
	{"kubectl get deploy checkout -n shop -o json", 0},
	{"kubectl get cm -n shop", 0},
	{"kubectl get secrets -n shop", 0},
	{"kubectl describe secret checkout-db-old -n shop", 0},
	{"kubectl get pods worker-0 worker-9 -n shop", 0},
	{"kubectl logs checkout-6d8f9c7b5-gone -n shop", 0},
	{"kubectl rollout status deploy/checkout -n shop --watch=false", 0},
	{"kubectl rollout status sts/worker -n shop --watch=false", 0},
	{"kubectl describe quota -n shop", 0},
	{"kubectl get quota -n shop", 0},
	{"kubectl describe limitrange shop-defaults -n shop", 0},
}

// failingCommands exit non-zero: kubectl answers NotFound for (some of)
// the objects they name.
var failingCommands = map[string]bool{
	"kubectl describe secret checkout-db-old -n shop":              true,
	"kubectl get pods worker-0 worker-9 -n shop":                   true,
	"kubectl logs checkout-6d8f9c7b5-gone -n shop":                 true,
	"kubectl rollout status deploy/checkout -n shop --watch=false": true, // exceeded its progress deadline
}

// runTranscript runs the commands with real kubectl against the loopback
// API server serving testdata/cluster, moved in time so that its capture
// time is now, and returns the transcript and that capture time.
func runTranscript(t *testing.T, kubectl, fixtures string, cmds []string) ([]byte, time.Time) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	kc, dir := serveFixtures(t, fixtures, now.Sub(anchor))
	var buf bytes.Buffer
	for _, c := range cmds {
		args := strings.Fields(c)[1:]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kc}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECACHEDIR="+filepath.Join(dir, "cache"), "TZ=UTC", "LANG=C")
		out, err := cmd.CombinedOutput()
		cancel()
		if (err != nil) != failingCommands[c] {
			t.Errorf("%s: %v (want a failure: %v)\n%s", c, err, failingCommands[c], out)
		}
		appendCommand(&buf, c, out)
	}
	return buf.Bytes(), now
}

func commandsFor(minor int) []string {
	var cmds []string
	for _, c := range transcriptCommands {
		if minor >= c.minVersion {
			cmds = append(cmds, c.cmd)
		}
	}
	return cmds
}

// TestKubectlGoldens regenerates (-update) the transcript golden of the
// kubectl found, in testdata/transcripts/kubectl-<version>/ (a bundle:
// bundle.json with captured_at, and cluster.txt).
func TestKubectlGoldens(t *testing.T) {
	if !*update {
		t.Skip("run with -update to regenerate the kubectl goldens")
	}
	kubectl := kubectlPath(t)
	ver, minor := kubectlMinor(t, kubectl)
	text, now := runTranscript(t, kubectl, "testdata/cluster", commandsFor(minor))
	writeGolden(t, filepath.Join("testdata", "transcripts", "kubectl-"+ver), text, now)
}
