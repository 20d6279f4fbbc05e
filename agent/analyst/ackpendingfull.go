package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// KindAckPendingFull: a consumer's window of delivered, unacknowledged
// messages is full (JetStream's max_ack_pending, a RabbitMQ prefetch
// count): the server delivers nothing more until some are acked, so the
// backlog grows while the consumer sits idle and the broker is healthy.
// The window fills when the consumer takes messages and neither acks nor
// naks them, most often a code path that returns early (a message skipped,
// a type it does not handle) and leaves the message to its ack wait; when
// such messages keep coming they take every slot.
const KindAckPendingFull Kind = "ack_pending_full"

var ackPendingFull = &mechanism{
	kind:   KindAckPendingFull,
	class:  classCause,
	label:  "consumer's ack-pending window full",
	detect: detectAckPendingFull,
	describe: func(h *Hypothesis, sc Scope) string {
		cons := orWord(h.fact("consumer"), "the consumer")
		d := fmt.Sprintf("%s's consumer %s has reached its max ack pending: %s outstanding acks out of a maximum of %s — messages delivered to it and never acknowledged fill the window, so the server stops delivering new ones and the backlog grows (%s unprocessed) while the consumer idles: the server is doing what the consumer is configured for",
			h.Subject, cons, orWord(h.fact("outstanding"), "all"), orWord(h.fact("max"), "its"), orWord(h.fact("unprocessed"), "messages"))
		if la := h.fact("last_ack"); la != "" {
			d += fmt.Sprintf("; its last ack was %s ago", la)
		}
		if l := h.fact("skip_line"); l != "" {
			d += fmt.Sprintf("; %s logs messages it skips without acking them, which stay outstanding until the window is full (%s)", h.Subject, quote(truncate(l, 200), 210))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Make %s acknowledge (ack, or term/nak) every message it takes, including the ones it skips or cannot handle, so that none stay outstanding", h.Subject)
		r.med("To resume delivery now, let the outstanding messages of %s expire (ack wait) or term them, after the fix is deployed", orWord(h.fact("consumer"), "the consumer"))
		r.low("Alert on a consumer's outstanding acks near its max ack pending and on its last ack age")
	},
}

var (
	// nats consumer info: "Information for Consumer NOTIFY > push-dispatch",
	// "Outstanding Acks: 1,000 out of maximum 1,000", "Last Ack: 36m53s
	// ago", "Unprocessed Messages: 43,457".
	natsConsumerRE    = regexp.MustCompile(`Information for Consumer (\S+) > (\S+)`)
	natsOutstandingRE = regexp.MustCompile(`Outstanding Acks:\s*([\d,]+) out of maximum ([\d,]+)`)
	natsLastAckRE     = regexp.MustCompile(`Last Ack: (\S+) ago`)
	natsUnprocessedRE = regexp.MustCompile(`Unprocessed Messages:\s*([\d,]+)`)
	// A pull request refused because the window is full.
	maxAckPendingLineRE = regexp.MustCompile(`(?i)Exceeded MaxAckPending`)
	// A consumer's log of a message it leaves without handling it.
	skipLineRE = regexp.MustCompile(`(?i)\bskip(?:ping|ped)?\b|\bignor(?:ing|ed)\b|\bdiscard(?:ing|ed)?\b|not (?:enabled|supported|handled)|unsupported|no handler`)
	ackWordRE  = regexp.MustCompile(`(?i)\b(?:ack(?:ed|ing)?|nak(?:ed)?|term(?:inated)?)\b`)
)

func commaInt(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n
}

// detectAckPendingFull reads a consumer's state (nats consumer info) with
// its outstanding acks at the maximum, finds the workload whose log names
// the consumer, and that workload's lines of messages skipped.
func detectAckPendingFull(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, c := range ev.Commands {
		stream, cons, outst, maxv, lastAck, unproc := "", "", "", "", "", ""
		for _, l := range c.Lines {
			if m := natsConsumerRE.FindStringSubmatch(l); m != nil {
				stream, cons = m[1], m[2]
			}
			if m := natsOutstandingRE.FindStringSubmatch(l); m != nil {
				outst, maxv = m[1], m[2]
			}
			if m := natsLastAckRE.FindStringSubmatch(l); m != nil {
				lastAck = m[1]
			}
			if m := natsUnprocessedRE.FindStringSubmatch(l); m != nil {
				unproc = m[1]
			}
		}
		if cons == "" && strings.Contains(c.Run, "consumer info") {
			if fs := strings.Fields(c.Run); len(fs) >= 2 {
				stream, cons = fs[len(fs)-2], fs[len(fs)-1]
			}
		}
		if cons == "" || maxv == "" || commaInt(maxv) == 0 || commaInt(outst) < commaInt(maxv) {
			continue
		}
		subject, skip := consumerWorkload(ev, cons)
		f := Finding{Kind: KindAckPendingFull, Subject: orWord(subject, cons), Object: "consumer " + stream + "/" + cons, Severity: SevCritical,
			Weight: 0.8, Source: SrcLogs}
		f.Time = ackPendingOnset(ev, cons, float64(commaInt(maxv)))
		if skip != nil {
			f.Weight = 0.9
			f.setFact("skip_line", ReadableLine(skip.text))
			if f.Time.IsZero() || !skip.at.IsZero() && skip.at.Before(f.Time) {
				f.Time = skip.at
			}
		}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		f.setFact("consumer", stream+" > "+cons)
		f.setFact("outstanding", outst)
		f.setFact("max", maxv)
		f.setFact("last_ack", lastAck)
		f.setFact("unprocessed", unproc)
		f.Summary = fmt.Sprintf("%s: consumer %s at its max ack pending (%s of %s outstanding)", f.Subject, cons, outst, maxv)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: Outstanding Acks: %s out of maximum %s%s%s", strings.TrimSpace(c.Run), outst, maxv,
			clauseIf("; Last Ack: ", lastAck, " ago"), clauseIf("; Unprocessed Messages: ", unproc, "")))
		if skip != nil {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs %s messages it skips without an ack from %s: %s", f.Subject, plural(skip.n, "line of", "lines of"), ts(skip.at), quote(truncate(ReadableLine(skip.text), 200), 210)))
		}
		out = append(out, f)
	}
	return out
}

func clauseIf(prefix, v, suffix string) string {
	if v == "" {
		return ""
	}
	return prefix + v + suffix
}

type skipSeen struct {
	text string
	at   time.Time
	n    int
}

// consumerWorkload is the workload whose log names the consumer, with its
// most frequent line, new in the incident window, of a message skipped
// without an ack.
func consumerWorkload(ev *Gathered, cons string) (string, *skipSeen) {
	subject := ""
	var best *skipSeen
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host {
			continue
		}
		named := false
		for _, t := range set.Templates {
			if strings.Contains(t.Example, cons) || matchLine(maxAckPendingLineRE, t.Example) {
				named = true
				break
			}
		}
		if !named {
			continue
		}
		if subject == "" {
			subject = set.Subject
		}
		if set.Subject != subject {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 || t.Baseline > 0 && set.HasBaseline || !matchLine(skipLineRE, t.Example) || matchLine(ackWordRE, t.Example) {
				continue
			}
			if best == nil || t.Incident > best.n {
				best = &skipSeen{text: t.Example, at: firstOf(t.FirstIncident, t.FirstSeen), n: t.Incident}
			}
		}
	}
	return subject, best
}

// ackPendingOnset is when a series of the consumer's outstanding acks
// first reached the maximum (zero when no such series was read).
func ackPendingOnset(ev *Gathered, cons string, maxv float64) time.Time {
	var at time.Time
	for name, s := range metricSeries(ev.Metrics) {
		if !strings.Contains(name, "ack_pending") || s.Labels["consumer_name"] != cons && s.Labels["consumer"] != cons {
			continue
		}
		for _, p := range s.Points {
			if p.V >= maxv {
				if at.IsZero() || p.T.Before(at) {
					at = p.T
				}
				break
			}
		}
	}
	return at
}
