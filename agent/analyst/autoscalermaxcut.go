package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An autoscaler's maximum cut by a change, reached at the next peak. A
// right-sizing change (a FinOps pass, a cost review, a chart's new
// default) lowers a workload's maxReplicas (an HPA's, a KEDA
// ScaledObject's maxReplicaCount) to what it averaged; nothing happens
// until the load of the next peak needs more: the autoscaler sits at the
// new maximum, the pods saturate, a queue they consume backs up and the
// callers waiting on them time out. The change may lie a day or more
// before the onset: it is found among the changes of the window and the
// month before, and names the maximum the autoscaler is pinned at now.

// KindAutoscalerCapCut is an autoscaler pinned at a maximum a change cut.
const KindAutoscalerCapCut Kind = "autoscaler_max_cut"

// maxCutRE reads a change lowering an autoscaler's maximum
// ("maxReplicaCount 12 -> 4", "maxReplicas: 20 → 8", "max replicas from
// 10 to 3").
var maxCutRE = regexp.MustCompile(`(?i)\bmax(?:imum)?[ _-]?(?:replica[ _-]?count|replicas|pods)\b[^0-9;]{0,16}?(?:from\s+)?(\d+)\s*(?:->|→|=>|to)\s*(\d+)\b`)

// capCutAge bounds how long before the onset a cut may lie: it bites at
// the first peak after it, within days.
const capCutAge = 7 * 24 * time.Hour

var autoscalerCapCut = &mechanism{
	kind:   KindAutoscalerCapCut,
	class:  classCause,
	label:  "autoscaler maximum cut by a change (capacity capped below the load)",
	detect: detectAutoscalerCapCut,
	// The autoscaler at its maximum, the pods' saturation, the queue
	// they consume backing up.
	related: func(h *Hypothesis, f *Finding) bool {
		if q := h.fact("queue"); q != "" && (strings.EqualFold(f.Subject, q) || f.relates(q)) {
			return true
		}
		return f.Subject == h.Subject
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool { return matchLine(maxCutRE, changeText(c)) },
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("capacity capped by a change: %s's autoscaler maximum was cut from %s to %s replicas", h.Subject, h.fact("was"), h.fact("max"))
		if h.Trigger == nil {
			d += " (" + h.fact("change") + ")"
		}
		d += fmt.Sprintf(", and at the next peak its load needs more: it sits at its maximum of %s replicas", h.fact("max"))
		if at := h.fact("reached"); at != "" {
			d += " since " + at
		}
		if q := h.fact("queue"); q != "" {
			d += fmt.Sprintf(", so %s's consumers cannot keep up with the queue %s", h.Subject, q)
			if b := h.fact("backlog"); b != "" {
				d += " (" + truncate(b, 200) + ")"
			}
		}
		d += "; what waits on its work times out"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Raise the autoscaler maximum of %s back (from %s to %s replicas, the ScaledObject's maxReplicaCount or the HPA's maxReplicas) so it can follow the load, then let the backlog drain", h.Subject, h.fact("max"), h.fact("was"))
		r.med("Size autoscaler maximums from the peak load, not the average replicas")
		r.low("Alert when an autoscaler sits at its maximum while its queue or latency grows")
	},
}

// capCut is a change that lowered a workload's autoscaler maximum.
type capCut struct {
	c        evidence.Change
	was, now int
}

// capCuts reads the changes of the window and the month before that cut
// an autoscaler's maximum.
func capCuts(ev *Gathered) []capCut {
	var out []capCut
	for _, cs := range [][]evidence.Change{ev.Changes, ev.Earlier} {
		for _, c := range cs {
			m := findSubmatch(maxCutRE, c.Description)
			if m == nil {
				continue
			}
			was, _ := strconv.Atoi(m[1])
			now, _ := strconv.Atoi(m[2])
			if now <= 0 || now >= was {
				continue
			}
			out = append(out, capCut{c, was, now})
		}
	}
	return out
}

// detectAutoscalerCapCut finds a workload whose autoscaler sits at its
// maximum (KindHPAMax) when that maximum is the one a change cut it to.
func detectAutoscalerCapCut(ev *Gathered, found []Finding) []Finding {
	cuts := capCuts(ev)
	if len(cuts) == 0 {
		return nil
	}
	sos := scaledObjects(ev.Commands)
	var out []Finding
	seen := map[string]bool{}
	for i := range found {
		h := &found[i]
		if h.Kind != KindHPAMax || seen[h.Subject] {
			continue
		}
		max, err := strconv.Atoi(h.fact("max_replicas"))
		if err != nil {
			continue
		}
		for _, cut := range cuts {
			c := cut.c
			if cut.now != max || !(strings.EqualFold(c.Service, h.Subject) || containsToken(strings.ToLower(c.Description), strings.ToLower(h.Subject))) {
				continue
			}
			if !h.Time.IsZero() && (c.Timestamp.After(h.Time.Add(2*time.Minute)) || h.Time.Sub(c.Timestamp) > capCutAge) {
				continue
			}
			seen[h.Subject] = true
			f := Finding{Kind: KindAutoscalerCapCut, Subject: h.Subject, Namespace: h.Namespace, Object: h.Object, Time: h.Time,
				Severity: SevCritical, Weight: 0.9, Source: SrcChanges, Facts: map[string]string{}}
			f.setFact("max", strconv.Itoa(cut.now))
			f.setFact("was", strconv.Itoa(cut.was))
			f.setFact("change", fmt.Sprintf("the change of %s at %s: %s", orWord(c.Service, h.Subject), ts(c.Timestamp), quote(c.Description, 180)))
			if r := h.fact("reached_max"); r != "" {
				if t, err := time.Parse(time.RFC3339, r); err == nil {
					f.setFact("reached", hm(t))
				}
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("the change of %s at %s cut the autoscaler maximum from %d to %d: %s", orWord(c.Service, h.Subject), ts(c.Timestamp), cut.was, cut.now, quote(c.Description, 200)))
			f.Evidence = append(f.Evidence, h.Summary)
			for _, so := range sos {
				if so.target != h.Subject {
					continue
				}
				f.setFact("queue", so.queue)
				for j := range found {
					b := &found[j]
					if b.Kind == KindBacklog && strings.EqualFold(b.Subject, so.queue) && f.fact("backlog") == "" {
						f.setFact("backlog", b.Summary)
						f.Evidence = append(f.Evidence, b.Summary)
					}
				}
				break
			}
			f.Summary = fmt.Sprintf("%s's autoscaler at the maximum of %d replicas a change cut from %d", h.Subject, cut.now, cut.was)
			out = append(out, f)
			break
		}
	}
	slices.SortStableFunc(out, func(a, b Finding) int { return strings.Compare(a.Subject, b.Subject) })
	return out
}
