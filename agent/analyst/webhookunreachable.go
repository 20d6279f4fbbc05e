package analyst

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An admission webhook the API server cannot reach: a ReplicaSet's (or
// Job's, StatefulSet's) FailedCreate says 'failed calling webhook "W":
// failed to call webhook: Post "https://svc.ns.svc:443/...": context
// deadline exceeded' (or connection refused, no endpoints available). The
// webhook's failurePolicy Fail then refuses every new pod of the workload
// while its old pods run on: a rollout that makes no new pods. The cause
// lives in the webhook's own namespace: its Service's pods are not ready
// (crashing, failing readiness), and their log says why. The workload and
// its deploy are victims.

// KindWebhookUnreachable is a workload whose pods cannot be created because
// an admission webhook's service does not answer.
const KindWebhookUnreachable Kind = "webhook_unreachable"

var webhookUnreachable = &mechanism{
	kind:  KindWebhookUnreachable,
	class: classCause,
	label: "pods cannot be created: an admission webhook's service does not answer",
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.EqualFold(c.Subject, h.fact("backend")) || strings.Contains(t, "webhook") || h.fact("backend") != "" && strings.Contains(t, strings.ToLower(h.fact("backend")))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s cannot create its pods: the API server fails calling the admission webhook %s (service %s: %s), so the ReplicaSet's pod creations are refused and the rollout makes no new pods while the old ones run on",
			h.Subject, h.fact("webhook"), h.fact("service"), h.fact("error"))
		d += h.clause("; the webhook's pods are not ready: ", "backend_state")
		if l := h.fact("backend_log"); l != "" {
			d += "; their log says: " + truncate(l, 220)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Bring the webhook's service %s back (fix why its pods are not ready: %s); pod creations of %s resume on their own", h.fact("service"), orWord(truncate(h.fact("backend_log"), 140), "read their events and previous logs"), h.Subject)
		r.med("If the webhook must stay down, exclude namespace %s from it (namespaceSelector / objectSelector) or set its failurePolicy to Ignore until it is back", orWord(h.top().Namespace, "the workload's"))
		r.low("Alert on FailedCreate events and on webhook services without ready endpoints; run the webhook with more than one replica and a PodDisruptionBudget")
	},
}

// webhookCallRE reads a FailedCreate message's failed webhook call: the
// webhook, the service host (svc.ns.svc) and the error after the URL.
var webhookCallRE = regexp.MustCompile(`failed calling webhook "([^"]+)": (?:failed to call webhook: )?(?:Post|post) "https://([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?(?::\d+)?[^"]*":\s*(.+)$`)

// webhookUnreachableRE is an error that says the service did not answer
// (not a denial: a denial is the webhook working).
var webhookUnreachableRE = regexp.MustCompile(`(?i)context deadline exceeded|timeout|timed out|connection refused|no endpoints available|connection reset|EOF|no route to host|service "[^"]+" not found`)

// webhookCall is one failed webhook call out of a FailedCreate message.
type webhookCall struct {
	webhook, service, namespace, err string
}

// parseWebhookCall reads a FailedCreate message; ok is false when it is
// not a webhook the API server failed to reach.
func parseWebhookCall(msg string) (webhookCall, bool) {
	m := findSubmatch(webhookCallRE, strings.TrimSpace(msg))
	if m == nil || !matchLine(webhookUnreachableRE, m[4]) {
		return webhookCall{}, false
	}
	return webhookCall{webhook: m[1], service: m[2], namespace: m[3], err: strings.TrimSpace(m[4])}, true
}

// webhookBackend is what was read of the webhook service's pods.
type webhookBackend struct {
	Pods   []corev1.Pod
	Events []corev1.Event
	Lines  []evidence.LogLine
}

// gatherWebhookBackend follows a FailedCreate's unreachable webhook into
// its service's namespace: its pods, their events and their logs.
func (g *gatherer) gatherWebhookBackend(ctx context.Context, plan []specialist) []Finding {
	var call webhookCall
	var failed []corev1.Event
	for _, e := range g.k8s.Events {
		if e.Reason != "FailedCreate" {
			continue
		}
		if c, ok := parseWebhookCall(e.Message); ok && (call.service == "" || c == call) {
			call = c
			failed = append(failed, e)
		}
	}
	if call.service == "" || g.src == nil {
		return nil
	}
	var b webhookBackend
	since, until := g.window()
	for _, sp := range plan {
		if !sp.run.Has("list_pods") {
			continue
		}
		if out, ok := g.call(ctx, sp, "list_pods", map[string]any{"namespace": call.namespace}); ok {
			pods, _ := as[[]corev1.Pod](out)
			for _, p := range pods {
				if p.Namespace == call.namespace && (workloadOfName(p.Name) == call.service || p.Labels["app"] == call.service || p.Labels["app.kubernetes.io/name"] == call.service) {
					b.Pods = append(b.Pods, p)
				}
			}
		}
		break
	}
	for _, sp := range plan {
		if !sp.run.Has("get_events") {
			continue
		}
		if out, ok := g.call(ctx, sp, "get_events", map[string]any{"namespace": call.namespace, "since": since}); ok {
			b.Events, _ = as[[]corev1.Event](out)
		}
		break
	}
	for _, sp := range plan {
		if !sp.run.Has("get_pod_logs") {
			continue
		}
		for i, p := range b.Pods {
			if i >= 3 || ctx.Err() != nil {
				break
			}
			// A crashing webhook's reason is in its previous container's log.
			for _, prev := range []bool{true, false} {
				out, ok := g.call(ctx, sp, "get_pod_logs", map[string]any{"namespace": p.Namespace, "pod": p.Name, "since": since, "until": until, "limit": g.opts.PodLogLimit, "previous": prev})
				if !ok {
					continue
				}
				if lr, _ := as[*evidence.LogResult](out); lr != nil {
					b.Lines = append(b.Lines, lr.Lines...)
				}
			}
		}
		break
	}
	if f, ok := webhookFinding(call, failed, b, g.sc.Window.Start); ok {
		return []Finding{f}
	}
	return nil
}

// backendErrorRE is a log line that says why a process failed.
var backendErrorRE = regexp.MustCompile(`(?i)\b(error|fatal|panic|failed|forbidden)\b`)

// backendDeniedRE is a log line saying the process was refused something.
var backendDeniedRE = regexp.MustCompile(`(?i)\bis forbidden\b|permission denied|access denied|unauthorized|\bcannot (list|get|watch) resource`)

// webhookFinding builds the finding from the failed creations and the
// webhook service's pods, events and log lines.
func webhookFinding(call webhookCall, failed []corev1.Event, b webhookBackend, start time.Time) (Finding, bool) {
	if len(failed) == 0 {
		return Finding{}, false
	}
	e := &failed[0]
	subject := e.InvolvedObject.Name
	if k := e.InvolvedObject.Kind; k == "ReplicaSet" || k == "" {
		subject = trimHash(subject)
	}
	first, _ := eventTime(e)
	for i := range failed {
		if t, _ := eventTime(&failed[i]); !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	if first.IsZero() {
		first = start
	}
	f := Finding{Kind: KindWebhookUnreachable, Subject: subject, Object: strings.ToLower(orWord(e.InvolvedObject.Kind, "replicaset")) + " " + e.InvolvedObject.Name,
		Namespace: e.InvolvedObject.Namespace, Source: SrcKubernetes, Severity: SevCritical, Weight: 0.8, Time: first,
		Related: []string{call.service}}
	f.setFact("webhook", call.webhook)
	f.setFact("service", call.namespace+"/"+call.service)
	f.setFact("backend", call.service)
	f.setFact("error", call.err)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s: FailedCreate (%d events): %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, len(failed), truncate(e.Message, 260)))
	var states []string
	for i := range b.Pods {
		p := &b.Pods[i]
		if podStateUnknown(p) || podReady(p) {
			continue
		}
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		st := fmt.Sprintf("%s/%s not ready (%s, %d restarts)", p.Namespace, p.Name, orWord(string(p.Status.Phase), "unknown phase"), restarts)
		states = append(states, st)
	}
	if len(states) > 0 {
		f.Weight = 0.9
		f.setFact("backend_state", strings.Join(states, "; "))
		f.Evidence = append(f.Evidence, "the webhook's pods: "+strings.Join(states, "; "))
	} else if len(b.Pods) == 0 && len(b.Events) == 0 && len(b.Lines) == 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the webhook's service %s/%s did not answer within the API server's timeout", call.namespace, call.service))
	}
	for i := range b.Events {
		ev := &b.Events[i]
		if ev.Type == corev1.EventTypeWarning && strings.HasPrefix(ev.InvolvedObject.Name, call.service) {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s: %s", ev.Reason, ev.InvolvedObject.Name, truncate(ev.Message, 200)))
			if len(f.Evidence) >= 4 {
				break
			}
		}
	}
	// The backend's log says why it is down: a refusal it met (forbidden,
	// denied) before its last error line, which is often only the exit.
	pick := -1
	for i := len(b.Lines) - 1; i >= 0; i-- {
		l := b.Lines[i].Text
		if matchLine(backendDeniedRE, l) {
			pick = i
			break
		}
		if pick < 0 && matchLine(backendErrorRE, l) {
			pick = i
		}
	}
	if pick >= 0 {
		l := strings.TrimSpace(b.Lines[pick].Text)
		f.setFact("backend_log", l)
		f.Evidence = append(f.Evidence, "log of "+orWord(strings.TrimSuffix(b.Lines[pick].Source, "/"), call.service)+": "+truncate(l, 240))
	}
	f.Summary = fmt.Sprintf("%s cannot create pods: admission webhook %s (service %s/%s) %s", subject, call.webhook, call.namespace, call.service, call.err)
	return f, true
}
