package kubetext_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
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
	s, res := parseAgainst(t, eventsFixtures, text, capturedAt)
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
	updateGolden(t, "transcripts-events", eventsFixtures, eventCommands)
	checkGoldens(t, "transcripts-events", 1, checkEvents)
}

func TestKubectlMatchesEventsGoldens(t *testing.T) {
	matchKubectl(t, kubectlPath(t), eventsFixtures, eventCommands, checkEvents)
}

// The end of a describe page a pipe kept (`kubectl describe pod x | tail
// -5`, as on-call notes often hold) is read as the described object's
// events when every line is one of its Events rows: the same events the
// whole page gives, cut from kubectl's real pages (the goldens).
func TestDescribeTail(t *testing.T) {
	for _, tc := range []struct {
		golden, command string
		tail, events    int
		from            string // a sed projection from this field to the end, instead of tail
	}{
		{"testdata/transcripts/kubectl-1.32/cluster.txt", "kubectl describe pod checkout-6d8f9c7b5-x2x9k -n shop", 3, 3, ""},
		{"testdata/transcripts-events/kubectl-1.32/cluster.txt", "kubectl describe pod web-1 -n shop", 5, 2, ""},
		{"testdata/transcripts-events/kubectl-1.32/cluster.txt", "kubectl describe pod web-1 -n shop", 8, 2, ""},
		{"testdata/transcripts/kubectl-1.32/cluster.txt", "kubectl describe pod checkout-6d8f9c7b5-x2x9k -n shop", 0, 3, "Node-Selectors:"},
		{"testdata/transcripts-events/kubectl-1.32/cluster.txt", "kubectl describe pod web-1 -n shop", 0, 2, "QoS Class:"},
	} {
		t.Run(fmt.Sprintf("%s|tail-%d%s", tc.command, tc.tail, tc.from), func(t *testing.T) {
			g, err := os.ReadFile(tc.golden)
			if err != nil {
				t.Fatal(err)
			}
			capturedAt := readCapturedAt(t, filepath.Dir(tc.golden))
			_, page, ok := strings.Cut(string(g), "$ "+tc.command+"\n")
			if !ok {
				t.Fatalf("%s not in %s", tc.command, tc.golden)
			}
			page, _, _ = strings.Cut(page, "\n$ ")
			lines := strings.Split(strings.TrimRight(page, "\n"), "\n")
			whole := kubetext.Parse([]byte("$ "+tc.command+"\n"+page), capturedAt)
			pipe, kept := " | tail -"+fmt.Sprint(tc.tail), lines[len(lines)-tc.tail:]
			if tc.from != "" {
				i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, tc.from) })
				if i < 0 {
					t.Fatalf("no %q in the page", tc.from)
				}
				pipe, kept = " | sed -n '/^"+strings.TrimSuffix(tc.from, ":")+"/,$p'", lines[i:]
			}
			cut := kubetext.Parse([]byte("$ "+tc.command+pipe+"\n"+strings.Join(kept, "\n")+"\n"), capturedAt)
			noSkipped(t, cut)
			if len(cut.Events) != tc.events || len(cut.Outputs) != 0 || len(cut.Objects) != 0 {
				t.Fatalf("%d events, %d outputs, %d objects: want %d events only", len(cut.Events), len(cut.Outputs), len(cut.Objects), tc.events)
			}
			for _, e := range cut.Events {
				found := false
				for _, w := range whole.Events {
					found = found || e.Reason == w.Reason && e.Message == w.Message && e.Count == w.Count && e.Type == w.Type &&
						e.InvolvedObject.Kind == w.InvolvedObject.Kind && e.InvolvedObject.Name == w.InvolvedObject.Name &&
						e.InvolvedObject.Namespace == w.InvolvedObject.Namespace && e.LastTimestamp.Equal(&w.LastTimestamp) && e.Source == w.Source
				}
				if !found {
					t.Errorf("event %+v: not one of the whole page's", e)
				}
			}
		})
	}
	// a projection that keeps a table of state before the events (a
	// node's Conditions) is kept as text: its events alone would mislead
	node := "$ kubectl describe node ip-10-0-5-12 | sed -n '/^Conditions:/,/^Addresses:/p;/^Events:/,$p'\n" +
		"Conditions:\n  Type             Status  Reason                   Message\n  ----             ------  ------                   -------\n" +
		"  DiskPressure     False   KubeletHasNoDiskPressure kubelet has no disk pressure\nAddresses:\nEvents:\n" +
		"  Type     Reason                 Age   From     Message\n  ----     ------                 ----  ----     -------\n" +
		"  Normal   NodeHasDiskPressure    26m   kubelet  Node ip-10-0-5-12 status is now: NodeHasDiskPressure\n"
	if res := kubetext.Parse([]byte(node), time.Time{}); len(res.Events) != 0 || len(res.Outputs) != 1 {
		t.Errorf("conditions and events of a node: %d events, %d outputs", len(res.Events), len(res.Outputs))
	}
	// a page cut elsewhere is kept as text, as before
	res := kubetext.Parse([]byte("$ kubectl describe deploy web -n shop | grep -A2 Limits\n    Limits:\n      cpu:     1\n      memory:  1Gi\n"), time.Time{})
	if len(res.Events) != 0 || len(res.Outputs) != 1 || len(res.Skipped) != 1 {
		t.Errorf("grep of a describe page: %+v", res)
	}
}
