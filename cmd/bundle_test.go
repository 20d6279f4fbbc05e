package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

// rootcause bundle check on bundles of the forms people hand over: what is
// read, skipped and bad, as text and as JSON, and the exit status.
func TestBundleCheckCommand(t *testing.T) {
	const webhook = `{"version": "4", "status": "firing", "receiver": "ops", "groupKey": "{}:{alertname=\"NodeFilesystemSpaceFillingUp\"}",
 "alerts": [{"status": "firing", "labels": {"alertname": "NodeFilesystemSpaceFillingUp", "instance": "10.0.3.17:9100"},
   "annotations": {"summary": "Filesystem is predicted to run out of space within the next 4 hours."},
   "startsAt": "2027-01-13T21:40:00Z", "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "6c0b1e4e8f3a2d10"}]}
`
	const top = `[ops@bastion ~]$ kubectl top node
NAME           CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)
k3s-server-1   412m         10%      2981Mi          38%
k3s-worker-1   3688m        92%      5120Mi          32%
[ops@bastion ~]$ kubectl describe secret ghcr-creds -n logistics
Error from server (NotFound): secrets "ghcr-creds" not found
[ops@bastion ~]$ kubectl get configmaps -n reporting
NAME                    DATA   AGE
report-api-config-v10   2      61d
[ops@bastion ~]$ kubectl rollout history deploy/report-api -n reporting
deployment.apps/report-api
REVISION  CHANGE-CAUSE
1         <none>
`
	cases := []struct {
		name     string
		files    map[string]string
		wantErr  string
		want     []string // in the text report
		jsonRead []string // files read, in the --json report
		jsonBad  string   // "file:line" of the error
	}{
		{"alerts and a transcript", map[string]string{"bundle.json": `{"captured_at": "2027-01-13T22:15:00Z"}`, "alerts.json": webhook, "terminal.txt": top},
			"", []string{"alerts.json   Alertmanager alerts (1 firing: NodeFilesystemSpaceFillingUp)",
				"terminal.txt  transcript: 1 ConfigMap, 2 kubectl top node rows, 1 kubectl rollout history, 1 Secret not found (kubectl's NotFound answers)"},
			[]string{"alerts.json", "bundle.json", "terminal.txt"}, ""},
		{"malformed alerts", map[string]string{"alerts.json": "{\"alerts\": [\n  {\"labels\": {\"alertname\": \"A\"}, \"startsAt\": \"soon\"}\n]}\n", "terminal.txt": top},
			"1 files hold bad data", []string{"errors (1)", `alerts.json:2  alerts[0].startsAt: "soon" is not an RFC 3339 time`},
			[]string{"terminal.txt"}, "alerts.json:2"},
		{"nothing readable", map[string]string{"notes.md": "call bob"}, "no evidence rootcause reads",
			[]string{"read (0)", "notes.md  not a bundle part (looked for kubernetes/", "alerts.json"}, []string{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			run := func(args ...string) (string, error) {
				root := NewRootCommand(viper.New())
				var out, errOut bytes.Buffer
				root.SetOut(&out)
				root.SetErr(&errOut)
				root.SetArgs(append([]string{"bundle", "check"}, args...))
				err := root.ExecuteContext(context.Background())
				return out.String(), err
			}
			out, err := run(dir)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q:\n%s", w, out)
				}
			}
			out, _ = run("--json", dir)
			var r struct {
				Read, Skipped, Errors []struct {
					File string
					Line int
					What string
				}
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("--json: %v\n%s", err, out)
			}
			var read []string
			for _, it := range r.Read {
				read = append(read, it.File)
			}
			if strings.Join(read, ",") != strings.Join(tc.jsonRead, ",") {
				t.Errorf("--json read %v, want %v", read, tc.jsonRead)
			}
			bad := ""
			if len(r.Errors) == 1 {
				bad = fmt.Sprintf("%s:%d", r.Errors[0].File, r.Errors[0].Line)
			}
			if bad != tc.jsonBad || len(r.Errors) > 1 {
				t.Errorf("--json errors %+v, want %q", r.Errors, tc.jsonBad)
			}
		})
	}
}
