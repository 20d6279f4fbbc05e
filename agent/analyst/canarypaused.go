package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/finding"
)

// A canary left paused with part of the traffic on the new version: an
// Argo Rollouts canary whose steps hold a pause without a duration
// (`- pause: {}`) waits for a manual promotion; nobody promotes, and the
// share of requests that the step's setWeight sends to the canary keeps
// meeting the new version for hours or days. When that version is slower
// or fails more, the service degrades for that share only ("only half the
// requests are slow", "nothing was deployed today"). Read from `kubectl
// argo rollouts get rollout` (Status Paused, Message CanaryPauseStep, the
// step, SetWeight, the stable and canary images) or the Rollout's YAML
// (a `pause: {}` step, the Progressing condition RolloutPaused with its
// time, pauseConditions CanaryPauseStep), with a latency or error finding
// of the service: a paused canary alone is a rollout waiting as designed.

// KindCanaryPaused is a canary left paused at a partial weight while the
// service degrades.
const KindCanaryPaused Kind = "canary_paused"

var canaryPaused = &mechanism{
	kind:   KindCanaryPaused,
	class:  classCause,
	label:  "a canary left paused with part of the traffic on the new version",
	detect: detectCanaryPaused,
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) && f.Kind != KindDeploy && f.Kind != KindConfigChange
	},
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		img := h.fact("canary_version")
		return img != "" && strings.Contains(c.Summary+" "+strings.Join(c.Evidence, " "), img)
	},
	describe:  describeCanaryPaused,
	recommend: recommendCanaryPaused,
}

var (
	cpNameRE       = regexp.MustCompile(`^Name:\s+(\S+)\s*$`)
	cpYAMLNameRE   = regexp.MustCompile(`^  name:\s+(\S+)\s*$`)
	cpStatusRE     = regexp.MustCompile(`^Status:\s+.*\bPaused\b`)
	cpPauseStepRE  = regexp.MustCompile(`\bCanaryPauseStep\b`)
	cpStepRE       = regexp.MustCompile(`^\s*Step:\s+(\d+/\d+)`)
	cpWeightRE     = regexp.MustCompile(`^\s*(?:ActualWeight|SetWeight):\s+(\d+)`)
	cpImageRE      = regexp.MustCompile(`(\S+:(\S+)) \((stable|canary)\)`)
	cpEndlessRE    = regexp.MustCompile(`^\s*-\s*pause:\s*\{\s*\}\s*$`)
	cpPausedCondRE = regexp.MustCompile(`^\s*reason:\s+(?:RolloutPaused|CanaryPauseStep)\s*$`)
	cpTimeRE       = regexp.MustCompile(`^\s*-?\s*(?:lastTransitionTime|startTime):\s+"?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"?`)
)

type pausedCanary struct {
	name, step, weight, stable, canary, canaryVersion string
	endless                                           bool
	since                                             time.Time
}

// pausedCanaries reads the Argo Rollouts canaries paused at a pause step.
func pausedCanaries(ev *Gathered) map[string]*pausedCanary {
	out := map[string]*pausedCanary{}
	get := func(name string) *pausedCanary {
		if out[name] == nil {
			out[name] = &pausedCanary{name: name}
		}
		return out[name]
	}
	for _, c := range ev.Commands {
		cmd := strings.ToLower(c.Command)
		if !strings.Contains(cmd, "rollout") {
			continue
		}
		if strings.Contains(cmd, "argo rollouts get") {
			var name string
			paused := false
			var p pausedCanary
			for _, l := range c.Lines {
				if m := findSubmatch(cpNameRE, l); m != nil && name == "" {
					name = m[1]
				}
				if matchLine(cpStatusRE, l) {
					paused = true
				}
				if matchLine(cpPauseStepRE, l) && strings.HasPrefix(l, "Message:") {
					paused = true
				}
				if m := findSubmatch(cpStepRE, l); m != nil {
					p.step = m[1]
				}
				if m := findSubmatch(cpWeightRE, l); m != nil {
					p.weight = m[1]
				}
				if m := findSubmatch(cpImageRE, l); m != nil {
					if m[3] == "stable" {
						p.stable = m[1]
					} else {
						p.canary, p.canaryVersion = m[1], m[2]
					}
				}
			}
			if name == "" || !paused || p.canary == "" {
				continue
			}
			g := get(name)
			g.step, g.weight, g.stable, g.canary, g.canaryVersion = p.step, p.weight, p.stable, p.canary, p.canaryVersion
			continue
		}
		// The Rollout's YAML.
		isRollout, name, paused, endless := false, "", false, false
		var since time.Time
		var last time.Time
		for _, l := range c.Lines {
			if strings.TrimSpace(l) == "kind: Rollout" {
				isRollout = true
			}
			if m := findSubmatch(cpYAMLNameRE, l); m != nil && name == "" {
				name = m[1]
			}
			if matchLine(cpEndlessRE, l) {
				endless = true
			}
			if m := findSubmatch(cpTimeRE, l); m != nil {
				last, _ = time.Parse(time.RFC3339, m[1])
			}
			if matchLine(cpPausedCondRE, l) {
				paused = true
				if !last.IsZero() && (since.IsZero() || last.Before(since)) {
					since = last
				}
			}
		}
		if !isRollout || name == "" || !paused {
			continue
		}
		g := get(name)
		g.endless = g.endless || endless
		if !since.IsZero() {
			g.since = since
		}
	}
	for n, p := range out {
		if p.canary == "" || p.weight == "" || p.weight == "0" || p.weight == "100" {
			delete(out, n)
		}
	}
	return out
}

// canaryDegraded is the strongest finding of a latency or error rise of
// the service.
func canaryDegraded(found []Finding, name string) *Finding {
	var best *Finding
	for i := range found {
		f := &found[i]
		if !strings.EqualFold(f.Subject, name) {
			continue
		}
		switch f.Kind {
		case KindLatency, KindErrorRate:
		default:
			continue
		}
		if best == nil || f.Weight > best.Weight {
			best = f
		}
	}
	return best
}

func detectCanaryPaused(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, p := range pausedCanaries(ev) {
		sym := canaryDegraded(found, p.name)
		// A pause that lasts: paused for an hour or more by now, or one
		// without a duration with the service degrading.
		long := !p.since.IsZero() && ev.Window.End.Sub(p.since) >= time.Hour
		if !long && !(p.endless && sym != nil) {
			continue
		}
		f := Finding{Kind: KindCanaryPaused, Subject: p.name, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.88,
			Source: SrcKubernetes, Time: p.since, Object: "rollout " + p.name}
		if f.Time.IsZero() || !ev.Window.recent(f.Time) {
			f.Time = ev.Window.Start
		}
		f.setFact("step", p.step)
		f.setFact("weight", p.weight)
		f.setFact("stable", p.stable)
		f.setFact("canary", p.canary)
		f.setFact("canary_version", p.canaryVersion)
		if !p.since.IsZero() {
			f.setFact("since", ts(p.since))
		}
		if p.endless {
			f.setFact("endless", "true")
		}
		if sym != nil {
			f.setFact("symptom", sym.Summary)
		} else {
			// Nothing read of the new version being worse: say less.
			f.Weight = 0.7
		}
		e := fmt.Sprintf("Argo Rollouts: rollout %s is Paused at a canary pause step (CanaryPauseStep", p.name)
		if p.step != "" {
			e += ", step " + p.step
		}
		e += fmt.Sprintf(", weight %s%%): canary %s, stable %s", p.weight, p.canary, orWord(p.stable, "unknown"))
		f.Evidence = []string{e}
		if p.endless {
			f.Evidence = append(f.Evidence, "its canary steps hold a pause without a duration (pause: {}): it waits for a manual promotion")
		}
		if !p.since.IsZero() {
			f.Evidence = append(f.Evidence, "paused since "+ts(p.since))
		}
		if sym != nil {
			f.Evidence = append(f.Evidence, "meanwhile: "+sym.Summary)
		}
		f.Summary = fmt.Sprintf("the canary %s of %s is left paused at %s%% of the traffic", p.canaryVersion, p.name, p.weight)
		out = append(out, f)
	}
	return out
}

func describeCanaryPaused(h *Hypothesis, sc Scope) string {
	s := fmt.Sprintf("the Argo Rollouts canary of %s (%s) is left paused", h.Subject, h.fact("canary"))
	if st := h.fact("step"); st != "" {
		s += " at step " + st
	}
	s += fmt.Sprintf(" with %s%% of the traffic on it", h.fact("weight"))
	if h.fact("endless") != "" {
		s += ", at a pause step without a duration that waits for a manual promotion nobody gave"
	}
	if since := h.fact("since"); since != "" {
		s += ", since " + since
	}
	s += fmt.Sprintf(": that share of the requests runs the new version %s while the rest runs the stable %s", h.fact("canary_version"), orWord(h.fact("stable"), "version"))
	if sym := h.fact("symptom"); sym != "" {
		return s + ", so the service degrades for that share only: " + sym
	}
	return s + ", so whatever the new version does worse (latency, errors) shows in that share of the requests only, with nothing deployed since the canary started"
}

func recommendCanaryPaused(h *Hypothesis, sc Scope, r *recommender) {
	r.add(finding.PriorityHigh, fmt.Sprintf("Decide the canary now: abort it (kubectl argo rollouts abort %s) to send all traffic back to the stable version, since the canary %s is the slower or failing half; promote only once the new version is fixed", h.Subject, h.fact("canary_version")))
	r.add(finding.PriorityMedium, "Give indefinite pause steps an owner and a timeout, or replace them with an analysis step that judges the canary's latency and errors")
	r.add(finding.PriorityLow, "Alert on a Rollout paused for more than a few hours")
}
