package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An event-driven autoscaler (a KEDA ScaledObject) that watches a queue
// nobody writes to any more: the producers and the consumer moved to a new
// queue (a rename, a versioned queue, another topic) but the scaler's
// trigger still names the old one. The trigger reads 0 messages, the
// scaler is not active and keeps the consumer at its minReplicaCount of 0,
// and the new queue fills with no consumer: nothing fails, nothing is
// processed. Read from the ScaledObject handed over (kubectl get
// scaledobject -o yaml|json: its scaleTargetRef, minReplicaCount and the
// trigger's queueName, topic, queueURL or listName), the consumer's
// Deployment at 0 replicas, and the queues' depths and consumers
// (rabbitmqctl list_queues, the RabbitMQ exporter's series): the watched
// queue empty while another one, that the consumer's change names or
// whose name is the watched one's renamed, holds messages with no
// consumer.

// KindScalerQueue is an event-driven autoscaler watching an abandoned
// queue while its consumer sits at 0 replicas.
const KindScalerQueue Kind = "scaler_queue"

var scalerQueue = &mechanism{
	kind:   KindScalerQueue,
	class:  classCause,
	label:  "autoscaler watches a queue nobody writes to (consumer at 0 replicas)",
	detect: func(ev *Gathered, found []Finding) []Finding { return detectScalerQueue(ev) },
	// The backlog of the queue it no longer consumes, and its alerts.
	related: func(h *Hypothesis, f *Finding) bool {
		q := h.fact("queue")
		return q != "" && (strings.EqualFold(f.Subject, q) || f.relates(q) || strings.Contains(strings.Join(f.Evidence, " "), q))
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		q := h.fact("queue")
		return q != "" && strings.Contains(changeText(c), strings.ToLower(q))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s is scaled to %s replicas by its KEDA ScaledObject, whose %s trigger still watches the queue %s (0 messages, so the scaler is never active), while the messages now go to %s: %s messages wait there with no consumer",
			h.Subject, orWord(h.fact("min"), "0"), orWord(h.fact("trigger"), "queue"), h.fact("watched"), h.fact("queue"), orWord(h.fact("messages"), "its"))
		if c := h.fact("change"); c != "" {
			d += "; the move to " + h.fact("queue") + " came with " + c + ", and the ScaledObject was not changed with it"
		}
		if s := h.fact("scaled"); s != "" {
			d += "; " + s
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Scale %s up now (kubectl scale deployment/%s --replicas=%s, or pause the ScaledObject) so the %s messages of %s are consumed", h.Subject, h.Subject, orWord(h.fact("original"), "2"), orWord(h.fact("messages"), "waiting"), h.fact("queue"))
		r.high("Change the ScaledObject's trigger of %s from %s to %s", h.Subject, h.fact("watched"), h.fact("queue"))
		r.med("Ship a change of the queue a consumer reads together with its ScaledObject (same chart or repository), and keep minReplicaCount at 1 for critical consumers")
		r.low("Alert on a queue with messages and no consumer (rabbitmq_queue_consumers == 0 and messages_ready > 0)")
	},
}

var (
	// a trigger's queue: RabbitMQ queueName, Kafka topic, SQS queueURL,
	// Redis listName/stream, Azure queueName
	soQueueRE  = regexp.MustCompile(`^\s*-?\s*"?(queueName|topic|queueURL|listName|stream)"?\s*:\s*"?([^",\s]+)"?,?\s*$`)
	soTypeRE   = regexp.MustCompile(`^\s*-?\s*"?type"?\s*:\s*"?([\w-]+)"?,?\s*$`)
	soTargetRE = regexp.MustCompile(`^\s*-?\s*"?scaleTargetRef"?\s*:`)
	soNameRE   = regexp.MustCompile(`^\s*"?name"?\s*:\s*"?([\w.-]+)"?,?\s*$`)
	soMinRE    = regexp.MustCompile(`^\s*"?minReplicaCount"?\s*:\s*"?(\d+)"?,?\s*$`)
	soOrigRE   = regexp.MustCompile(`^\s*"?originalReplicaCount"?\s*:\s*"?(\d+)"?,?\s*$`)
	// a queue name's version suffix (v2, 3)
	queueVersionRE = regexp.MustCompile(`v?\d+$`)
	// KEDA's scale executor setting the target to its minimum
	kedaMinRE = regexp.MustCompile(`(?i)Successfully set ScaleTarget replicas count to ScaledObject minReplicaCount`)
)

// scaledObject is what a ScaledObject handed over says.
type scaledObject struct {
	target, trigger, queue, min, original string
}

// scaledObjects reads the ScaledObjects of kubectl get scaledobject
// -o yaml|json outputs, line by line.
func scaledObjects(cmds []evidence.CommandOutput) []scaledObject {
	var out []scaledObject
	for _, c := range cmds {
		if !strings.Contains(strings.ToLower(c.Command), "scaledobject") {
			continue
		}
		var cur *scaledObject
		inTarget := false
		for _, l := range c.Lines {
			if matchLine(soTargetRE, l) {
				if cur == nil || cur.target != "" {
					out = append(out, scaledObject{})
					cur = &out[len(out)-1]
				}
				inTarget = true
				continue
			}
			if cur == nil {
				out = append(out, scaledObject{})
				cur = &out[len(out)-1]
			}
			if m := findSubmatch(soNameRE, l); m != nil && inTarget && cur.target == "" {
				cur.target = m[1]
				inTarget = false
				continue
			}
			if m := findSubmatch(soMinRE, l); m != nil {
				cur.min = m[1]
			}
			if m := findSubmatch(soOrigRE, l); m != nil {
				cur.original = m[1]
			}
			if m := findSubmatch(soTypeRE, l); m != nil && cur.trigger == "" && kedaTriggerType(m[1]) {
				cur.trigger = m[1]
			}
			if m := findSubmatch(soQueueRE, l); m != nil && cur.queue == "" {
				q := m[2]
				if m[1] == "queueURL" {
					q = q[strings.LastIndexByte(q, '/')+1:]
				}
				cur.queue = q
			}
		}
	}
	var kept []scaledObject
	for _, s := range out {
		if s.target != "" && s.queue != "" {
			kept = append(kept, s)
		}
	}
	return kept
}

// kedaTriggerType tells a trigger's type from a condition's type (Ready,
// Active, Fallback, Paused).
func kedaTriggerType(t string) bool {
	switch strings.ToLower(t) {
	case "ready", "active", "fallback", "paused":
		return false
	}
	return true
}

// queueState is a queue's depth and consumers, -1 when unknown.
type queueState struct {
	messages, consumers int
}

// queueStates reads queue depths and consumers from rabbitmqctl
// list_queues tables (any column order; messages_ready or messages) and
// from the RabbitMQ exporter's series (the last point of each queue).
func queueStates(ev *Gathered) map[string]queueState {
	qs := map[string]queueState{}
	get := func(q string) queueState {
		if s, ok := qs[q]; ok {
			return s
		}
		return queueState{-1, -1}
	}
	for _, c := range ev.Commands {
		name, msgs, cons := -1, -1, -1
		for _, l := range c.Lines {
			fs := strings.Fields(l)
			if name < 0 {
				for i, f := range fs {
					switch strings.ToLower(f) {
					case "name":
						name = i
					case "messages_ready", "messages":
						if msgs < 0 || strings.ToLower(f) == "messages_ready" {
							msgs = i
						}
					case "consumers":
						cons = i
					}
				}
				if name < 0 || msgs < 0 {
					name, msgs, cons = -1, -1, -1
				}
				continue
			}
			if len(fs) <= max(name, msgs, cons) {
				continue
			}
			n, err := strconv.Atoi(fs[msgs])
			if err != nil {
				continue
			}
			s := get(fs[name])
			s.messages = n
			if cons >= 0 {
				if k, err := strconv.Atoi(fs[cons]); err == nil {
					s.consumers = k
				}
			}
			qs[fs[name]] = s
		}
	}
	for _, set := range ev.Metrics {
		n := strings.ToLower(set.Name)
		isMsgs := strings.Contains(n, "queue_messages_ready") || strings.HasSuffix(n, "queue_messages")
		isCons := strings.HasSuffix(n, "queue_consumers")
		if !isMsgs && !isCons {
			continue
		}
		for _, sr := range set.Series {
			q := firstLabel(sr.Labels, "queue", "queue_name")
			p, ok := lastPoint(sr.Points)
			if q == "" || !ok {
				continue
			}
			s := get(q)
			if _, have := qs[q]; have && (isMsgs && s.messages >= 0 || isCons && s.consumers >= 0) {
				continue // a listing handed over is read first
			}
			if isMsgs {
				s.messages = int(p.V)
			} else {
				s.consumers = int(p.V)
			}
			qs[q] = s
		}
	}
	return qs
}

// renamedQueue reports whether b looks like a's renamed (email-send and
// email.send.v2, orders and orders-v2): the same letters and digits,
// apart from a version suffix.
func renamedQueue(a, b string) bool {
	norm := func(s string) string {
		var sb strings.Builder
		for _, r := range strings.ToLower(s) {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				sb.WriteRune(r)
			}
		}
		return sb.String()
	}
	x, y := norm(a), norm(b)
	if x == "" || y == "" || x == y {
		return x != "" && x == y && a != b
	}
	return queueVersionRE.ReplaceAllString(x, "") == queueVersionRE.ReplaceAllString(y, "")
}

func detectScalerQueue(ev *Gathered) []Finding {
	sos := scaledObjects(ev.Commands)
	if len(sos) == 0 {
		return nil
	}
	qs := queueStates(ev)
	var out []Finding
	for _, so := range sos {
		// The consumer is at 0: its Deployment asks for none.
		zero := false
		for i := range ev.K8s.Deployments {
			d := &ev.K8s.Deployments[i]
			if d.Name == so.target && (d.Spec.Replicas != nil && *d.Spec.Replicas == 0 || d.Spec.Replicas == nil && d.Status.Replicas == 0) {
				zero = true
			}
		}
		if !zero {
			continue
		}
		w, ok := qs[so.queue]
		if !ok || w.messages != 0 {
			continue
		}
		// The queue it should watch: messages, no consumer, and named by
		// a change of the consumer or the watched queue's renamed.
		var best, change string
		var changeAt time.Time
		names := make([]string, 0, len(qs))
		for q := range qs {
			names = append(names, q)
		}
		sort.Strings(names)
		for _, q := range names {
			s := qs[q]
			if q == so.queue || s.messages <= 0 || s.consumers > 0 || strings.Contains(strings.ToLower(q), "dlq") || strings.Contains(strings.ToLower(q), "dlx") || strings.Contains(strings.ToLower(q), "dead") {
				continue
			}
			var c string
			var at time.Time
			for _, ch := range append(ev.Earlier[:len(ev.Earlier):len(ev.Earlier)], ev.Changes...) {
				if strings.EqualFold(ch.Service, so.target) && strings.Contains(ch.Description, q) {
					c, at = fmt.Sprintf("%s (%s)", truncate(ch.Description, 160), ts(ch.Timestamp)), ch.Timestamp
				}
			}
			if c == "" && !renamedQueue(so.queue, q) {
				continue
			}
			if best == "" || qs[q].messages > qs[best].messages {
				best, change, changeAt = q, c, at
			}
		}
		if best == "" {
			continue
		}
		f := Finding{Kind: KindScalerQueue, Subject: so.target, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.85,
			Source: SrcKubernetes, Time: ev.Window.Start, Object: "scaledobject " + so.target}
		if !changeAt.IsZero() {
			f.Time = changeAt
		}
		f.setFact("watched", so.queue)
		f.setFact("queue", best)
		f.setFact("trigger", so.trigger)
		f.setFact("min", orWord(so.min, "0"))
		f.setFact("original", so.original)
		f.setFact("messages", strconv.Itoa(qs[best].messages))
		f.setFact("change", change)
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				if matchLine(kedaMinRE, l) && strings.Contains(l, so.target) {
					if t, ok := lineTime(l); ok {
						f.setFact("scaled", fmt.Sprintf("KEDA set %s to its minReplicaCount at %s", so.target, ts(t)))
					}
				}
			}
		}
		// The producers of the queue (a change or a log of theirs names
		// it): the messages they publish are the ones left unconsumed.
		for _, ch := range append(ev.Earlier[:len(ev.Earlier):len(ev.Earlier)], ev.Changes...) {
			if ch.Service != "" && !strings.EqualFold(ch.Service, so.target) && strings.Contains(ch.Description, best) && !slices.Contains(f.Related, ch.Service) {
				f.Related = append(f.Related, ch.Service)
			}
		}
		for _, ls := range ev.Logs {
			if ls.Subject == "" || strings.EqualFold(ls.Subject, so.target) || slices.Contains(f.Related, ls.Subject) {
				continue
			}
			for _, t := range ls.Templates {
				if strings.Contains(t.Example, best) {
					f.Related = append(f.Related, ls.Subject)
					break
				}
			}
		}
		f.Summary = fmt.Sprintf("%s is held at 0 replicas: its ScaledObject watches %s (0 messages) while %s holds %d messages with no consumer", so.target, so.queue, best, qs[best].messages)
		f.Evidence = []string{
			fmt.Sprintf("ScaledObject of %s: %s trigger on %s, minReplicaCount %s; deployment %s has 0 replicas", so.target, orWord(so.trigger, "queue"), so.queue, orWord(so.min, "0"), so.target),
			fmt.Sprintf("queue %s: 0 messages; queue %s: %d messages, 0 consumers", so.queue, best, qs[best].messages),
		}
		if change != "" {
			f.Evidence = append(f.Evidence, "the change that moved "+so.target+" to "+best+": "+change)
		}
		if s := f.Facts["scaled"]; s != "" {
			f.Evidence = append(f.Evidence, s)
		}
		out = append(out, f)
	}
	return out
}

// leadTimeRE is an RFC 3339 time leading a log line.
var leadTimeRE = regexp.MustCompile(`^\s*(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d))`)

// lineTime reads the RFC 3339 time a log line starts with.
func lineTime(l string) (time.Time, bool) {
	m := findSubmatch(leadTimeRE, l)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, m[1])
	return t, err == nil
}
