package analyst

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A pod that exits the moment it receives SIGTERM (no preStop hook, no
// graceful drain in the process) drops the requests an ingress proxy still
// sends it: the endpoints controller and the proxies learn of the
// termination seconds after the kubelet signals the container. Every
// scale-in of the autoscaler (or rollout) then gives a short burst of 5xx
// at the edge, 503 with Envoy's response flags UF/UC (upstream connection
// failure, upstream connection closed) or ingress-nginx's "connect()
// failed ... upstream", which resolves on its own within a minute: an
// alert that flaps. The service's own log shows nothing wrong (its
// terminated pods' logs are gone); the proxy's log, in its own namespace,
// holds the 503s, and the cluster's events hold the scale-ins.

// KindNoGracefulShutdown is a service whose pods exit at once on SIGTERM
// while the proxies in front still route to them.
const KindNoGracefulShutdown Kind = "no_graceful_shutdown"

var noGracefulShutdown = &mechanism{
	kind:  KindNoGracefulShutdown,
	class: classCause,
	label: "pods exit at once on SIGTERM while still routed to (no graceful shutdown)",
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s's pods stop serving the moment they are terminated: %s", h.Subject, orWord(h.fact("shutdown"), "the pod spec has no preStop hook and the process does not drain on SIGTERM"))
		d += fmt.Sprintf(". When %s scales in (%s), the ingress proxy %s still routes requests to the terminating pods for a few seconds and answers %s",
			h.Subject, orWord(h.fact("scale_in"), "its pods are killed"), orWord(h.fact("proxy"), "in front of it"), orWord(h.fact("errors"), "503"))
		d += "; the burst stops by itself once the endpoints are updated, so the 5xx alert fires and resolves at every scale-in"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Give %s a preStop hook that waits for the proxies to drop the endpoint (e.g. sleep 10-15 s) and keep terminationGracePeriodSeconds above it", h.Subject)
		r.high("Make %s drain on SIGTERM: stop accepting, finish in-flight requests (http.Server.Shutdown or the framework's graceful stop) instead of exiting at once", h.Subject)
		r.med("Let the ingress proxy retry connection failures on idempotent requests (Envoy retry_on connect-failure/reset, ingress-nginx proxy_next_upstream)")
		r.low("Lengthen the autoscaler's scale-down stabilization window so %s scales in less often", h.Subject)
	},
}

var (
	// edgeProxyRE names an ingress or edge proxy by its pod, container or
	// image: Envoy (Contour, Emissary, Istio's gateways), ingress-nginx,
	// Traefik, HAProxy.
	edgeProxyRE = regexp.MustCompile(`(?i)envoy|contour|ingress|traefik|haproxy|gateway|emissary`)
	// accessStatusRE reads an access log line's request and status: the
	// quoted request line, then the status (Envoy, nginx, Traefik and
	// HAProxy's HTTP format all write it so), then Envoy's response flags.
	accessStatusRE = regexp.MustCompile(`"([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3}) (\S+)?`)
	// asks5xxRE is a question or alert about server errors.
	asks5xxRE = regexp.MustCompile(`(?i)\b5xx\b|\b50[234]\b|5\d\d|server errors?|error rate|errors?\b`)
	// sigtermExitRE is a process that exits on the signal at once.
	sigtermExitRE = regexp.MustCompile(`(?i)(received|got|caught)\s+(signal|sigterm)[^"]{0,40}\b(exit|exiting|shutting down (now|immediately))|sigterm.{0,40}(exiting|exit(ing)? immediately|shutting down immediately)|shutting down immediately|no graceful`)
	// gracefulRE is a process that drains.
	gracefulRE = regexp.MustCompile(`(?i)graceful(ly)? (shutdown|stop|drain)|draining|waiting for (in-flight|active) (requests|connections)`)
)

// edgeFlagText explains Envoy's response flags.
var edgeFlagText = map[string]string{
	"UF":  "upstream connection failure",
	"UC":  "upstream connection terminated",
	"URX": "retries exhausted",
	"UH":  "no healthy upstream",
	"LR":  "connection reset",
}

// gatherEdgeShutdown reads, when the question or a firing alert is about
// the service's 5xx, the logs of the ingress proxies of other namespaces
// and looks for their 5xx bursts at the service's scale-ins.
func (g *gatherer) gatherEdgeShutdown(ctx context.Context, plan []specialist) []Finding {
	if g.src == nil || g.src.Kubernetes == nil {
		return nil
	}
	subject := g.sc.Service
	var alerts []evidence.Alert
	if g.src.Alerts != nil {
		alerts, _ = g.src.Alerts.List(ctx, g.sc.Window.BaselineStart, g.sc.Window.End)
	}
	asked := matchLine(asks5xxRE, g.sc.Message) || matchLine(asks5xxRE, g.sc.Alert)
	for _, a := range alerts {
		text := a.Name + " " + a.Annotations["summary"] + " " + a.Annotations["description"]
		if a.Status == "firing" && matchLine(asks5xxRE, text) && (subject == "" || strings.Contains(strings.ToLower(text), strings.ToLower(subject)) || a.Labels["service"] == subject) {
			asked = true
			if subject == "" {
				subject = orWord(a.Labels["service"], a.Labels["app"])
			}
		}
	}
	if !asked || subject == "" {
		return nil
	}
	since, until := g.window()
	var lines []evidence.LogLine
	var proxies []string
	sp, pods, ok := g.podLogStep(ctx, plan)
	if !ok {
		return nil
	}
	// Pods whose logs were handed over without their objects (a
	// proxy's log copied from its namespace).
	if r, ok := g.src.Kubernetes.(evidence.LoggedPodLister); ok {
		refs, _ := r.LoggedPods(ctx, "")
		for _, ref := range refs {
			if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Namespace == ref.Namespace && p.Name == ref.Name }) {
				pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}})
			}
		}
	}
	for i := range pods {
		p := &pods[i]
		if p.Namespace == g.sc.Namespace || !isEdgeProxy(p) || len(proxies) >= 3 || ctx.Err() != nil {
			continue
		}
		out, ok := g.call(ctx, sp, "get_pod_logs", map[string]any{"namespace": p.Namespace, "pod": p.Name, "since": since, "until": until, "limit": 20 * g.opts.PodLogLimit})
		if !ok {
			continue
		}
		if lr, _ := as[*evidence.LogResult](out); lr != nil && len(lr.Lines) > 0 {
			proxies = append(proxies, p.Namespace+"/"+p.Name)
			lines = append(lines, lr.Lines...)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return detectEdgeShutdown(edgeInput{Subject: subject, Namespace: g.sc.Namespace, Proxies: proxies, Lines: lines, K8s: &g.k8s, Logs: g.logSets, Alerts: alerts})
}

// isEdgeProxy reports whether a pod is an ingress or edge proxy.
func isEdgeProxy(p *corev1.Pod) bool {
	if matchLine(edgeProxyRE, p.Name) || matchLine(edgeProxyRE, p.Namespace) {
		return true
	}
	for _, c := range p.Spec.Containers {
		if matchLine(edgeProxyRE, c.Name) || matchLine(edgeProxyRE, c.Image) {
			return true
		}
	}
	return false
}

// edgeInput is what detectEdgeShutdown reads.
type edgeInput struct {
	Subject, Namespace string
	Proxies            []string
	Lines              []evidence.LogLine // the proxies' lines
	K8s                *K8sEvidence
	Logs               []LogSet
	Alerts             []evidence.Alert
}

// edgeError is one 5xx the proxy answered for the service.
type edgeError struct {
	t     time.Time
	code  string
	flags string
	text  string
}

// detectEdgeShutdown finds bursts of the proxies' 5xx for the subject's
// routes that fall on the subject's scale-ins, with pods that stop at
// once.
func detectEdgeShutdown(in edgeInput) []Finding {
	paths := servicePaths(in.Subject, in.Logs)
	var errs []edgeError
	for _, l := range in.Lines {
		m := findSubmatch(accessStatusRE, l.Text)
		if m == nil || l.Time.IsZero() || m[3][0] != '5' {
			continue
		}
		if !strings.Contains(l.Text, in.Subject) && !paths[edgeRoute(m[2])] {
			continue
		}
		errs = append(errs, edgeError{t: l.Time, code: m[3], flags: m[4], text: l.Text})
	}
	if len(errs) < 3 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].t.Before(errs[j].t) })
	scaleIns := scaleInsOf(in.Subject, in.K8s.Events)
	if len(scaleIns) == 0 {
		return nil
	}
	// The bursts: 5xx within two minutes of each other.
	type burst struct {
		from, to time.Time
		errs     []edgeError
	}
	var bursts []burst
	for _, e := range errs {
		if n := len(bursts); n > 0 && e.t.Sub(bursts[n-1].to) <= 2*time.Minute {
			bursts[n-1].to = e.t
			bursts[n-1].errs = append(bursts[n-1].errs, e)
			continue
		}
		bursts = append(bursts, burst{from: e.t, to: e.t, errs: []edgeError{e}})
	}
	// Event times from kubectl's ages are rounded to the minute: a burst
	// meets a scale-in within two minutes of it.
	var matched []burst
	var at []scaleIn
	matchedErrs := 0
	for _, b := range bursts {
		for _, s := range scaleIns {
			if s.t.After(b.from.Add(-2*time.Minute)) && s.t.Before(b.to.Add(2*time.Minute)) {
				matched = append(matched, b)
				at = append(at, s)
				matchedErrs += len(b.errs)
				break
			}
		}
	}
	// Most of the service's 5xx fall on its scale-ins.
	if len(matched) == 0 || matchedErrs < 3 || float64(matchedErrs) < 0.6*float64(len(errs)) {
		return nil
	}
	b, s := matched[0], at[0]
	weight := 0.5
	var shutdown []string
	preStop, known := hasPreStop(in.Subject, in.Namespace, in.K8s.Deployments)
	switch {
	case known && preStop:
		return nil // the pods wait before stopping: not this
	case known:
		weight += 0.15
		shutdown = append(shutdown, "the pod spec has no preStop hook")
	}
	if l := shutdownLine(in.Subject, in.Namespace, in.K8s, in.Logs); l != "" {
		if matchLine(gracefulRE, l) && !matchLine(sigtermExitRE, l) {
			return nil
		}
		weight += 0.15
		shutdown = append(shutdown, "the process exits on SIGTERM at once ("+quote(l, 160)+")")
	}
	codes := map[string]int{}
	for _, e := range b.errs {
		codes[strings.TrimSpace(e.code+" "+e.flags)]++
	}
	var codeText []string
	for c, n := range codes {
		codeText = append(codeText, fmt.Sprintf("%d × %s%s", n, c, flagMeaning(c)))
	}
	sort.Strings(codeText)
	proxy := strings.Join(in.Proxies, ", ")
	errText := fmt.Sprintf("%s between %s and %s UTC (%s)", plural(len(b.errs), "5xx", "5xx"), b.from.UTC().Format("15:04:05"), b.to.UTC().Format("15:04:05"), strings.Join(codeText, ", "))
	f := Finding{Kind: KindNoGracefulShutdown, Subject: in.Subject, Object: "deployment " + in.Namespace + "/" + in.Subject, Namespace: in.Namespace,
		Source: SrcLogs, Severity: SevCritical, Weight: weight, Time: b.from,
		Summary: fmt.Sprintf("ingress proxy %s answers %s for %s while its pods terminate", proxy, errText, in.Subject)}
	f.setFact("proxy", proxy)
	f.setFact("errors", errText)
	f.setFact("scale_in", s.text)
	f.setFact("shutdown", strings.Join(shutdown, ", and "))
	f.Evidence = []string{
		fmt.Sprintf("proxy %s: %s for %s; e.g. %s", proxy, errText, in.Subject, quote(b.errs[0].text, 240)),
		fmt.Sprintf("%s at %s UTC: %s", in.Subject, s.t.UTC().Format("15:04"), s.text),
	}
	if len(matched) > 1 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d of %d bursts of 5xx fall on a scale-in of %s", len(matched), len(bursts), in.Subject))
	}
	for _, sh := range shutdown {
		f.Evidence = append(f.Evidence, in.Subject+": "+sh)
	}
	for _, a := range in.Alerts {
		if a.Labels["service"] == in.Subject || strings.Contains(a.Name+a.Annotations["summary"], in.Subject) {
			f.Evidence = append(f.Evidence, fmt.Sprintf("alert %s %s since %s UTC: %s", a.Name, a.Status, a.StartsAt.UTC().Format("15:04"), quote(orWord(a.Annotations["description"], a.Annotations["summary"]), 200)))
			break
		}
	}
	// The scale-in itself, for the timeline.
	sf := Finding{Kind: KindNoGracefulShutdown, Subject: in.Subject, Object: f.Object, Namespace: in.Namespace, Source: SrcKubernetes,
		Severity: SevWarning, Weight: weight * 0.8, Time: s.t, Facts: f.Facts,
		Summary: fmt.Sprintf("%s scales in: %s", in.Subject, s.text), Evidence: []string{fmt.Sprintf("%s at %s UTC: %s", in.Subject, s.t.UTC().Format("15:04"), s.text)}}
	return []Finding{f, sf}
}

// flagMeaning explains a "503 UF,URX" code's flags.
func flagMeaning(c string) string {
	_, flags, ok := strings.Cut(c, " ")
	if !ok {
		return ""
	}
	var out []string
	for _, fl := range strings.Split(flags, ",") {
		if t := edgeFlagText[fl]; t != "" {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, ", ")
}

// edgeRoute is a request path's first two segments, without its query.
func edgeRoute(p string) string {
	p, _, _ = strings.Cut(p, "?")
	segs := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if len(segs) > 2 {
		segs = segs[:2]
	}
	return "/" + strings.Join(segs, "/")
}

// svcPathRE reads a request path from a service's own log line.
var svcPathRE = regexp.MustCompile(`(?:"?\b(?:path|uri|url|route)"?\s*[:=]\s*"?|\b(?:GET|POST|PUT|DELETE|PATCH) )(/[\w./-]*)`)

// servicePaths are the routes the subject's own log shows it serving.
func servicePaths(subject string, logs []LogSet) map[string]bool {
	out := map[string]bool{}
	for _, set := range logs {
		if !strings.EqualFold(set.Subject, subject) {
			continue
		}
		for _, t := range set.Templates {
			for _, m := range findAllSubmatch(svcPathRE, t.Example, -1) {
				if r := edgeRoute(m[1]); r != "/" {
					out[r] = true
				}
			}
		}
	}
	return out
}

// scaleIn is one time the subject's pods were taken away.
type scaleIn struct {
	t    time.Time
	text string
}

var (
	hpaScaleInRE       = regexp.MustCompile(`(?i)New size: (\d+); reason: All metrics below target`)
	deployScaledDownRE = regexp.MustCompile(`(?i)Scaled down replica set (\S+) to (\d+)(?: from (\d+))?`)
	killingPodsRE      = regexp.MustCompile(`(?i)Stopping container`)
)

// scaleInsOf lists the subject's scale-ins: the autoscaler's "All
// metrics below target", its Deployment's scale-downs, its pods killed.
func scaleInsOf(subject string, events []corev1.Event) []scaleIn {
	var out []scaleIn
	killed := map[int64][]string{}
	for i := range events {
		e := &events[i]
		io := e.InvolvedObject
		_, t := eventTime(e)
		if t.IsZero() {
			continue
		}
		switch {
		case io.Kind == "HorizontalPodAutoscaler" && io.Name == subject && matchLine(hpaScaleInRE, e.Message):
			out = append(out, scaleIn{t, "HorizontalPodAutoscaler " + io.Name + " " + e.Message})
		case io.Kind == "Deployment" && io.Name == subject && matchLine(deployScaledDownRE, e.Message):
			out = append(out, scaleIn{t, e.Message})
		case io.Kind == "Pod" && e.Reason == "Killing" && matchLine(killingPodsRE, e.Message) && workloadOfName(io.Name) == subject:
			k := t.Truncate(time.Minute).Unix()
			killed[k] = append(killed[k], io.Name)
		}
	}
	for k, pods := range killed {
		t := time.Unix(k, 0).UTC()
		text := fmt.Sprintf("%s killed (Stopping container)", plural(len(pods), "pod", "pods"))
		if len(pods) <= 4 {
			text = fmt.Sprintf("pods %s killed (Stopping container)", strings.Join(pods, ", "))
		}
		out = append(out, scaleIn{t, text})
	}
	// At one time, the autoscaler's reason says most.
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].t.Equal(out[j].t) {
			return out[i].t.Before(out[j].t)
		}
		return strings.HasPrefix(out[i].text, "HorizontalPodAutoscaler") && !strings.HasPrefix(out[j].text, "HorizontalPodAutoscaler")
	})
	return out
}

// hasPreStop reports whether the subject's Deployment's main container has
// a preStop hook, and whether the spec is known.
func hasPreStop(subject, ns string, deps []appsv1.Deployment) (preStop, known bool) {
	for _, d := range deps {
		if d.Name != subject || ns != "" && d.Namespace != "" && d.Namespace != ns || len(d.Spec.Template.Spec.Containers) == 0 {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

// shutdownLine is a line of the subject's logs about how it stops: on
// SIGTERM, exiting or draining.
func shutdownLine(subject, ns string, k *K8sEvidence, logs []LogSet) string {
	for _, key := range slices.Sorted(maps.Keys(k.PreviousLogs)) {
		parts := strings.Split(key, "/")
		if len(parts) < 2 || workloadOfName(parts[1]) != subject {
			continue
		}
		for _, l := range k.PreviousLogs[key] {
			if matchLine(sigtermExitRE, l.Text) || matchLine(gracefulRE, l.Text) {
				return l.Text
			}
		}
	}
	for _, set := range logs {
		if !strings.EqualFold(set.Subject, subject) {
			continue
		}
		for _, t := range set.Templates {
			if matchLine(sigtermExitRE, t.Example) || matchLine(gracefulRE, t.Example) {
				return t.Example
			}
		}
	}
	return ""
}
