package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rootcause/rootcause/finding"
)

// An autoscaler's scale-ups undone by something else that owns the
// replica count: a GitOps controller with self-heal (Argo CD's
// selfHeal, Flux's drift correction) or a pipeline re-applying a manifest
// that sets spec.replicas puts the Deployment back to the count in git
// minutes after each scale-up of its HorizontalPodAutoscaler, so the pods
// the load needs start and are killed again, in bursts of errors. Read from
// the events: the HPA's SuccessfulRescale "New size: N" and the
// Deployment's "Scaled up replica set ... to N from M" followed by "Scaled
// down ... to M from N" that no rescale of the HPA to M asked for, more
// than once. A change that sets replicas, and a self-healing GitOps
// application, are named when handed over.

// KindHPAReverted is an autoscaler's scale-ups reverted by a fixed
// replica count applied over it.
const KindHPAReverted Kind = "hpa_reverted"

var hpaReverted = &mechanism{
	kind:   KindHPAReverted,
	class:  classCause,
	label:  "autoscaler scale-ups reverted to a fixed replica count",
	detect: detectHPAReverted,
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) && f.Kind != KindDeploy && f.Kind != KindConfigChange
	},
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(replicasWordRE, c.Summary+" "+strings.Join(c.Evidence, " "))
	},
	describe:  describeHPAReverted,
	recommend: recommendHPAReverted,
}

var (
	hpaNewSizeRE    = regexp.MustCompile(`New size: (\d+); reason:`)
	rsScaledDownRE  = regexp.MustCompile(`Scaled down replica set \S+ (?:to|from \d+ to) (\d+)(?: from (\d+))?`)
	rsScaledDown2RE = regexp.MustCompile(`Scaled down replica set \S+ from (\d+) to (\d+)`)
	replicasWordRE  = regexp.MustCompile(`(?i)\breplicas\b`)
	selfHealRE      = regexp.MustCompile(`(?i)"selfHeal":\s*true|selfHeal:\s*true|Sync Policy:\s+Automated`)
)

func detectHPAReverted(ev *Gathered, found []Finding) []Finding {
	hpaSizes := map[string]map[int]bool{}
	reverted := map[string]int{}
	revertTo := map[string]int{}
	for _, e := range ev.K8s.Events {
		name := e.InvolvedObject.Name
		n := int(e.Count)
		if n < 1 {
			n = 1
		}
		if e.InvolvedObject.Kind == "HorizontalPodAutoscaler" || strings.EqualFold(e.Reason, "SuccessfulRescale") {
			if m := findSubmatch(hpaNewSizeRE, e.Message); m != nil {
				if hpaSizes[name] == nil {
					hpaSizes[name] = map[int]bool{}
				}
				s, _ := strconv.Atoi(m[1])
				hpaSizes[name][s] = true
			}
		}
	}
	for _, e := range ev.K8s.Events {
		if e.InvolvedObject.Kind != "Deployment" || hpaSizes[e.InvolvedObject.Name] == nil {
			continue
		}
		to, from := -1, -1
		if m := findSubmatch(rsScaledDown2RE, e.Message); m != nil {
			from, _ = strconv.Atoi(m[1])
			to, _ = strconv.Atoi(m[2])
		} else if m := findSubmatch(rsScaledDownRE, e.Message); m != nil && m[2] != "" {
			to, _ = strconv.Atoi(m[1])
			from, _ = strconv.Atoi(m[2])
		}
		sizes := hpaSizes[e.InvolvedObject.Name]
		if from < 0 || !sizes[from] || sizes[to] {
			continue
		}
		n := int(e.Count)
		if n < 1 {
			n = 1
		}
		reverted[e.InvolvedObject.Name] += n
		revertTo[e.InvolvedObject.Name] = to
	}
	var out []Finding
	// In name order, and the sizes in order, so that the answer is the
	// same on every run.
	for _, name := range slices.Sorted(maps.Keys(reverted)) {
		n := reverted[name]
		f := Finding{Kind: KindHPAReverted, Subject: name, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.85,
			Source: SrcKubernetes, Time: ev.Window.Start, Object: "deployment " + name}
		var sizes []string
		for _, s := range slices.Sorted(maps.Keys(hpaSizes[name])) {
			sizes = append(sizes, strconv.Itoa(s))
		}
		f.setFact("reverts", strconv.Itoa(n))
		f.setFact("to", strconv.Itoa(revertTo[name]))
		f.setFact("hpa_sizes", strings.Join(sizes, ", "))
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				if matchLine(selfHealRE, l) {
					f.setFact("owner", "the GitOps controller's self-heal (automated sync with selfHeal)")
				}
			}
		}
		for _, c := range append(ev.Earlier[:len(ev.Earlier):len(ev.Earlier)], ev.Changes...) {
			if strings.EqualFold(c.Service, name) && matchLine(replicasWordRE, c.Description) {
				f.setFact("change", fmt.Sprintf("%s (%s)", c.Description, ts(c.Timestamp)))
				if ev.Window.recent(c.Timestamp) {
					f.Time = c.Timestamp
				}
			}
		}
		// One revert alone may be a manual scale: it takes a second, or
		// what owns the count (a self-healing sync, a change setting it).
		if n < 2 && f.Facts["owner"] == "" && f.Facts["change"] == "" {
			continue
		}
		f.Evidence = []string{
			fmt.Sprintf("the HPA of %s scaled it to %s (SuccessfulRescale New size), and the Deployment was scaled back down to %d replicas (%d scale-downs) with no rescale of the HPA asking for it", name, f.Facts["hpa_sizes"], revertTo[name], n),
		}
		if o := f.Facts["owner"]; o != "" {
			f.Evidence = append(f.Evidence, "the application is synced automatically with selfHeal: a drift of spec.replicas from git is reverted")
		}
		if c := f.Facts["change"]; c != "" {
			f.Evidence = append(f.Evidence, "the change that set the replica count: "+c)
		}
		f.Summary = fmt.Sprintf("the autoscaler's scale-ups of %s are reverted to %d replicas", name, revertTo[name])
		out = append(out, f)
	}
	return out
}

func describeHPAReverted(h *Hypothesis, sc Scope) string {
	who := "something that applies a fixed spec.replicas (a GitOps self-heal or a pipeline re-applying the manifest)"
	if o := h.fact("owner"); o != "" {
		who = o + ", since the manifest in git sets spec.replicas"
	}
	s := fmt.Sprintf("the HPA scales %s up under load (to %s) and %s scales it back down to the fixed replica count of %s (scale-downs the HPA never asked for: %s): the pods the load needs are started and killed again, and requests fail in bursts while they go",
		h.Subject, h.fact("hpa_sizes"), who, h.fact("to"), h.fact("reverts"))
	if c := h.fact("change"); c != "" {
		s += "; the replica count came with " + c
	}
	return s
}

func recommendHPAReverted(h *Hypothesis, sc Scope, r *recommender) {
	r.add(finding.PriorityHigh, fmt.Sprintf("Remove spec.replicas from the manifest of %s (the HPA owns the count), or make the GitOps tool ignore it (Argo CD ignoreDifferences on /spec/replicas with RespectIgnoreDifferences)", h.Subject))
	r.add(finding.PriorityLow, "Exempt workloads with an HPA from lint rules that require explicit replicas")
}
