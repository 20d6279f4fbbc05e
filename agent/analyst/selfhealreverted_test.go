package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A manual kubectl change re-applied over by the GitOps controller: Argo
// CD's controller log line in logfmt (from a kubectl logs transcript) and
// in its JSON log format (read as a log source), `argocd app get` with an
// automated self-healing policy and a sync started after the change, and
// Flux's helm-controller drift correction. A re-apply before the change,
// long after it, of another workload, or a change made through git, is
// none.
func TestSelfHealReverted(t *testing.T) {
	at := win.Start.Add(10 * time.Minute)
	stamp := func(d time.Duration) string { return at.Add(d).UTC().Format(time.RFC3339) }
	manual := evidence.Change{Timestamp: at, Service: "ledger", Kind: "config", Description: "kubectl set resources deployment/ledger --limits=memory=4Gi", Revision: "manual"}
	scale := evidence.Change{Timestamp: at, Service: "ledger", Kind: "config", Description: "kubectl -n pay scale deploy/ledger --replicas=6"}
	gitDeploy := evidence.Change{Timestamp: at, Service: "ledger", Kind: "deploy", Description: "ledger 2.4.1", Revision: "2.4.1"}
	logfmt := func(d time.Duration, name string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl logs -n argocd argocd-application-controller-0", Lines: []string{
			`time="` + stamp(d) + `" level=info msg="Self-healing: resource apps/Deployment:pay/` + name + ` was changed in the cluster, re-applying the desired state" application=argocd/` + name}}
	}
	appGet := evidence.CommandOutput{Command: "argocd app get ledger", Lines: []string{
		"Name:               argocd/ledger",
		"Sync Policy:        Automated (Prune, SelfHeal)",
		"Sync Status:        Synced to main (5e1c2d0)",
		"Operation:          Sync",
		"Start:              " + at.Add(40*time.Second).UTC().Format("2006-01-02 15:04:05") + " +0000 UTC",
		"Phase:              Succeeded",
	}}
	appGetManual := evidence.CommandOutput{Command: "argocd app get ledger", Lines: []string{
		"Name:               argocd/ledger",
		"Sync Policy:        Manual",
		"Operation:          Sync",
		"Start:              " + at.Add(40*time.Second).UTC().Format("2006-01-02 15:04:05") + " +0000 UTC",
	}}
	jsonLog := LogSet{Source: "argocd-application-controller-0", Subject: "argocd-application-controller", Lines: []evidence.LogLine{{Time: at.Add(5 * time.Second),
		Text: `{"application":"argocd/ledger","level":"info","msg":"Self-healing: resource apps/Deployment:pay/ledger was changed in the cluster, re-applying the desired state","time":"` + stamp(5*time.Second) + `"}`}}}
	flux := evidence.CommandOutput{Command: "kubectl logs -n flux-system deploy/helm-controller", Lines: []string{
		`{"level":"info","ts":"` + stamp(2*time.Minute) + `","msg":"release out-of-sync with desired state: corrected cluster state drift of Deployment/pay/ledger","controller":"helmrelease","HelmRelease":{"name":"ledger","namespace":"pay"}}`}}
	cases := []struct {
		name    string
		changes []evidence.Change
		cmds    []evidence.CommandOutput
		logs    []LogSet
		subject string
		want    []string
	}{
		{"argo cd logfmt line", []evidence.Change{manual}, []evidence.CommandOutput{logfmt(6*time.Second, "ledger")}, nil, "ledger", []string{"never took effect", "selfHeal", "memory=4Gi", "6s later"}},
		{"argo cd json log source", []evidence.Change{scale}, nil, []LogSet{jsonLog}, "ledger", []string{"selfHeal", "replicas", "5s later"}},
		{"argocd app get, self-healing sync after", []evidence.Change{manual}, []evidence.CommandOutput{appGet}, nil, "ledger", []string{"selfHeal", "40s later"}},
		{"flux drift correction", []evidence.Change{manual}, []evidence.CommandOutput{flux}, nil, "ledger", []string{"Flux", "2m0s later"}},
		{"argocd app get, manual sync policy: none", []evidence.Change{manual}, []evidence.CommandOutput{appGetManual}, nil, "", nil},
		{"re-applied before the change: none", []evidence.Change{manual}, []evidence.CommandOutput{logfmt(-time.Minute, "ledger")}, nil, "", nil},
		{"re-applied long after: none", []evidence.Change{manual}, []evidence.CommandOutput{logfmt(time.Hour, "ledger")}, nil, "", nil},
		{"another workload re-applied: none", []evidence.Change{manual}, []evidence.CommandOutput{logfmt(6*time.Second, "ledger-cron")}, nil, "", nil},
		{"a change through git: none", []evidence.Change{gitDeploy}, []evidence.CommandOutput{logfmt(6*time.Second, "ledger")}, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{Changes: c.changes, Commands: c.cmds, Logs: c.logs, Window: win, Scope: Scope{Service: "ledger", Namespace: "pay"}}
			f := onlyFinding(t, detectSelfHealReverted(g, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindSelfHealReverted, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
