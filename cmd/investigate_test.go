package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInvestigateWarnsOfBadAlerts: a malformed alerts.json does not stop an
// investigation of the rest of the bundle, but it is named on stderr with
// its line, the bad field and what it costs.
func TestInvestigateWarnsOfBadAlerts(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "logs", "app.log"), []byte("2026-01-02T03:04:05Z ERROR payment declined\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "alerts.json"), []byte("{\"alerts\": [\n {\"status\": \"firing\", \"labels\": {\"alertname\": \"X\"}, \"startsAt\": \"soon\"}\n]}\n"), 0o644))
	_, stderr, err := runCLI(t, "investigate", "--bundle", dir, "--now", "2026-01-02T03:10:00Z", "--json", "why do payments fail?")
	if err != nil {
		t.Fatalf("investigate: %v\n%s", err, stderr)
	}
	want := `warning: alerts.json:2: alerts[0].startsAt: "soon" is not an RFC 3339 time (none of its alerts is read;`
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want it to contain %q", stderr, want)
	}
}
