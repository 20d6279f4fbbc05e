package cmd

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEvalPrintsInArgumentOrder: eval investigates several scenarios at
// once but prints them in the order given, a directory that cannot be
// loaded in its place on stderr, and the same answers as one at a time.
func TestEvalPrintsInArgumentOrder(t *testing.T) {
	files, err := filepath.Glob("../testdata/scenarios/*/scenario.json")
	if err != nil || len(files) < 4 {
		t.Fatalf("%d scenarios, %v", len(files), err)
	}
	var dirs []string
	for _, f := range files {
		dirs = append(dirs, filepath.Dir(f))
	}
	slices.Reverse(dirs)
	args := append([]string{"eval", "--json"}, dirs[:4]...)
	args = append(args, t.TempDir())
	out, errOut, err := runCLI(t, args...)
	if err == nil || !strings.Contains(errOut, "scenario.json") {
		t.Errorf("a directory without a scenario: err %v, stderr %q", err, errOut)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var o struct {
			Scenario string `json:"scenario"`
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Scenario)
	}
	for i, d := range dirs[:4] {
		if i >= len(got) || got[i] == "" || !strings.HasSuffix(d, got[i]) {
			t.Fatalf("printed %q for %q", got, dirs[:4])
		}
		one, _, err := runCLI(t, "eval", "--json", d)
		if err != nil {
			t.Fatal(err)
		}
		if strip(one) != strip(strings.Split(out, "\n")[i]) {
			t.Errorf("%s: answer alone differs from the answer among others", d)
		}
	}
}

// strip drops what differs between two runs of an eval line: durations,
// times and ids.
func strip(line string) string {
	var v any
	if json.Unmarshal([]byte(strings.TrimSpace(line)), &v) != nil {
		return line
	}
	var drop func(v any) any
	drop = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range []string{"duration_seconds", "started_at", "finished_at", "id"} {
				delete(x, k)
			}
			for k, e := range x {
				x[k] = drop(e)
			}
		case []any:
			for i, e := range x {
				x[i] = drop(e)
			}
		}
		return v
	}
	b, _ := json.Marshal(drop(v))
	return string(b)
}
