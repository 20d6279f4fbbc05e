package analyst

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A route that answers 404 (or still serves what it served before an
// edit) while its Ingress exists and its pods are fine is a question for
// the controller that serves the Ingress, not for the service: whether it
// admitted the Ingress, and whether it could load the configuration made
// of it. The controller's namespace is another team's, so its events and
// log are not among the service's: they are read here, for the
// controllers of the Ingress's class, and a controller whose reloads fail
// (ingress-nginx's RELOAD "Error reloading NGINX" events and its
// "Unexpected failure reloading the backend" with nginx's [emerg] line,
// HAProxy's and Traefik's own reload errors) is the cause of the
// service's route not being served (reloadrejected.go). The object whose
// change the first failed reload was for (ingress-nginx's "requeuing
// ns/name") names the culprit, often another team's Ingress.

// routeAskRE is a question about a route or an edit to it that does not
// take effect.
var routeAskRE = regexp.MustCompile(`(?i)\b404\b|not found|\broutes?\b|\bpaths?\b|\bingress\b|\bannotations?\b|not (?:been )?(?:applied|picked up|taking effect)|no effect|didn'?t (?:apply|take)|old (?:config|version|route)`)

var (
	// controllerReloadFailRE is a controller's line that a reload failed:
	// the lines reloadrejected.go reads, and HAProxy ingress's "error
	// reloading server".
	controllerReloadFailRE = regexp.MustCompile(reloadFailedLineRE.String() + `|(?i)error reloading|reload(?:ing)? (?:failed|error)`)
	// reloadReasonRE is the server's own reason: nginx's [emerg] line,
	// HAProxy's [ALERT] line.
	reloadReasonRE = regexp.MustCompile(`\[emerg\][^\n]*|\[ALERT\][^\n]*`)
)

// requeueRE is a controller's line that it retries an object's sync
// (ingress-nginx's queue.go "requeuing ns/name, err ...").
var requeueRE = regexp.MustCompile(`(?i)requeuing (?:key )?"?([a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9.-]*)`)

// gatherRouteController reads, when the question is about a route of the
// service and the service has an Ingress, the events and the logs of the
// controllers of its class in their own namespaces, and returns a
// rejected reload found there.
func (g *gatherer) gatherRouteController(ctx context.Context, plan []specialist) []Finding {
	if g.src == nil || g.src.Kubernetes == nil || g.sc.Service == "" {
		return nil
	}
	if !matchLine(routeAskRE, g.sc.Message+" "+g.sc.Hint+" "+g.sc.Alert) {
		return nil
	}
	classes := serviceIngressClasses(g.k8s.Ingresses, g.sc.Service)
	if classes == nil {
		return nil
	}
	since, until := g.window()
	sp, pods, ok := g.podLogStep(ctx, plan)
	if !ok {
		return nil
	}
	in := routeControllerInput{Service: g.sc.Service}
	nss := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		if p.Namespace == g.sc.Namespace || !servesClass(p, classes) || len(in.Pods) >= 3 || ctx.Err() != nil {
			continue
		}
		out, ok := g.call(ctx, sp, "get_pod_logs", map[string]any{"namespace": p.Namespace, "pod": p.Name, "since": since, "until": until, "limit": 4 * g.opts.PodLogLimit})
		if ok {
			if lr, _ := as[*evidence.LogResult](out); lr != nil {
				in.Lines = append(in.Lines, lr.Lines...)
			}
		}
		in.Pods = append(in.Pods, p.Namespace+"/"+p.Name)
		if !nss[p.Namespace] && sp.run.Has("get_events") {
			nss[p.Namespace] = true
			if out, ok := g.call(ctx, sp, "get_events", map[string]any{"namespace": p.Namespace, "since": since}); ok {
				evs, _ := as[[]corev1.Event](out)
				in.Events = append(in.Events, evs...)
			}
		}
	}
	if len(in.Pods) == 0 {
		return nil
	}
	f, ok := detectRouteController(in, g.sc.Window)
	if !ok {
		return nil
	}
	reloadFacts(g.gathered(), &f)
	if !slices.Contains(f.Related, g.sc.Service) {
		f.Related = append(f.Related, g.sc.Service)
	}
	return []Finding{f}
}

// serviceIngressClasses are the classes of the Ingresses that route to
// service (or are named after it): nil when it has none, an empty class
// for an Ingress that names none (the default class).
func serviceIngressClasses(ings []networkingv1.Ingress, service string) []string {
	var classes []string
	for i := range ings {
		ing := &ings[i]
		if !routesTo(ing, service) && ing.Name != service {
			continue
		}
		c := ""
		if ing.Spec.IngressClassName != nil {
			c = *ing.Spec.IngressClassName
		} else if a := ing.Annotations["kubernetes.io/ingress.class"]; a != "" {
			c = a
		}
		if classes == nil {
			classes = []string{}
		}
		if !slices.Contains(classes, c) {
			classes = append(classes, c)
		}
	}
	return classes
}

// routesTo reports whether an Ingress has a backend of service.
func routesTo(ing *networkingv1.Ingress, service string) bool {
	if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil && b.Service.Name == service {
		return true
	}
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if p.Backend.Service != nil && p.Backend.Service.Name == service {
				return true
			}
		}
	}
	return false
}

// servesClass reports whether a pod is an ingress controller that may
// serve one of classes: an ingress or edge proxy whose name, namespace or
// image names the class (ingress-nginx for nginx), or any such proxy for
// an Ingress without a class.
func servesClass(p *corev1.Pod, classes []string) bool {
	if !isEdgeProxy(p) {
		return false
	}
	text := strings.ToLower(p.Namespace + " " + p.Name)
	for _, c := range p.Spec.Containers {
		text += " " + strings.ToLower(c.Image)
	}
	for _, c := range classes {
		if c == "" || strings.Contains(text, strings.ToLower(strings.TrimSuffix(c, "-internal"))) {
			return true
		}
	}
	return false
}

// routeControllerInput is what detectRouteController reads: the
// controllers' pods, their log lines and their namespaces' events.
type routeControllerInput struct {
	Service string
	Pods    []string // ns/name
	Lines   []evidence.LogLine
	Events  []corev1.Event
}

// detectRouteController finds a controller whose reloads fail in the
// window: its failed-reload lines (the first one is the onset, nginx's
// [emerg] line the reason, the object requeued with it the one whose
// change was being loaded) and its RELOAD events.
func detectRouteController(in routeControllerInput, w Window) (Finding, bool) {
	var first, last time.Time
	var emerg, culprit string
	failures := 0
	for i, l := range in.Lines {
		if !l.Time.IsZero() && l.Time.Before(w.BaselineStart) {
			continue
		}
		if m := findString(reloadReasonRE, l.Text); m != "" {
			if emerg == "" {
				emerg = strings.TrimSpace(m)
			}
			continue // the lines of one failure's message
		}
		if !matchLine(controllerReloadFailRE, l.Text) || strings.Contains(l.Text, "test failed") {
			continue
		}
		failures++
		if !l.Time.IsZero() && (first.IsZero() || l.Time.Before(first)) {
			first = l.Time
			// The object requeued with the first failure.
			for _, n := range in.Lines[i+1 : min(len(in.Lines), i+16)] {
				if m := findSubmatch(requeueRE, n.Text); m != nil {
					culprit = m[1]
					break
				}
			}
		}
		if l.Time.After(last) {
			last = l.Time
		}
	}
	var events []corev1.Event
	for _, e := range in.Events {
		if m, _ := classifyEvent(&e); m == reloadRejected {
			events = append(events, e)
		}
	}
	if failures == 0 && len(events) == 0 {
		return Finding{}, false
	}
	who := workloadOfName(podName(in.Pods[0]))
	f := Finding{Kind: KindReloadRejected, Subject: who, Object: "pod " + in.Pods[0], Namespace: podNamespace(in.Pods[0]), Source: SrcLogs,
		Severity: SevCritical, Weight: 0.9, Time: first}
	if failures > 0 {
		f.setFact("failure", fmt.Sprintf("its log reports failed reloads from %s to %s", hm(first), hm(last)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs %s of failed reloads from %s to %s", who, plural(failures, "line", "lines"), ts(first), ts(last)))
	}
	if emerg != "" {
		f.setFact("line", emerg)
		f.Evidence = append(f.Evidence, "log: "+quote(emerg, 240))
		f.Weight = 0.95
	}
	if len(events) > 0 {
		e := events[len(events)-1]
		if at, _ := eventTime(&e); f.Time.IsZero() && !at.IsZero() {
			f.Time = at
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d %s %s events in %s: %q", len(events), e.Type, e.Reason, e.Namespace, strings.TrimSpace(e.Message)))
		if f.fact("failure") == "" {
			f.setFact("failure", strings.TrimSpace(e.Message))
		}
		f.Source = orWord(f.Source, SrcEvents)
	}
	if f.Time.IsZero() {
		f.Time = w.Start
	}
	if culprit != "" {
		f.setFact("reloading", culprit)
		_, name, _ := strings.Cut(culprit, "/")
		f.setFact("key", name)
		f.Evidence = append(f.Evidence, fmt.Sprintf("the first failed reload was for %s", culprit))
	}
	if emerg != "" {
		f.setFact("why", "the controller's configuration fails its test, so it keeps serving the one from before: "+emerg)
	}
	f.Summary = fmt.Sprintf("%s rejects its configuration reloads since %s; the route of %s is not loaded", who, hm(f.Time), in.Service)
	return f, true
}

// podName and podNamespace split "ns/name".
func podName(ref string) string {
	_, n, _ := strings.Cut(ref, "/")
	return n
}

func podNamespace(ref string) string {
	ns, _, _ := strings.Cut(ref, "/")
	return ns
}
