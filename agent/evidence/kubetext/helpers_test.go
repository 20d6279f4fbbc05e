package kubetext_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	"github.com/rootcause/rootcause/agent/evidence/live/kube/kubetest"
)

// The scaffolding the golden tests share: the loopback API server kubectl
// runs against, the transcript of the commands, the goldens on disk and
// the objects read checked against their source.

// serveFixtures serves the fixtures moved by shift on a loopback API
// server for the test's lifetime and returns a kubeconfig for it and the
// temporary directory it is in (kubectl's HOME).
func serveFixtures(t *testing.T, fixtures string, shift time.Duration) (kubeconfig, dir string) {
	t.Helper()
	srv, err := kubetest.Load(fixtures, shift)
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(t)
	dir = t.TempDir()
	kc, err := srv.Kubeconfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	return kc, dir
}

// appendCommand adds a command and what it printed to a transcript, the
// output ended by a newline.
func appendCommand(buf *bytes.Buffer, command string, out []byte) {
	buf.WriteString("$ " + command + "\n")
	buf.Write(out)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		buf.WriteByte('\n')
	}
}

// writeGolden writes a kubectl transcript golden in dir: bundle.json with
// its capture time, and cluster.txt.
func writeGolden(t *testing.T, dir string, text []byte, capturedAt time.Time) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := fmt.Sprintf("{\"captured_at\": %q}\n", capturedAt.Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
}

// updateGolden, with -update, runs the commands with the kubectl installed
// against the fixtures and writes the transcript as the golden of its
// version, testdata/<set>/kubectl-<version>/.
func updateGolden(t *testing.T, set, fixtures string, cmds []string) {
	t.Helper()
	if !*update {
		return
	}
	kubectl := kubectlPath(t)
	ver, _ := kubectlMinor(t, kubectl)
	text, now := runTranscript(t, kubectl, fixtures, cmds)
	writeGolden(t, filepath.Join("testdata", set, "kubectl-"+ver), text, now)
}

// eachGolden runs check on file of every golden directory pattern
// matches, in order, one subtest each; fewer than atLeast directories
// fail the test.
func eachGolden(t *testing.T, pattern, file string, atLeast int, check func(t *testing.T, text []byte, dir string)) {
	t.Helper()
	dirs, _ := filepath.Glob(pattern)
	if len(dirs) == 0 {
		t.Fatalf("no goldens (%s)", pattern)
	}
	if len(dirs) < atLeast {
		t.Fatalf("want goldens of at least %d versions, have %v", atLeast, dirs)
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			check(t, text, dir)
		})
	}
}

// checkGoldens runs check on every kubectl golden of a set
// (testdata/<set>/kubectl-*), at its capture time.
func checkGoldens(t *testing.T, set string, atLeast int, check func(t *testing.T, text []byte, capturedAt time.Time)) {
	t.Helper()
	eachGolden(t, filepath.Join("testdata", set, "kubectl-*"), "cluster.txt", atLeast, func(t *testing.T, text []byte, dir string) {
		check(t, text, readCapturedAt(t, dir))
	})
}

// matchKubectl runs the commands with kubectl against the fixtures and
// checks what it prints today, the fields' times allowed the time kubectl
// ran (slack): a change of kubectl's output shows here.
func matchKubectl(t *testing.T, kubectl, fixtures string, cmds []string, check func(t *testing.T, text []byte, capturedAt time.Time)) {
	t.Helper()
	text, now := runTranscript(t, kubectl, fixtures, cmds)
	slack = time.Since(now) + time.Second
	defer func() { slack = 0 }()
	check(t, text, now)
}

// checkObjectsSound checks every object read against its source among
// srcOf(kind): it is there, and every field read equals the source's.
// more is called with each one found; the "Kind/name" of every object read
// are returned.
func checkObjectsSound(t *testing.T, objs []runtime.Object, srcOf func(kind string) []map[string]any, capturedAt time.Time, more func(what string, got map[string]any)) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, o := range objs {
		got := toJSONMap(t, o)
		kind, _ := got["kind"].(string)
		meta, _ := got["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		ns, _ := meta["namespace"].(string)
		what := kind + "/" + name
		seen[what] = true
		src := find(srcOf(kind), ns, name)
		if src == nil {
			t.Errorf("%s: not in the source objects", what)
			continue
		}
		checkSound(t, what, got, canonical(t, src), capturedAt)
		more(what, got)
	}
	return seen
}

// parseAgainst loads the fixtures as they were at
// capturedAt, parses the transcript and fails the test for every line
// skipped. It returns the fixtures and what was read.
func parseAgainst(t *testing.T, fixtures string, text []byte, capturedAt time.Time) (*kubetest.Server, *kubetext.Result) {
	t.Helper()
	s, err := kubetest.Load(fixtures, capturedAt.Sub(anchor))
	if err != nil {
		t.Fatal(err)
	}
	res := kubetext.Parse(text, capturedAt)
	noSkipped(t, res)
	return s, res
}

// noSkipped fails the test for every line the parser skipped.
func noSkipped(t *testing.T, res *kubetext.Result) {
	t.Helper()
	for _, sk := range res.Skipped {
		t.Errorf("skipped line %d %q: %s", sk.Line, sk.Command, sk.Reason)
	}
}
