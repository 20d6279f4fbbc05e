package analyst

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A consumer group falling behind: its lag grows because the consumers
// process records more slowly than they arrive (a slower handler, fewer
// consumers, a surge of records).
var backlogM = &mechanism{
	kind:    KindBacklog,
	class:   classCause,
	label:   "consumer lag / backlog growing",
	metrics: DetectBacklog,
	detect:  detectConsumerWaits,
	// The consumer of a queue (named after it: order-events-consumer of
	// order-events, or the service a consumer group is named after)
	// timing out, failing or slowing down is why the queue backs up: its
	// findings are this backlog's.
	related: func(h *Hypothesis, f *Finding) bool {
		return consumesBacklog(h, f.Subject) && consumerFailure[f.Kind]
	},
	describe: func(h *Hypothesis, sc Scope) string { return describeBacklog(h) },
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Let the consumers of %s catch up: roll back the change that slowed them, or scale the consumers out (up to the partition count)", s))
		r.add(finding.PriorityMedium, "Make per-record processing fast again (no synchronous remote call per record, batch or async it); tune max.poll.records / max.poll.interval.ms so polls stay within the interval")
		r.add(finding.PriorityLow, "Alert on consumer lag growth (lag slope) per consumer group, not only on its absolute value")
	},
}

func describeBacklog(h *Hypothesis) string {
	what := orWord(h.fact("what"), "backlog")
	on := h.Subject
	on += h.clause(" on topic ", "topic")
	subj := "group " + on
	if what != "consumer lag" {
		subj = on
	}
	d := fmt.Sprintf("the %s of %s grows steadily from %s to %s: the consumers fall behind (backlog)", what, subj, orDash(h.fact("baseline")), orDash(h.fact("peak")))
	if p := h.fact("partition"); p != "" {
		d = fmt.Sprintf("the %s of %s grows steadily from %s to %s, all of it on partition %s while the other %s partitions are drained: the consumer is stuck on one record of partition %s (a message it fails on and retries without end, a poison message), not slow",
			what, subj, orDash(h.fact("baseline")), orDash(h.fact("peak")), p, h.fact("other_partitions"), p)
	}
	said := map[Kind]bool{}
	for _, f := range h.Support {
		if !consumesBacklog(h, f.Subject) || said[f.Kind] {
			continue
		}
		said[f.Kind] = true
		switch f.Kind {
		case KindTimeout:
			d += fmt.Sprintf("; its consumer %s times out: %s", f.Subject, quote(ReadableLine(f.fact("line")), 160))
		case KindSlowOperation:
			if c := f.fact("callee"); c != "" {
				if l := f.fact("line"); l != "" {
					d += fmt.Sprintf("; each record waits for its call to %s, which takes up to %s now: %s", c, f.fact("max"), quote(ReadableLine(l), 160))
				} else {
					d += fmt.Sprintf("; each record waits for its call to %s, which takes %s now (%s, was %s)", c, f.fact("max"), f.fact("metric"), f.fact("baseline"))
				}
				if cc := f.fact("callee_change"); cc != "" {
					d += fmt.Sprintf("; its calls slowed after the %s", cc)
				}
				if n := f.fact("next_hop"); n != "" {
					d += fmt.Sprintf("; %s in turn waits for %s: %s", c, n, f.fact("next_what"))
				}
				break
			}
			d += fmt.Sprintf("; the consumer's log reports the slow call it waits for: %s", quote(ReadableLine(f.fact("line")), 160))
		case KindLatency, KindErrorRate:
			d += "; " + f.Summary
		}
	}
	for _, f := range h.Support {
		if f.Kind == KindConsumerStall {
			d += fmt.Sprintf("; the consumer's poll loop is too slow (poll timeout, max.poll.interval.ms exceeded, rebalancing): %s", quote(ReadableLine(f.fact("line")), 200))
			break
		}
	}
	return d + pollSettingNote(h)
}

// consumesBacklog reports whether subject consumes what h's backlog holds:
// a consumer named after the queue, or the service a consumer group is
// named after (group fulfillment-worker of the fulfillment-worker pods).
func consumesBacklog(h *Hypothesis, subject string) bool {
	return consumerOf(subject, h.Subject) || h.fact("what") == "consumer lag" && strings.EqualFold(subject, h.Subject)
}

// detectConsumerWaits finds what the consumers of a growing lag wait on
// per record, asked about time or not: the longest call to a named
// dependency their own log reports in the window (at least slowBar, not
// its usual pace), and the hop that dependency waits on in turn (its own
// calls timing out or slowing, as found). The slow call, not the broker
// nor the group's rebalancing, is why the poll loop overruns.
func detectConsumerWaits(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, b := range found {
		if b.Kind != KindBacklog || seen[b.Subject] {
			continue
		}
		seen[b.Subject] = true
		h := &Hypothesis{Kind: KindBacklog, Subject: b.Subject, Primary: []*Finding{&b}}
		// The consumer's client metrics name the callee each record waits
		// on, when its log does not.
		out = append(out, metricConsumerWaits(ev, h)...)
		for i := range ev.Logs {
			set := &ev.Logs[i]
			consumer := orWord(set.Subject, subjectOfSource(set.Source))
			if !consumesBacklog(h, consumer) {
				continue
			}
			best, bestLine, callee := 0.0, "", ""
			var at time.Time
			lines := 0
			for _, t := range set.Templates {
				if t.Incident == 0 || set.HasBaseline && t.Baseline > 0 && !t.Surging(3, 3) {
					continue
				}
				for _, l := range t.Lines() {
					d, ok := fieldDuration(l)
					if !ok || d < slowBar || d <= best {
						continue
					}
					// An address the call went to (a URL, host:port), not
					// a word of the message ("carrier ETA lookup").
					addr := DependencyTarget(l)
					if !strings.Contains(addr, ":") && !matchLine(urlRE, l) {
						continue
					}
					c := DependencyName(addr)
					if c == "" || strings.EqualFold(c, consumer) {
						continue
					}
					best, bestLine, callee, at, lines = d, l, c, firstOf(t.FirstIncident, t.FirstSeen), t.Incident
				}
			}
			if callee == "" {
				continue
			}
			f := Finding{Kind: KindSlowOperation, Subject: consumer, Object: set.Origin + " " + set.Source, Namespace: set.Namespace, Time: at,
				Severity: SevWarning, Weight: 0.7, Source: set.Origin, Related: []string{callee}}
			f.setFact("line", bestLine)
			f.setFact("max", seconds(best))
			f.setFact("caller", consumer)
			f.setFact("callee", callee)
			f.setFact("operation", "call to "+callee)
			f.setFact("lines", strconv.Itoa(lines))
			f.Evidence = []string{fmt.Sprintf("%s %s logged %s of calls to %s in the window, the longest taking %s: %s", set.Origin, set.Source, plural(lines, "line", "lines"), callee, seconds(best), quote(ReadableLine(bestLine), 240))}
			// The hop the callee waits on: its own calls timing out or
			// failing, else its latency.
			for j := range found {
				n := &found[j]
				if infoOf(n.Kind).class == classDependency && strings.EqualFold(n.fact("caller"), callee) && !strings.EqualFold(n.Subject, consumer) {
					f.setFact("next_hop", n.Subject)
					f.setFact("next_what", n.Summary)
					f.Related = append(f.Related, n.Subject)
					f.Evidence = append(f.Evidence, n.Summary)
					break
				}
			}
			f.Summary = fmt.Sprintf("%s waits up to %s per record on its calls to %s", consumer, seconds(best), callee)
			out = append(out, f)
		}
	}
	return out
}

// consumerFailure are the kinds of a consumer's failure that back up its
// queue.
var consumerFailure = map[Kind]bool{KindTimeout: true, KindSlowOperation: true, KindLatency: true, KindErrorRate: true, KindAppCrash: true, KindCrashLoop: true}

// consumerOf reports whether subject is named as a consumer of queue
// ("order-events-consumer", "order-events-worker" of "order-events"),
// not its dead-letter queue.
func consumerOf(subject, queue string) bool {
	rest, ok := strings.CutPrefix(strings.ToLower(subject), strings.ToLower(queue)+"-")
	if !ok || queue == "" {
		return false
	}
	for _, w := range []string{"consumer", "worker", "processor", "handler", "subscriber", "listener", "reader"} {
		if strings.Contains(rest, w) {
			return true
		}
	}
	return false
}

// isBacklogMetric reports whether a metric measures work waiting to be
// consumed: consumer-group lag, queue depth, visible messages, backlogs.
func isBacklogMetric(n string) bool {
	n = strings.ToLower(n)
	for _, w := range []string{"consumergroup_lag", "consumer_lag", "consumer_group_lag", "queue_depth", "queue_size", "queue_length", "messagesvisible", "messages_visible", "_backlog", "backlog_", "messages_ready", "pending_messages", "messages_pending"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return strings.HasSuffix(n, "_pending") || strings.HasSuffix(n, "backlog")
}

// backlogKey names what a backlog series measures: a consumer group (and
// topic) or a queue.
func backlogKey(l evidence.Labels) (subject, detail string) {
	if g := firstLabel(l, "consumergroup", "consumer_group", "group", "groupId", "group_id"); g != "" {
		return g, firstLabel(l, "topic")
	}
	if q := firstLabel(l, "queue", "QueueName", "queue_name"); q != "" {
		return q, ""
	}
	return SubjectOfLabels(l), firstLabel(l, "topic")
}

// DetectBacklog finds backlogs that keep growing: consumer-group lag,
// queue depth, visible messages (summed over partitions), at least five
// times the baseline, by a practical amount, and still high at the end of
// the window. A dead-letter queue filling is a symptom, not a backlog.
func DetectBacklog(sets []MetricSet, w Window) []Finding {
	var out []Finding
	for _, ms := range sets {
		if !isBacklogMetric(ms.Name) {
			continue
		}
		type agg struct {
			subject, detail, ns string
			sum                 map[time.Time]float64
			parts               map[string][]evidence.Point // by partition
		}
		by := map[string]*agg{}
		var order []string
		for _, s := range ms.Series {
			sub, det := backlogKey(s.Labels)
			if sub == "" {
				continue
			}
			if l := strings.ToLower(sub); strings.Contains(l, "dlq") || strings.Contains(l, "dead-letter") || strings.Contains(l, "deadletter") || strings.HasSuffix(l, "-dead") {
				continue
			}
			k := sub + "|" + det
			a := by[k]
			if a == nil {
				a = &agg{subject: sub, detail: det, ns: s.Labels["namespace"], sum: map[time.Time]float64{}, parts: map[string][]evidence.Point{}}
				by[k] = a
				order = append(order, k)
			}
			for _, p := range inWindow(s.Points, w.BaselineStart, w.End) {
				a.sum[p.T] += p.V
			}
			if part := s.Labels["partition"]; part != "" {
				a.parts[part] = append(a.parts[part], inWindow(s.Points, w.Start, w.End)...)
			}
		}
		for _, k := range order {
			a := by[k]
			pts := make([]evidence.Point, 0, len(a.sum))
			for t, v := range a.sum {
				pts = append(pts, evidence.Point{T: t, V: v})
			}
			sort.Slice(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
			f, ok := backlogFinding(ms, a.subject, a.detail, a.ns, pts, w)
			if ok {
				stuckPartition(&f, a.parts)
				out = append(out, f)
			}
		}
	}
	return out
}

func backlogFinding(ms MetricSet, subject, detail, ns string, pts []evidence.Point, w Window) (Finding, bool) {
	var base []float64
	var inc []evidence.Point
	for _, p := range pts {
		if p.T.Before(w.Start) {
			base = append(base, p.V)
		} else {
			inc = append(inc, p)
		}
	}
	if len(inc) < 5 {
		return Finding{}, false
	}
	before := 0.0
	if len(base) > 0 {
		before = analysis.Median(base)
	} else {
		before = inc[0].V
	}
	peak, peakAt := 0.0, time.Time{}
	for _, p := range inc {
		if p.V > peak {
			peak, peakAt = p.V, p.T
		}
	}
	last := inc[len(inc)-1].V
	floor := max(before*5, before+500)
	if peak < floor || last < 0.5*peak {
		return Finding{}, false
	}
	// Onset: the first point of the climb that does not fall back to the
	// baseline level.
	thr := before + (peak-before)*0.1
	onset := peakAt
	for i := len(inc) - 1; i >= 0 && inc[i].V >= thr; i-- {
		onset = inc[i].T
	}
	// Growing steadily: most steps after the onset go up.
	up, steps := 0, 0
	for i := 1; i < len(inc); i++ {
		if inc[i].T.Before(onset) {
			continue
		}
		steps++
		if inc[i].V >= inc[i-1].V {
			up++
		}
	}
	weight := 0.8
	if steps >= 4 && up*10 >= steps*7 {
		weight = 0.92
	}
	what := "consumer lag"
	n := strings.ToLower(ms.Name)
	if !strings.Contains(n, "lag") {
		what = "backlog"
		if strings.Contains(n, "queue") || strings.Contains(n, "messages") {
			what = "queue backlog"
		}
	}
	on := subject
	if detail != "" {
		on += " on " + detail
	}
	f := Finding{Kind: KindBacklog, Subject: subject, Object: ms.Origin + " " + ms.Name, Namespace: ns, Time: onset, Severity: SevCritical,
		Weight: weight, Source: ms.Origin, Related: []string{subject}}
	f.Summary = fmt.Sprintf("%s of %s grows from %.0f to %.0f", what, on, before, peak)
	f.Evidence = []string{fmt.Sprintf("%s (%s, summed over partitions) of %s grows steadily from %.0f (baseline median) to %.0f at %s, %.0f at the end of the window; beyond normal since %s",
		what, ms.Name, on, before, peak, ts(peakAt), last, ts(onset))}
	f.setFact("metric", ms.Name)
	f.setFact("what", what)
	f.setFact("group", subject)
	f.setFact("topic", detail)
	f.setFact("baseline", fmt.Sprintf("%.0f", before))
	f.setFact("peak", fmt.Sprintf("%.0f", peak))
	return f, true
}

// stuckPartition notes on a growing lag that it sits on one partition: at
// the end of the window that partition holds nearly all of it while the
// others are drained. A consumer that is merely slow lags on every
// partition it owns; one stuck on a record (a poison message retried
// without end, a record its handler always fails on) lags on that
// record's partition alone.
func stuckPartition(f *Finding, parts map[string][]evidence.Point) {
	if len(parts) < 3 {
		return
	}
	var total, top float64
	name := ""
	for p, pts := range parts {
		last, ok := lastPoint(pts)
		if !ok {
			return
		}
		total += last.V
		if last.V > top {
			top, name = last.V, p
		}
	}
	if total <= 0 || top < 0.9*total {
		return
	}
	f.setFact("partition", name)
	f.setFact("other_partitions", fmt.Sprintf("%d", len(parts)-1))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%.0f of the %.0f messages of lag are on partition %s at the end of the window; the other %d partitions are drained: one partition stuck, not the consumers slow",
		top, total, name, len(parts)-1))
}
