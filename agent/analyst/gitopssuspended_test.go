package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A suspended Flux object (flux get kustomizations with spaces, flux get
// helmreleases with tabs) still at the revision of an earlier change of a
// service, with a later change of that service: the later one never
// applied. An object not suspended, one whose revision no change names,
// or no later change is none.
func TestGitOpsSuspended(t *testing.T) {
	ks := func(suspended string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "flux get kustomizations -A", Lines: []string{
			"NAMESPACE    NAME        REVISION            SUSPENDED  READY  MESSAGE",
			"flux-system  apps-shop   main@sha1:a1b2c3d4  " + suspended + "       True   Applied revision: main@sha1:a1b2c3d4",
			"flux-system  apps-other  main@sha1:ffee0011  False      False  Health check failed after 5m0s"}}
	}
	hr := evidence.CommandOutput{Command: "flux get helmreleases -n shop", Lines: []string{
		"NAME\tREVISION\tSUSPENDED\tREADY\tMESSAGE",
		"basket\tmain/a1b2c3d4\tTrue\tTrue\tRelease reconciliation succeeded"}}
	at := win.Start.Add(-48 * time.Hour)
	applied := evidence.Change{Timestamp: at, Service: "basket", Kind: "config", Description: "basket: move to the new ingress", Revision: "a1b2c3d"}
	later := evidence.Change{Timestamp: at.Add(30 * time.Hour), Service: "basket", Kind: "config", Description: "basket: raise the cart size limit", Revision: "9f8e7d6"}
	other := evidence.Change{Timestamp: at, Service: "basket", Kind: "config", Description: "basket: tweak", Revision: "0badc0f"}
	cases := []struct {
		name    string
		cmd     evidence.CommandOutput
		earlier []evidence.Change
		subject string
		want    []string
	}{
		{"flux get kustomizations", ks("True"), []evidence.Change{applied, later}, "basket", []string{"Kustomization apps-shop", "suspended", "9f8e7d6", "a1b2c3d"}},
		{"flux get helmreleases, tabs", hr, []evidence.Change{applied, later}, "basket", []string{"HelmRelease basket", "raise the cart size limit"}},
		{"not suspended: none", ks("False"), []evidence.Change{applied, later}, "", nil},
		{"no change at its revision: none", ks("True"), []evidence.Change{other, later}, "", nil},
		{"no later change: none", ks("True"), []evidence.Change{applied}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: []evidence.CommandOutput{c.cmd}, Earlier: c.earlier, Window: win, Scope: Scope{Service: "basket", Namespace: "shop"}}
			f := onlyFinding(t, detectGitOpsSuspended(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindGitOpsSuspended, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
