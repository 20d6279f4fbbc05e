package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A canary left paused at a partial weight: `kubectl argo rollouts get
// rollout` with the Rollout's YAML (a pause step without a duration, the
// RolloutPaused condition's time), the CLI alone with a latency finding of
// the service and an endless pause, and the YAML saying when. A canary
// paused minutes ago at a timed step, one fully promoted (weight 100), or
// a Rollout progressing, is none.
func TestCanaryPaused(t *testing.T) {
	get := func(status, msg, weight string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl argo rollouts get rollout cart -n shop", Lines: []string{
			"Name:            cart", "Namespace:       shop", "Status:          " + status, "Message:         " + msg,
			"Strategy:        Canary", "  Step:          2/4", "  SetWeight:     " + weight, "  ActualWeight:  " + weight,
			"Images:          ghcr.io/acme/cart:1.4.2 (stable)", "                 ghcr.io/acme/cart:1.5.0 (canary)"}}
	}
	yaml := func(endless bool, since time.Time) evidence.CommandOutput {
		step := "      - pause:\n          duration: 10m"
		if endless {
			step = "      - pause: {}"
		}
		lines := []string{"apiVersion: argoproj.io/v1alpha1", "kind: Rollout", "metadata:", "  name: cart", "  namespace: shop", "spec:", "  strategy:", "    canary:", "      steps:", "      - setWeight: 25"}
		lines = append(lines, step)
		lines = append(lines, "status:", "  conditions:", `  - lastTransitionTime: "`+since.UTC().Format(time.RFC3339)+`"`, "    message: Rollout is paused", "    reason: RolloutPaused", "    status: Unknown", "    type: Progressing")
		return evidence.CommandOutput{Command: "kubectl get rollout cart -n shop -o yaml", Lines: lines}
	}
	slow := Finding{Kind: KindLatency, Subject: "cart", Weight: 0.7, Summary: "latency of cart rose from 0.19s to 0.41s"}
	old := win.End.Add(-20 * time.Hour)
	recent := win.End.Add(-10 * time.Minute)
	paused := get("॥ Paused", "CanaryPauseStep", "25")
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		found   []Finding
		subject string
		want    []string
	}{
		{"cli and yaml, endless, for hours", []evidence.CommandOutput{paused, yaml(true, old)}, nil, "cart", []string{"left paused", "25%", "1.5.0", "manual promotion", "since"}},
		{"cli and yaml, latency read", []evidence.CommandOutput{paused, yaml(true, recent)}, []Finding{slow}, "cart", []string{"degrades for that share only", "latency of cart"}},
		{"timed pause, minutes ago: none", []evidence.CommandOutput{paused, yaml(false, recent)}, []Finding{slow}, "", nil},
		{"fully promoted: none", []evidence.CommandOutput{get("॥ Paused", "CanaryPauseStep", "100"), yaml(true, old)}, []Finding{slow}, "", nil},
		{"progressing: none", []evidence.CommandOutput{get("◌ Progressing", "more replicas need to be updated", "25")}, []Finding{slow}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{Commands: c.cmds, Window: win, Scope: Scope{Service: "cart", Namespace: "shop"}}
			f := onlyFinding(t, detectCanaryPaused(g, c.found), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindCanaryPaused, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
