package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KindQueueLengthCap: a queue with a length limit (RabbitMQ's max-length
// policy or x-max-length argument) sat at that limit, and the broker
// discarded messages to stay there: with the default overflow
// (drop-head) the oldest messages are dropped, or dead-lettered when the
// queue has a dead-letter exchange. Nothing errors: publishers succeed,
// the consumer sees no failure, the messages are gone. A limit that
// protects the broker's memory turns any slowdown of the consumer into
// silent loss.
const KindQueueLengthCap Kind = "queue_length_cap"

var queueLengthCap = &mechanism{
	kind:   KindQueueLengthCap,
	class:  classCause,
	label:  "queue at its max-length, messages dropped",
	detect: detectQueueLengthCap,
	describe: func(h *Hypothesis, sc Scope) string {
		q := orWord(h.fact("queue"), h.Subject)
		d := fmt.Sprintf("queue %s sat at its max-length limit%s%s, and the broker discarded messages to stay there (overflow %s: the oldest messages are dropped from the head of the queue, with no error to the publisher or the consumer)",
			q, clauseIf(" of ", h.fact("limit"), " messages"), clauseIf(" from ", h.fact("from"), clauseIf(" to ", h.fact("to"), "")), orWord(h.fact("overflow"), "drop-head, the default"))
		if n := h.fact("dropped"); n != "" {
			d += fmt.Sprintf("; %s messages were discarded over that time (%s)", n, h.fact("dropped_metric"))
		}
		if c := h.fact("limit_change"); c != "" {
			d += "; the limit came with " + c
		}
		if p := h.fact("dlx_replaced"); p != "" {
			d += "; " + p
		}
		d += " — whatever slowed the consumer only delayed messages until the queue filled; the limit turned that delay into loss"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		q := orWord(h.fact("queue"), "the queue")
		r.high("Stop the silent loss on %s: raise or remove its max-length, or set overflow to reject-publish (publishers see the refusal and retry) or give it a dead-letter exchange so that dropped messages are kept", q)
		r.high("Replay the messages discarded between %s and %s from their source (the publisher's store or outbox)", h.fact("from"), h.fact("to"))
		r.med("Remember that a queue takes only the highest-priority policy that matches it: merge a length limit into the queue's existing policy rather than adding one above it")
		r.low("Alert on a queue at its length limit and on messages dead-lettered or dropped for max-length")
	},
}

var (
	queueDepthNameRE = regexp.MustCompile(`(?i)queue_messages(?:_ready)?$|messages_ready$|queue_depth$|queue_length$`)
	queueDropNameRE  = regexp.MustCompile(`(?i)dead_lettered_maxlen|messages_dropped|messages_discarded|dropped_maxlen`)
	maxLengthRE      = regexp.MustCompile(`(?i)(?:x-)?max[-_]length"?\s*(?:>>)?\s*(?:=>|[:=])?\s*"?([\d,_]+)`)
	overflowRE       = regexp.MustCompile(`(?i)(?:x-)?overflow"?\s*(?:>>)?\s*(?:=>|[:=])?\s*"?(drop-head|reject-publish-dlx|reject-publish)`)
)

// detectQueueLengthCap reads a queue's depth flat at a ceiling that a
// change or the broker's policies give as its max-length, or flat while
// the broker counts messages dropped for max-length.
func detectQueueLengthCap(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	done := map[string]bool{}
	for name, s := range metricSeries(ev.Metrics) {
		q := orWord(s.Labels["queue"], s.Labels["queue_name"])
		if q == "" || done[q] || !queueDepthNameRE.MatchString(name) || len(s.Points) < 5 {
			continue
		}
		top := 0.0
		for _, p := range s.Points {
			top = max(top, p.V)
		}
		if top < 100 {
			continue
		}
		var from, to time.Time
		run, best := 0, 0
		var runFrom time.Time
		for _, p := range s.Points {
			if p.V == top {
				if run == 0 {
					runFrom = p.T
				}
				run++
				if run > best {
					best, from, to = run, runFrom, p.T
				}
			} else {
				run = 0
			}
		}
		if best < 4 {
			continue
		}
		limit := strconv.FormatFloat(top, 'f', -1, 64)
		// What says the limit: a change, or the broker's policies.
		limitChange, overflow, dlx := "", "", ""
		for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
			if m := findSubmatch(maxLengthRE, c.Description); m != nil && digitsOnly(m[1]) == limit && c.Timestamp.Before(to) {
				limitChange = fmt.Sprintf("the %s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description)
			}
		}
		policyLimit := false
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				if m := findSubmatch(maxLengthRE, l); m != nil && digitsOnly(m[1]) == limit {
					policyLimit = true
					if m := findSubmatch(overflowRE, l); m != nil && overflow == "" {
						overflow = m[1]
					}
				}
			}
			dlx = orWord(dlx, replacedDeadLetter(c.Lines, q))
		}
		// What the broker counts as dropped for max-length.
		dropped, dropMetric := 0.0, ""
		for dn, ds := range metricSeries(ev.Metrics) {
			if !queueDropNameRE.MatchString(dn) || len(ds.Points) < 2 {
				continue
			}
			if dq := orWord(ds.Labels["queue"], ds.Labels["queue_name"]); dq != "" && dq != q {
				continue
			}
			if d := ds.Points[len(ds.Points)-1].V - ds.Points[0].V; d > 0 {
				dropped += d
				dropMetric = dn
				if st := ds.Labels["dead_letter_strategy"]; st == "disabled" {
					dropMetric += " with no dead-letter target"
				}
			}
		}
		if limitChange == "" && !policyLimit && dropped == 0 {
			continue
		}
		done[q] = true
		f := Finding{Kind: KindQueueLengthCap, Subject: q, Object: "queue " + q, Time: from, Severity: SevCritical, Weight: 0.8, Source: SrcMetrics}
		if dropped > 0 && (limitChange != "" || policyLimit) {
			f.Weight = 0.95
		}
		if ev.Scope.Service != "" {
			f.Related = append(f.Related, ev.Scope.Service)
		}
		f.setFact("queue", q)
		f.setFact("limit", limit)
		f.setFact("from", ts(from))
		f.setFact("to", ts(to))
		f.setFact("overflow", overflow)
		f.setFact("limit_change", limitChange)
		f.setFact("dlx_replaced", dlx)
		if dropped > 0 {
			f.setFact("dropped", strconv.FormatFloat(dropped, 'f', 0, 64))
			f.setFact("dropped_metric", dropMetric)
		}
		f.Summary = fmt.Sprintf("queue %s at its max-length %s from %s to %s, messages dropped", q, limit, ts(from), ts(to))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s of queue %s flat at %s for %d samples from %s to %s", name, q, limit, best, ts(from), ts(to)))
		if dropped > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s rose by %.0f: messages discarded for the length limit", dropMetric, dropped))
		}
		if limitChange != "" {
			f.Evidence = append(f.Evidence, "the limit: "+limitChange)
		}
		out = append(out, f)
	}
	return out
}

func digitsOnly(s string) string {
	return strings.NewReplacer(",", "", "_", "").Replace(s)
}

// replacedDeadLetter reads rabbitmqctl list_policies output (vhost, name,
// pattern, apply-to, definition, priority, tab-separated) and says when
// the queue's length-limit policy outranks a policy that gave it a
// dead-letter exchange: a queue takes only the highest-priority policy,
// so the limit replaced the dead-lettering.
func replacedDeadLetter(lines []string, q string) string {
	type pol struct {
		name, def string
		prio      int
	}
	var limit, dl *pol
	for _, l := range lines {
		cols := strings.Split(l, "\t")
		if len(cols) < 6 {
			continue
		}
		re, err := regexp.Compile(cols[2])
		if err != nil || !re.MatchString(q) {
			continue
		}
		prio, err := strconv.Atoi(strings.TrimSpace(cols[5]))
		if err != nil {
			continue
		}
		p := &pol{cols[1], cols[4], prio}
		if maxLengthRE.MatchString(p.def) && !strings.Contains(p.def, "dead-letter-exchange") {
			limit = p
		} else if strings.Contains(p.def, "dead-letter-exchange") {
			dl = p
		}
	}
	if limit == nil || dl == nil || limit.prio <= dl.prio {
		return ""
	}
	return fmt.Sprintf("the policy %s (priority %d) outranks the queue's dead-letter policy %s (priority %d), and a queue takes only one policy, so the discarded messages were not dead-lettered either", limit.name, limit.prio, dl.name, dl.prio)
}
