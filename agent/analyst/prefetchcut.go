package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A queue consumer's prefetch (AMQP basic.qos prefetch_count, a client's
// prefetch or QoS setting) bounds how many deliveries it holds unacked.
// Cut low (to 1 for "fair dispatch"), each consumer waits a round trip to
// the broker for every message: nothing fails, the workers look healthy
// and idle part of the time, yet together they deliver fewer messages than
// are published and the queue grows. The change that cut the prefetch,
// before the backlog's onset, is the cause; the consumer's log confirming
// the new QoS backs it.

// KindPrefetchCut is a consumer whose prefetch/QoS was cut so its
// throughput fell below the publish rate.
const KindPrefetchCut Kind = "prefetch_cut"

var prefetchCut = &mechanism{
	kind:   KindPrefetchCut,
	class:  classCause,
	label:  "consumer prefetch (QoS) cut below the publish rate",
	detect: detectPrefetchCut,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the consumers %s of %s cannot keep up since their prefetch (QoS prefetch_count) was cut from %s to %s by the %s: each consumer now waits for the broker between messages, so together they deliver fewer messages than are published and the queue grows, with no error",
			h.Subject, orWord(h.fact("queue"), "the queue"), orWord(h.fact("from"), "its old value"), orWord(h.fact("to"), "a lower one"), orWord(h.fact("change"), "a change"))
		d += h.clause("; ", "backlog")
		d += h.quoteClause("; the consumer's log confirms the new QoS: ", "line", 180)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Raise %s's prefetch back (prefetch_count %s, or a value near consumers x in-flight work) so each consumer keeps several deliveries in flight; handle the one slow message another way (a timeout on the slow call, a separate queue)", h.Subject, h.fact("from"))
		r.med("If fair dispatch is needed, raise the consumer count with the lower prefetch so throughput stays above the publish rate")
		r.low("Alert on the queue's ready messages growing and on delivery rate below publish rate (rabbitmq_detailed_queue_messages_ready, deliver vs publish rates)")
	},
}

var (
	// prefetchChangeRE: a change setting a prefetch / QoS from one value
	// to another (AMQP_PREFETCH_COUNT 200 -> 1, basic.qos prefetch 50 to 5).
	prefetchChangeRE = regexp.MustCompile(`(?i)(?:prefetch(?:[._ -]?count)?|basic[._]?qos|\bqos)\b[^\n0-9]{0,20}?(\d+)\s*(?:->|→|=>|to)\s*(\d+)`)
	// prefetchLineRE: a consumer's line stating its QoS.
	prefetchLineRE = regexp.MustCompile(`(?i)basic[._]?qos\s*\(\s*prefetch[._]?count\s*=\s*(\d+)|\bprefetch(?:[._]?count)?\s*[=:]\s*(\d+)`)
)

// detectPrefetchCut ties a backlog growing to the change that cut its
// consumer's prefetch before the backlog began.
func detectPrefetchCut(ev *Gathered, found []Finding) []Finding {
	var backlog *Finding
	for i := range found {
		if found[i].Kind == KindBacklog && (backlog == nil || found[i].Weight > backlog.Weight) {
			backlog = &found[i]
		}
	}
	if backlog == nil {
		return nil
	}
	var cut *evidence.Change
	var from, to int
	changes := append(append([]evidence.Change(nil), ev.Earlier...), ev.Changes...)
	for j := range changes {
		c := &changes[j]
		m := findSubmatch(prefetchChangeRE, c.Description)
		if m == nil || c.Timestamp.After(backlog.Time) || backlog.Time.Sub(c.Timestamp) > 6*time.Hour {
			continue
		}
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		if b >= a || (cut != nil && c.Timestamp.Before(cut.Timestamp)) {
			continue
		}
		cut, from, to = c, a, b
	}
	if cut == nil {
		return nil
	}
	subject := cut.Service
	if subject == "" {
		subject = ev.Scope.Service
	}
	f := Finding{Kind: KindPrefetchCut, Subject: subject, Object: "change " + cut.Revision, Namespace: backlog.Namespace,
		Source: SrcChanges, Severity: SevCritical, Weight: 0.9, Time: cut.Timestamp, Related: []string{backlog.Subject}}
	f.setFact("queue", backlog.Subject)
	f.setFact("from", strconv.Itoa(from))
	f.setFact("to", strconv.Itoa(to))
	f.setFact("change", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(cut.Kind), cut.Service, ts(cut.Timestamp), cut.Description))
	f.setFact("backlog", backlog.Summary)
	f.Evidence = []string{"prefetch cut from " + f.fact("from") + " to " + f.fact("to") + " by the " + f.fact("change")}
	if len(backlog.Evidence) > 0 {
		f.Evidence = append(f.Evidence, backlog.Evidence[0])
	}
	// The consumer's own line stating the new value.
	for _, ls := range ev.Logs {
		if !strings.EqualFold(ls.Subject, subject) && !strings.Contains(strings.ToLower(ls.Source), strings.ToLower(subject)) {
			continue
		}
		for _, t := range ls.Templates {
			for _, line := range t.Lines() {
				m := findSubmatch(prefetchLineRE, line)
				if m == nil || (m[1]+m[2]) != strconv.Itoa(to) || f.fact("line") != "" {
					continue
				}
				f.setFact("line", line)
				f.Evidence = append(f.Evidence, fmt.Sprintf("logs %s: %s", ls.Source, quote(line, 220)))
			}
		}
	}
	f.Summary = fmt.Sprintf("%s prefetch cut %d -> %d, queue %s backs up", subject, from, to, backlog.Subject)
	return []Finding{f}
}
