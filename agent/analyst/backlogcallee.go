package analyst

import (
	"fmt"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A consumer's per-record wait read from its client metrics. A consumer
// that calls another service for each record (a price, a tax rate, a
// fraud score) processes a poll's batch only as fast as that service
// answers: when the callee slows down, the batch outlasts the poll
// interval, the consumer is dropped from its group, the group rebalances
// and the lag grows, however many consumers run. The client's latency
// metric names the callee in a label (Micrometer's client_name,
// OpenTelemetry's server_address or net_peer_name, peer_service, Istio's
// destination_service_name for the source workload); the callee's own
// change just before its calls slowed is where the chain leads.

// waitCalleeLabels are the labels of a client latency series that name
// the service called beyond calleeLabels: Micrometer's client_name (the
// host of a RestTemplate or WebClient call) and a mesh's destination.
var waitCalleeLabels = []string{"client_name", "destination_service_name", "destination_workload", "destination_app", "upstream", "target_host"}

// callerLabels name the calling workload where the series also names the
// callee (Istio's source_workload beside destination_service_name).
var callerLabels = []string{"source_workload", "source_app", "source_canonical_service"}

// metricConsumerWaits finds, for backlog h, the client latency series of
// its consumer that name a callee and rose in the window (at least
// calleeWaitBar and several times its baseline): each is a per-record wait
// on that callee, with the callee's change that came just before, if any.
func metricConsumerWaits(ev *Gathered, h *Hypothesis) []Finding {
	type wait struct {
		sh     shift
		metric string
	}
	best := map[string]wait{}
	var order []string
	for _, set := range ev.Metrics {
		if set.Class != MetricLatency {
			continue
		}
		scale := 1.0
		if strings.Contains(strings.ToLower(set.Name), "millisecond") || set.Unit == "ms" {
			scale = 0.001
		}
		for _, s := range set.Series {
			caller := orWord(firstLabel(s.Labels, callerLabels...), SubjectOfLabels(s.Labels))
			if caller == "" || !consumesBacklog(h, caller) {
				continue
			}
			callee := calleeOfLabels(s.Labels)
			if callee == "" {
				if v := firstLabel(s.Labels, waitCalleeLabels...); v != "" {
					callee = ShortHost(DependencyName(strings.TrimPrefix(strings.TrimPrefix(v, "http://"), "https://")))
				}
			}
			if callee == "" || strings.EqualFold(callee, caller) {
				continue
			}
			sh, ok := seriesShift(s, ev.Window)
			if !ok || !sh.up {
				continue
			}
			sh.before, sh.peak = sh.before*scale, sh.peak*scale
			if sh.peak < calleeWaitBar || sh.before > 0 && sh.peak < 3*sh.before {
				continue
			}
			w, seen := best[callee]
			if !seen {
				order = append(order, callee)
			}
			if !seen || sh.peak > w.sh.peak {
				best[callee] = wait{sh: sh, metric: orWord(set.Name, s.Labels["__name__"])}
			}
		}
	}
	var out []Finding
	for _, callee := range order {
		w := best[callee]
		f := Finding{Kind: KindSlowOperation, Subject: h.Subject, Object: "metrics " + w.metric, Time: w.sh.start,
			Severity: SevWarning, Weight: 0.6, Source: SrcMetrics, Related: []string{callee}}
		f.setFact("max", seconds(w.sh.peak))
		f.setFact("baseline", seconds(w.sh.before))
		f.setFact("caller", h.Subject)
		f.setFact("callee", callee)
		f.setFact("operation", "call to "+callee)
		f.setFact("metric", w.metric)
		f.Evidence = []string{fmt.Sprintf("%s of %s's calls to %s rose from %s to %s (from %s): each record waits that long for %s",
			w.metric, h.Subject, callee, seconds(w.sh.before), seconds(w.sh.peak), ts(w.sh.start), callee)}
		if c := calleeChange(ev.Changes, callee, w.sh.start, ev.Window); c != nil {
			f.setFact("callee_change", fmt.Sprintf("%s %s at %s (%s)", callee, changeWord(c.Kind), hm(c.Timestamp), truncate(c.Description, 140)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s of %s at %s, just before its calls slowed: %s", changeWord(c.Kind), callee, ts(c.Timestamp), truncate(c.Description, 200)))
		}
		f.Summary = fmt.Sprintf("%s waits %s per record on its calls to %s (was %s)", h.Subject, seconds(w.sh.peak), callee, seconds(w.sh.before))
		out = append(out, f)
	}
	return out
}

// calleeWaitBar is the least mean wait per call that makes a per-record
// call the bound of a consumer's pace: a poll of hundreds of records then
// takes minutes.
const calleeWaitBar = 0.2

// calleeChange is the last change of callee in the baseline or the window
// that came before its calls slowed (at most a few minutes after the
// first slow point, which falls on a metric step).
func calleeChange(changes []evidence.Change, callee string, slowed time.Time, w Window) *evidence.Change {
	var best *evidence.Change
	for i := range changes {
		c := &changes[i]
		if !strings.EqualFold(c.Service, callee) || c.Timestamp.After(slowed.Add(5*time.Minute)) || !w.BaselineStart.IsZero() && c.Timestamp.Before(w.BaselineStart) {
			continue
		}
		if best == nil || c.Timestamp.After(best.Timestamp) {
			best = c
		}
	}
	return best
}

// changeWord names a change's kind in a sentence ("deploy", "config
// change").
func changeWord(kind string) string {
	switch kind {
	case "", "deploy":
		return "deploy"
	case "config":
		return "config change"
	case "flag", "feature_flag":
		return "feature flag change"
	}
	return kind + " change"
}
