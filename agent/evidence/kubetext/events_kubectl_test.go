package kubetext_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	"github.com/rootcause/rootcause/agent/evidence/live/kube/kubetest"
)

// An event whose message holds newlines (a failed NFS mount: the mount
// command, its arguments and output), printed by real kubectl from
// testdata/cluster-events (goldens in testdata/transcripts-events):
// kubectl events prints the message as it is, its later lines in no
// column; kubectl get events cuts it at its first line and "...". Both
// read back to the one event with its whole message.

const eventsFixtures = "testdata/cluster-events"

var eventCommands = []string{"kubectl get events -n shop", "kubectl events -n shop", "kubectl get events -A -o wide", "kubectl describe pod web-1 -n shop"}

func checkEvents(t *testing.T, text []byte, capturedAt time.Time) {
	t.Helper()
	s, err := kubetest.Load(eventsFixtures, capturedAt.Sub(anchor))
	if err != nil {
		t.Fatal(err)
	}
	res := kubetext.Parse(text, capturedAt)
	for _, sk := range res.Skipped {
		t.Errorf("skipped line %d %q: %s", sk.Line, sk.Command, sk.Reason)
	}
	src := s.Objects("Event")
	if len(res.Events) != len(src) {
		t.Errorf("%d events read, want %d: %+v", len(res.Events), len(src), res.Events)
	}
	for _, e := range res.Events {
		found := false
		for _, o := range src {
			if o["reason"] == e.Reason && o["message"] == e.Message && fmt.Sprint(o["count"]) == fmt.Sprint(e.Count) {
				found = true
			}
		}
		if !found {
			t.Errorf("event %s %q (x%d): not in the source", e.Reason, e.Message, e.Count)
		}
	}
}

func TestEventsGoldens(t *testing.T) {
	if *update {
		kubectl := kubectlPath(t)
		ver, _ := kubectlMinor(t, kubectl)
		text, now := runTranscript(t, kubectl, eventsFixtures, eventCommands)
		dir := filepath.Join("testdata", "transcripts-events", "kubectl-"+ver)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		meta := fmt.Sprintf("{\"captured_at\": %q}\n", now.Format(time.RFC3339))
		if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cluster.txt"), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirs, _ := filepath.Glob("testdata/transcripts-events/kubectl-*")
	if len(dirs) == 0 {
		t.Fatal("no goldens")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join(dir, "cluster.txt"))
			if err != nil {
				t.Fatal(err)
			}
			checkEvents(t, text, readCapturedAt(t, dir))
		})
	}
}

func TestKubectlMatchesEventsGoldens(t *testing.T) {
	kubectl := kubectlPath(t)
	text, now := runTranscript(t, kubectl, eventsFixtures, eventCommands)
	checkEvents(t, text, now)
}
