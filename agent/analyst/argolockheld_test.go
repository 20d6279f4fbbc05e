package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Argo workflows Pending on a lock another workflow holds, read from
// argo list and argo get, the workflow controller's log, a workflow's
// status.synchronization as JSON and as YAML, for a ConfigMap semaphore
// and a mutex; workflows that run are none.
func TestDetectArgoLockHeld(t *testing.T) {
	list := evidence.CommandOutput{Command: "argo list -n etl", Lines: []string{
		"NAME                       STATUS                AGE   DURATION   PRIORITY   MESSAGE",
		"daily-export-1795598100    Pending               50m   0s         0          Waiting for etl/ConfigMap/locks/warehouse-writer lock. Lock status: 0/1",
		"daily-export-1795594500    Pending               1h    0s         0          Waiting for etl/ConfigMap/locks/warehouse-writer lock. Lock status: 0/1",
		"reindex-manual-q2w9z       Running (Suspended)   18h   18h        0",
	}}
	get := evidence.CommandOutput{Command: "argo get reindex-manual-q2w9z -n etl", Lines: []string{
		"Name:                reindex-manual-q2w9z",
		"Status:              Running (Suspended)",
		" ● reindex-manual-q2w9z  main",
		" ├───✔ build            build      reindex-manual-q2w9z-build-2291847612   1h",
		" └───ǁ sign-off         approve",
	}}
	statusJSON := evidence.CommandOutput{Command: "kubectl get workflow daily-export-1795598100 -n etl -o jsonpath='{.status.synchronization}'", Lines: []string{
		`{"semaphore":{"waiting":[{"holder":"etl/reindex-manual-q2w9z","semaphore":"etl/ConfigMap/locks/warehouse-writer"}]}}`}}
	controller := []string{
		`time="2026-11-25T09:15:00.021Z" level=info msg="Workflow submitted" cronWorkflow=billing/invoice-sync workflow=invoice-sync-1795598100`,
		`time="2026-11-25T09:15:00.046Z" level=info msg="Updated message  -> Waiting for billing/Mutex/ledger lock. Lock status: 0/1" namespace=billing workflow=invoice-sync-1795598100`,
	}
	yaml := evidence.CommandOutput{Command: "kubectl get workflow ledger-migrate-7hd2k -n billing -o yaml", Lines: []string{
		"status:",
		"  phase: Failed",
		"  synchronization:",
		"    mutex:",
		"      holding:",
		"      - holder: ledger-migrate-7hd2k",
		"        mutex: billing/Mutex/ledger",
	}}
	running := evidence.CommandOutput{Command: "argo list -n etl", Lines: []string{
		"NAME                       STATUS      AGE   DURATION   PRIORITY   MESSAGE",
		"daily-export-1795598100    Running     5m    5m         0",
	}}
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		service string
		subject string
		want    []string
	}{
		{"argo list and get, the waiting workflow's status JSON", nil, []evidence.CommandOutput{list, get, statusJSON}, "", "daily-export",
			[]string{"semaphore etl/ConfigMap/locks/warehouse-writer (limit 1)", "2 runs waiting", "held by the workflow reindex-manual-q2w9z", "Running (Suspended)", "suspended at its step sign-off"}},
		{"controller log and the holder's YAML, a mutex", []LogSet{minedSet("workflow-controller", false, 0, controller...)}, []evidence.CommandOutput{yaml}, "invoice-sync", "invoice-sync",
			[]string{"mutex billing/Mutex/ledger", "held by the workflow ledger-migrate-7hd2k"}},
		{"running workflows", nil, []evidence.CommandOutput{running}, "daily-export", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectArgoLockHeld(&Gathered{Logs: tc.sets, Commands: tc.cmds, Window: win, Scope: Scope{Service: tc.service}}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindArgoLockHeld, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
