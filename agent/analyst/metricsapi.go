package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The aggregated metrics API down. HorizontalPodAutoscalers and kubectl
// top read pods' CPU and memory from metrics.k8s.io (custom and external
// metrics from custom.metrics.k8s.io and external.metrics.k8s.io), an
// APIService the API server proxies to a server in the cluster:
// metrics-server, prometheus-adapter, KEDA's metrics apiserver. When that
// server cannot serve (its scrapes of the kubelets fail, it is not ready,
// its Service has no endpoints) every autoscaler shows <unknown>, stops
// scaling (FailedGetResourceMetric: "unable to fetch metrics from
// resource metrics API: the server is currently unable to handle the
// request"), and kubectl top answers "Metrics API not available". The
// autoscalers are the consequence; the metrics server's own log says why:
//
//	E1109 14:10:51.433107 1 scraper.go:149] "Failed to scrape node" err="Get \"https://10.20.4.17:10250/metrics/resource\": tls: failed to verify certificate: x509: cannot validate certificate for 10.20.4.17 because it doesn't contain any IP SANs"
//	E0412 09:01:13.000101 1 scraper.go:140] "Failed to scrape node" err="... x509: certificate signed by unknown authority" node="ip-10-0-1-7"
//	E0412 09:01:13.000101 1 scraper.go:140] "Failed to scrape node" err="... dial tcp 10.0.1.7:10250: i/o timeout"
//	E0412 09:01:13.000101 1 provider.go:...] unable to fetch pod metrics ... Forbidden
//
// kubelets serve self-signed certificates without IP SANs unless their
// serving certificates are issued by the cluster CA
// (serverTLSBootstrap): a metrics server that verifies them
// (--kubelet-insecure-tls dropped, by a chart upgrade that regenerated
// its values) fails every scrape. Other reasons: the kubelet port closed
// by a security group or NetworkPolicy, RBAC, the server's pod not
// scheduled.

// KindMetricsAPI is the aggregated metrics API unavailable because the
// server behind it fails.
const KindMetricsAPI Kind = "metrics_api"

var (
	// metricsAPIDownRE is a client's word that the metrics API does not
	// answer: the HPA controller's, kubectl top's, the API server's (not
	// "no metrics returned", which new pods without samples get).
	metricsAPIDownRE = regexp.MustCompile(`(?i)unable to fetch metrics from (?:resource|custom|external) metrics API|Metrics API not available|the server is currently unable to handle the request \(get (?:pods|nodes)\.metrics\.k8s\.io|v1beta\d\.(?:custom\.|external\.)?metrics\.k8s\.io failed with`)
	// apiServiceRowRE is a row of kubectl get apiservice for a metrics
	// API that is not available: NAME SERVICE AVAILABLE AGE.
	apiServiceRowRE = regexp.MustCompile(`^\s*(v1beta\d+\.(?:custom\.|external\.)?metrics\.k8s\.io)\s+([\w-]+)/([\w.-]+)\s+(False(?:\s*\([\w ]+\))?)`)
	// scrapeFailRE is a metrics server's failed scrape of a kubelet or a
	// failed fetch, with its error.
	scrapeFailRE   = regexp.MustCompile(`(?i)failed to scrape node|unable to fully scrape metrics|unable to fetch (?:node|pod) metrics|Failed probe.*no metrics to serve|unable to fetch metrics from (?:node|kubelet)`)
	x509NoIPSANRE  = regexp.MustCompile(`(?i)x509: cannot validate certificate for ([\d.]+) because it doesn't contain any IP SANs`)
	x509UnknownCA  = regexp.MustCompile(`(?i)x509: certificate signed by unknown authority`)
	x509ExpiredRE  = regexp.MustCompile(`(?i)x509: certificate has expired`)
	scrapeNetRE    = regexp.MustCompile(`(?i):10250/[^"]*"?: (?:dial tcp [\d.:]+: )?(?:i/o timeout|connect: connection refused|connect: no route to host|context deadline exceeded)`)
	scrapeDeniedRE = regexp.MustCompile(`(?i)\b(?:Forbidden|Unauthorized)\b`)
	// metricsServerNameRE names a metrics API backend.
	metricsServerNameRE = regexp.MustCompile(`(?i)\b(metrics-server|prometheus-adapter|keda-operator-metrics-apiserver|kube-metrics-adapter|datadog-cluster-agent)\b`)
	// helmRevisionValuesRE is helm get values NAME --revision N.
	helmRevisionValuesRE = regexp.MustCompile(`\bhelm get values ([\w.-]+)\b.*--revision[= ](\d+)`)
	// flagLineRE is a flag in a values file's args list.
	flagLineRE = regexp.MustCompile(`^\s*-\s+(--[\w-]+)(?:=\S*)?\s*$`)
)

var metricsAPI = &mechanism{
	kind:   KindMetricsAPI,
	class:  classCause,
	label:  "metrics API unavailable (its metrics server fails)",
	detect: detectMetricsAPI,
	// The autoscalers left blind, and the metrics server's own failures
	// (its TLS errors, its readiness), are what it produces.
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindHPABlind:
			return true
		case KindTLS, KindLogErrors, KindProbeFailure, KindTimeout, KindConnRefused:
			return strings.EqualFold(f.Subject, h.Subject) || strings.EqualFold(f.fact("caller"), h.Subject)
		}
		return false
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return c.Subject == h.Subject || strings.Contains(t, strings.ToLower(h.Subject)) || strings.Contains(t, "kubelet") || strings.Contains(t, "apiservice")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the metrics API (%s) is unavailable: %s, the server behind it, cannot serve metrics", orWord(h.fact("apiservice"), "metrics.k8s.io"), h.Subject)
		d += h.clause(": ", "reason") + h.lineClause(240) + h.clause("; the APIService reads ", "apiservice_state") + h.clause("; ", "flag_dropped")
		if c := h.Trigger; c != nil {
			d += fmt.Sprintf("; it began with the change at %s: %s", hm(c.Time), truncate(c.fact("description"), 180))
		}
		if who := h.fact("blind"); who != "" {
			d += fmt.Sprintf(". So every client of the API is blind: the autoscalers of %s show <unknown> and cannot scale (FailedGetResourceMetric), and kubectl top fails", who)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		switch h.fact("cause") {
		case "ip_sans", "unknown_ca":
			if f := h.fact("flag"); f != "" {
				r.high("Restore %s on %s (the values the upgrade dropped), or better issue the kubelets' serving certificates from the cluster CA (serverTLSBootstrap: true, approve the kubelet-serving CSRs) so %s can verify them", f, h.Subject, h.Subject)
			} else {
				r.high("Make %s able to verify the kubelets' serving certificates: issue them from the cluster CA (serverTLSBootstrap: true and approve the kubelet-serving CSRs), or run it with --kubelet-insecure-tls", h.Subject)
			}
		case "network":
			r.high("Open the kubelet port (10250) from %s's pods to the nodes (security group, NetworkPolicy), then check kubectl top nodes", h.Subject)
		case "denied":
			r.high("Restore %s's RBAC (its ClusterRole on nodes/metrics and pods) and its ServiceAccount token", h.Subject)
		default:
			r.high("Make %s ready again (its log says why it cannot serve) or roll back its last change", h.Subject)
		}
		r.rollback()
		r.med("Check kubectl get apiservice %s reads Available=True and kubectl top pods answers; the autoscalers resume on their own", orWord(h.fact("apiservice"), "v1beta1.metrics.k8s.io"))
		r.low("Alert on the APIService's availability (aggregator_unavailable_apiservice) and on HPAs whose ScalingActive condition is False")
	},
}

// detectMetricsAPI finds the metrics API reported down by its clients and
// follows it to the server behind it: its APIService, its pods, its log.
func detectMetricsAPI(ev *Gathered, found []Finding) []Finding {
	var signs []string
	var blind []string
	var onset time.Time
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		// An autoscaler missing metrics for minutes (new pods, a metrics
		// server restarting) is routine: only a lasting failure counts.
		first, last := eventTime(e)
		if !matchLine(metricsAPIDownRE, e.Message) || e.Count < 10 || last.Sub(first) < 15*time.Minute {
			continue
		}
		if ev.Window.recent(first) || e.Count > 1 {
			onset = earliest(onset, first)
		}
		if e.InvolvedObject.Kind == "HorizontalPodAutoscaler" || e.InvolvedObject.Kind == "" {
			blind = appendNew(blind, e.InvolvedObject.Name)
		}
		if len(signs) == 0 {
			signs = append(signs, fmt.Sprintf("event %s on %s %s/%s: %s", e.Reason, strings.ToLower(orWord(e.InvolvedObject.Kind, "object")), e.InvolvedObject.Namespace, e.InvolvedObject.Name, quote(e.Message, 200)))
		}
	}
	apiservice, backend, state := "", "", ""
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(apiServiceRowRE, l); m != nil && apiservice == "" {
				apiservice, backend, state = m[1], m[3], strings.Join(strings.Fields(m[4]), " ")
				signs = append(signs, fmt.Sprintf("APIService %s (service %s/%s): Available %s", m[1], m[2], m[3], state))
				continue
			}
			if matchLine(metricsAPIDownRE, l) && !strings.Contains(c.Command, "describe") && len(signs) < 4 {
				signs = append(signs, fmt.Sprintf("%s: %s", truncate(orWord(c.Run, c.Command), 60), quote(strings.TrimSpace(l), 160)))
			}
		}
	}
	if len(signs) == 0 {
		return nil
	}
	// The server behind the API: the APIService's, else the one whose
	// log or pods were read.
	var logSet *LogSet
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if backend != "" && strings.EqualFold(set.Subject, backend) || backend == "" && matchLine(metricsServerNameRE, set.Subject) {
			logSet = set
			backend = set.Subject
			break
		}
	}
	if backend == "" {
		return nil
	}
	f := Finding{Kind: KindMetricsAPI, Subject: backend, Source: SrcKubernetes, Severity: SevCritical, Weight: 0.85, Time: onset, Related: blind}
	f.Object = "apiservice " + orWord(apiservice, "v1beta1.metrics.k8s.io")
	f.setFact("apiservice", apiservice)
	f.setFact("apiservice_state", state)
	f.setFact("blind", strings.Join(blind, ", "))
	f.setFact("affected", strings.Join(append([]string{backend}, blind...), ", "))
	f.Evidence = append(f.Evidence, signs...)

	// Its pods not ready.
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if !strings.EqualFold(WorkloadOfPod(p), backend) || podStateUnknown(p) || podHealthy(p) {
			continue
		}
		f.Namespace = p.Namespace
		f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s of %s is not ready", p.Namespace, p.Name, backend))
		if p.Status.StartTime != nil && ev.Window.recent(p.Status.StartTime.Time) {
			f.Time = earliest(f.Time, p.Status.StartTime.Time)
		}
		break
	}
	// Its own log: why it cannot serve.
	if logSet != nil {
		f.Namespace = orWord(f.Namespace, logSet.Namespace)
		line, cause, reason := scrapeReason(logSet)
		if line != "" {
			f.setFact("line", line)
			f.setFact("cause", cause)
			f.setFact("reason", reason)
			f.setFact("why", reason)
			f.Weight = 0.95
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs: %s", backend, quote(ReadableLine(line), 240)))
		}
	}
	// What changed in its release: a flag the newer revision's values
	// no longer set.
	if fl, d := droppedFlag(ev.Commands, backend); d != "" {
		f.setFact("flag", fl)
		f.setFact("flag_dropped", d)
		f.Evidence = append(f.Evidence, d)
	}
	if f.fact("why") == "" {
		f.setFact("state_only", "true")
	}
	if f.Time.IsZero() {
		f.Time = ev.Window.Start
	}
	f.Summary = fmt.Sprintf("metrics API %s unavailable: %s cannot serve", orWord(apiservice, "metrics.k8s.io"), backend)
	return []Finding{f}
}

// scrapeReason reads a metrics server's log for why it cannot serve: the
// line, a cause key and the reason in words.
func scrapeReason(set *LogSet) (line, cause, reason string) {
	for _, t := range set.Templates {
		for _, l := range t.Lines() {
			if !matchLine(scrapeFailRE, l) {
				continue
			}
			switch {
			case matchLine(x509NoIPSANRE, l):
				return l, "ip_sans", "every scrape of the kubelets fails TLS verification (x509: the kubelets' serving certificates are self-signed and carry no IP SANs for the addresses it scrapes)"
			case matchLine(x509UnknownCA, l):
				return l, "unknown_ca", "every scrape of the kubelets fails TLS verification (x509: their serving certificates are signed by an authority it does not trust)"
			case matchLine(x509ExpiredRE, l):
				return l, "expired", "every scrape of the kubelets fails TLS verification (x509: their serving certificates have expired)"
			case matchLine(scrapeNetRE, l):
				return l, "network", "its scrapes of the kubelets (port 10250) get no connection"
			case matchLine(scrapeDeniedRE, l):
				return l, "denied", "its scrapes are refused (Forbidden/Unauthorized: its RBAC or credentials)"
			}
			if line == "" && !strings.Contains(l, "no metrics to serve") {
				line = l
			}
		}
	}
	if line != "" {
		return line, "scrape", "its scrapes of the kubelets fail"
	}
	return "", "", ""
}

// droppedFlag compares the values of two revisions of the server's Helm
// release (helm get values --revision N) and names a flag the older set
// and the newer does not.
func droppedFlag(cmds []evidence.CommandOutput, backend string) (flag, desc string) {
	type rev struct {
		n     string
		flags []string
	}
	var revs []rev
	for _, c := range cmds {
		m := findSubmatch(helmRevisionValuesRE, c.Command)
		if m == nil || !strings.EqualFold(m[1], backend) && !strings.Contains(strings.ToLower(m[1]), strings.ToLower(backend)) {
			continue
		}
		r := rev{n: m[2]}
		for _, l := range c.Lines {
			if fm := findSubmatch(flagLineRE, l); fm != nil {
				r.flags = append(r.flags, fm[1])
			}
		}
		revs = append(revs, r)
	}
	if len(revs) < 2 {
		return "", ""
	}
	slices.SortFunc(revs, func(a, b rev) int { return len(a.n)*1000 - len(b.n)*1000 + strings.Compare(a.n, b.n) })
	older, newer := revs[len(revs)-2], revs[len(revs)-1]
	for _, fl := range older.flags {
		if !slices.Contains(newer.flags, fl) {
			return fl, fmt.Sprintf("the values of %s's Helm revision %s no longer set %s (revision %s did)", backend, newer.n, fl, older.n)
		}
	}
	return "", ""
}
