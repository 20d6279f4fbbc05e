package kubetext_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/agent/capture"
	"github.com/rootcause/rootcause/agent/eval"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/live/kube"
)

// The four-forms test: one incident (orders-api crashlooping because a
// config change removed DATABASE_URL) handed over as a cluster-info dump,
// as `kubectl get -o yaml` files with plain `kubectl logs` output, and as a
// terminal transcript, must lead the analyst to the same root cause. The
// yaml and transcript forms are printed by real kubectl from the dump,
// served by the loopback API server (TestFourFormsGoldens -update writes
// them to testdata/fourforms/; TestFourFormsKubectl prints them afresh).

const incidentDir = "../../../testdata/scenarios/crashloop-missing-env"

// incidentNamespace is the namespace the transcript looks at, as a person
// would.
const incidentNamespace = "orders"

func copyTree(t *testing.T, src, dst string, skip func(rel string) bool) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func capturedAtOf(t *testing.T, dir string) time.Time {
	return readCapturedAt(t, dir)
}

var describeTimeRe = regexp.MustCompile(`[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}`)
var rfc3339Re = regexp.MustCompile(`"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"`)

// unshift moves the absolute times kubectl printed back by shift: the API
// server served the incident moved to the present so that kubectl's
// relative ages are those of the capture time; with the absolute times
// moved back, the text is what kubectl printed at capture time.
func unshift(text string, shift time.Duration) string {
	text = describeTimeRe.ReplaceAllStringFunc(text, func(s string) string {
		tm, err := time.Parse(time.RFC1123Z, s)
		if err != nil {
			return s
		}
		return tm.Add(-shift).UTC().Format(time.RFC1123Z)
	})
	return rfc3339Re.ReplaceAllStringFunc(text, func(s string) string {
		tm, err := time.Parse(time.RFC3339Nano, strings.Trim(s, `"`))
		if err != nil {
			return s
		}
		layout := time.RFC3339
		if strings.Contains(s, ".") {
			layout = "2006-01-02T15:04:05.000000Z07:00"
		}
		return `"` + tm.Add(-shift).UTC().Format(layout) + `"`
	})
}

// kubectlRunner runs kubectl against a loopback API server serving the
// incident moved to the present.
type kubectlRunner struct {
	t       *testing.T
	kubectl string
	kc, dir string
	shift   time.Duration
}

func newKubectlRunner(t *testing.T, kubectl, bundleDir string) *kubectlRunner {
	t.Helper()
	shift := time.Now().UTC().Truncate(time.Second).Sub(capturedAtOf(t, bundleDir))
	kc, dir := serveFixtures(t, bundleDir, shift)
	return &kubectlRunner{t: t, kubectl: kubectl, kc: kc, dir: dir, shift: shift}
}

func (r *kubectlRunner) run(args ...string) string {
	r.t.Helper()
	// Logs are served as captured: their times need no moving back.
	logs := args[0] == "logs"
	cmd := exec.Command(r.kubectl, append([]string{"--kubeconfig", r.kc}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+r.dir, "TZ=UTC", "LANG=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if logs {
		return string(out)
	}
	return unshift(string(out), r.shift)
}

// podsOf returns the pods of a namespace in the dump.
func podsOf(t *testing.T, bundleDir, ns string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(bundleDir, "kubernetes", ns, "pods.json"))
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Items []struct {
			Metadata struct{ Name string }
		}
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Metadata.Name)
	}
	slices.Sort(out)
	return out
}

// previousLogs returns the containers of a pod whose previous log the dump
// holds (logs-<container>-previous.txt).
func previousLogs(t *testing.T, ns, pod string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(incidentDir, "kubernetes", ns, pod, "logs-*-previous.txt"))
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "logs-"), "-previous.txt"))
	}
	return out
}

// writeForms prints the yaml and transcript forms of the incident with
// kubectl into dir/yaml and dir/transcript (their kubernetes parts only).
func writeForms(t *testing.T, kubectl, dir string) {
	t.Helper()
	r := newKubectlRunner(t, kubectl, incidentDir)
	yamlDir := filepath.Join(dir, "yaml", "kubernetes")
	write := func(p, text string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// -o yaml of every kind the dump holds, one file per kubectl command.
	write(filepath.Join(yamlDir, "workloads.yaml"), r.run("get", "pods,deployments,replicasets,daemonsets,services", "-A", "-o", "yaml"))
	write(filepath.Join(yamlDir, "events.yaml"), r.run("get", "events", "-A", "-o", "yaml"))
	write(filepath.Join(yamlDir, "nodes.json"), r.run("get", "nodes", "-o", "json"))
	// Logs as kubectl logs prints them, in the dump's place for them.
	ents, _ := os.ReadDir(filepath.Join(incidentDir, "kubernetes"))
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		for _, pod := range podsOf(t, incidentDir, e.Name()) {
			if _, err := os.Stat(filepath.Join(incidentDir, "kubernetes", e.Name(), pod, "logs.txt")); err != nil {
				continue
			}
			write(filepath.Join(yamlDir, e.Name(), pod, "logs.txt"), r.run("logs", "-n", e.Name(), pod))
			for _, c := range previousLogs(t, e.Name(), pod) {
				write(filepath.Join(yamlDir, e.Name(), pod, "logs-"+c+"-previous.txt"), r.run("logs", "-n", e.Name(), pod, "-c", c, "--previous"))
			}
		}
	}
	// The transcript: what a person looks at in the incident's namespace.
	var tr strings.Builder
	cmd := func(args ...string) {
		tr.WriteString("$ kubectl " + strings.Join(args, " ") + "\n")
		tr.WriteString(r.run(args...))
	}
	cmd("get", "pods", "-n", incidentNamespace, "-o", "wide")
	cmd("get", "deploy", "-n", incidentNamespace)
	cmd("get", "rs", "-n", incidentNamespace)
	cmd("get", "events", "-n", incidentNamespace)
	cmd("describe", "deployments", "-n", incidentNamespace)
	cmd("describe", "rs", "-n", incidentNamespace)
	cmd("describe", "pods", "-n", incidentNamespace)
	cmd("describe", "svc", "-n", incidentNamespace)
	cmd("describe", "nodes")
	for _, pod := range podsOf(t, incidentDir, incidentNamespace) {
		cmd("logs", pod, "-n", incidentNamespace)
		for _, c := range previousLogs(t, incidentNamespace, pod) {
			cmd("logs", pod, "-n", incidentNamespace, "-c", c, "--previous")
		}
	}
	write(filepath.Join(dir, "transcript", "kubectl.txt"), tr.String())
}

// writeCapture captures the incident with rootcause capture's code path
// (capture.Run with the live Kubernetes client, as cmd/capture.go builds
// it) from the loopback API server serving the dump as it was at capture
// time, and the dump's Prometheus samples as the metrics source. The
// bundle goes to dir/capture.
func writeCapture(t *testing.T, dir string) {
	t.Helper()
	capturedAt := capturedAtOf(t, incidentDir)
	kc, _ := serveFixtures(t, incidentDir, 0)
	k, err := kube.New(kube.Config{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.OpenDir(incidentDir)
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	_, err = capture.Run(context.Background(), capture.Options{Out: filepath.Join(dir, "capture"), Now: capturedAt,
		Kube: k, Metrics: b.Sources(capturedAt).Metrics, Progress: &progress})
	if err != nil {
		t.Fatalf("capture: %v\n%s", err, progress.String())
	}
}

// assemble builds the bundle of one form: the incident's other evidence
// (bundle.json, scenario.json, metrics, changes) and the form's Kubernetes
// part.
func assemble(t *testing.T, form, formsDir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), form)
	if form == "dump" {
		copyTree(t, incidentDir, dst, nil)
		return dst
	}
	if form == "capture" {
		// A capture is a whole bundle; the question asked stays the same.
		copyTree(t, filepath.Join(formsDir, form), dst, nil)
		copyTree(t, incidentDir, dst, func(rel string) bool { return rel != "." && rel != "scenario.json" })
		return dst
	}
	copyTree(t, incidentDir, dst, func(rel string) bool { return rel == "kubernetes" })
	copyTree(t, filepath.Join(formsDir, form), dst, nil)
	return dst
}

// checkFourForms investigates every form as `rootcause investigate
// --bundle` does and checks that they reach the same root cause.
func checkFourForms(t *testing.T, formsDir string) {
	t.Helper()
	type answer struct{ form, rootCause, top string }
	var answers []answer
	for _, form := range []string{"dump", "yaml", "transcript", "capture"} {
		dir := assemble(t, form, formsDir)
		s, err := eval.LoadScenario(dir)
		if err != nil {
			t.Fatal(err)
		}
		out, err := eval.Run(context.Background(), s, analyst.New(analyst.Options{}), eval.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result == nil {
			t.Fatalf("%s: no result (%s)", form, out.Error)
		}
		top := ""
		if len(out.Result.Candidates) > 0 {
			c := out.Result.Candidates[0]
			top = fmt.Sprintf("%s %s", c.Kind, c.Subject)
		}
		answers = append(answers, answer{form, out.Result.RootCause.Description, top})
		t.Logf("%s form: %s [%s] (tools %v)", form, out.Result.RootCause.Description, top, out.ToolsUsed)
		if !out.Passed {
			t.Errorf("%s form: %v\nroot cause: %s", form, out.Failures, out.Result.RootCause.Description)
		}
	}
	capturedAt := capturedAtOf(t, incidentDir)
	for _, a := range answers[1:] {
		if !sameRootCause(a.rootCause, answers[0].rootCause, capturedAt) || a.top != answers[0].top {
			t.Errorf("%s form differs from the dump:\n  dump: %s [%s]\n  %s: %s [%s]", a.form, answers[0].rootCause, answers[0].top, a.form, a.rootCause, a.top)
		}
	}
}

var timeRe = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)

// sameRootCause compares two root-cause descriptions. Times may differ by
// what a relative age can tell (kubectl prints "29m" for a ReplicaSet
// created 29m25s before the capture): each time of a must be within that
// of the same time in b; the rest of the text must be equal.
func sameRootCause(a, b string, capturedAt time.Time) bool {
	if timeRe.ReplaceAllString(a, "<time>") != timeRe.ReplaceAllString(b, "<time>") {
		return false
	}
	ta, tb := timeRe.FindAllString(a, -1), timeRe.FindAllString(b, -1)
	for i := range ta {
		x, err1 := time.Parse(time.RFC3339Nano, ta[i])
		y, err2 := time.Parse(time.RFC3339Nano, tb[i])
		if err1 != nil || err2 != nil || x.Sub(y).Abs() > tolerance(capturedAt.Sub(y)) {
			return false
		}
	}
	return true
}

// TestFourFormsGoldens investigates the committed forms (-update prints
// them again with the kubectl installed).
func TestFourFormsGoldens(t *testing.T) {
	if *update {
		kubectl := kubectlPath(t)
		for _, f := range []string{"yaml", "transcript"} {
			if err := os.RemoveAll(filepath.Join("testdata", "fourforms", f)); err != nil {
				t.Fatal(err)
			}
		}
		writeForms(t, kubectl, filepath.Join("testdata", "fourforms"))
	}
	// The capture needs no kubectl: it is made afresh.
	dir := t.TempDir()
	for _, f := range []string{"yaml", "transcript"} {
		copyTree(t, filepath.Join("testdata", "fourforms", f), filepath.Join(dir, f), nil)
	}
	writeCapture(t, dir)
	checkFourForms(t, dir)
}

// TestFourFormsKubectl prints the forms with the kubectl installed and
// investigates them.
func TestFourFormsKubectl(t *testing.T) {
	kubectl := kubectlPath(t)
	dir := t.TempDir()
	writeForms(t, kubectl, dir)
	writeCapture(t, dir)
	checkFourForms(t, dir)
}
