package analyst

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindMeshMTLS is a caller outside the service mesh whose plaintext
// connections a mesh that requires mutual TLS closes.
const KindMeshMTLS Kind = "mesh_mtls"

// Mutual TLS required by the mesh, plaintext from a caller without a
// sidecar: when a namespace's PeerAuthentication is STRICT, its sidecars
// accept only mTLS. A caller whose pods have no Istio sidecar (its
// namespace not labelled for injection, or injection turned off) sends
// plaintext; the callee's sidecar finds no filter chain for it (Envoy's
// access log: response flag NR, "filter_chain_not_found") and closes the
// connection, which the caller sees as "connection reset by peer" while
// every caller in the mesh is fine. The chain is read by a hop from the
// caller's resets to the host it calls (gatherMeshPolicy): the policy of
// the host's namespace (a PeerAuthentication listing, or the change that
// set it), the caller's namespace labels and pods, and the callee's
// sidecar log.
var meshMTLS = &mechanism{
	kind:       KindMeshMTLS,
	class:      classCause,
	label:      "mutual TLS required, plaintext caller without a sidecar",
	fitsChange: changeSays(meshChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		callee := orWord(h.fact("callee"), "the service it calls")
		d := fmt.Sprintf("the connections of %s to %s are closed by the service mesh: ", h.Subject, callee)
		if p := h.fact("policy"); p != "" {
			d += fmt.Sprintf("%s requires mutual TLS (%s)", orWord(h.fact("callee_namespace"), "the callee's namespace"), p)
		} else {
			d += fmt.Sprintf("%s's sidecar accepts only mutual TLS", callee)
		}
		if ns := h.fact("no_sidecar"); ns != "" {
			d += fmt.Sprintf(" and %s runs without an Istio sidecar (%s), so it sends plaintext", h.Subject, ns)
		} else {
			d += fmt.Sprintf(" and %s sends plaintext", h.Subject)
		}
		if nr := h.fact("refused"); nr != "" {
			d += fmt.Sprintf("; %s's sidecar finds no filter chain for it and closes the connection (%s)", callee, nr)
		}
		d += ", which the client sees as connection reset by peer"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		ns := orWord(h.fact("caller_namespace"), sc.Namespace)
		r.high("Put %s in the mesh: label namespace %s istio-injection=enabled and restart its pods so they get a sidecar; or, until every caller has one, set %s to PERMISSIVE", h.Subject, orWord(ns, "of the caller"), orWord(h.fact("policy_name"), "the PeerAuthentication"))
		r.med("Before turning a namespace's mTLS to STRICT, list its callers without a sidecar (source workload \"unknown\" in the mesh's telemetry, NR filter_chain_not_found in the sidecars' access logs)")
		r.low("Alert on NR filter_chain_not_found in sidecar access logs and on failed Jobs")
	},
}

// meshChangeRE is a change to the mesh's mTLS or sidecar injection.
var meshChangeRE = regexp.MustCompile(`(?i)peerauthentication|\bmtls\b|mutual tls|istio-injection|sidecar injection|sidecar\.istio\.io`)

// strictChangeRE reads a change that sets a PeerAuthentication to STRICT
// ("PeerAuthentication orders/default mode STRICT").
var strictChangeRE = regexp.MustCompile(`(?i)peerauthentication\s+([a-z0-9-]+)/([a-z0-9.-]+)\b.*\bstrict\b`)

// filterChainRE is the line of an Envoy access log for a connection no
// listener filter chain matched: plaintext at a port that requires mTLS.
var filterChainRE = regexp.MustCompile(`\bNR filter_chain_not_found\b|\bfilter_chain_not_found\b`)

// meshRootNamespace is where a PeerAuthentication applies to the whole
// mesh.
const meshRootNamespace = "istio-system"

// getPARE is a get of PeerAuthentications by their short name.
var getPARE = regexp.MustCompile(`\bget\s+pa\b`)

// strictPolicy is a PeerAuthentication in STRICT mode.
type strictPolicy struct {
	namespace, name, from string
}

// strictPolicies reads PeerAuthentications in STRICT mode from the outputs
// of `kubectl get peerauthentication` handed over as text: the table
// (NAMESPACE, NAME, MODE, AGE; without NAMESPACE with -n) or the YAML
// (metadata.namespace and spec.mtls.mode).
func strictPolicies(outs []evidence.CommandOutput) []strictPolicy {
	var out []strictPolicy
	for _, o := range outs {
		run := strings.ToLower(o.Run)
		if !strings.Contains(run, "peerauthentication") && !matchLine(getPARE, run) {
			continue
		}
		cmdNS := flagValue(o.Run, "-n", "--namespace")
		var cols []string
		var yamlNS, yamlName string
		for _, l := range o.Lines {
			fields := strings.Fields(l)
			if len(fields) == 0 {
				continue
			}
			if slices.Contains(fields, "MODE") && slices.Contains(fields, "NAME") {
				cols = fields
				continue
			}
			if t := strings.TrimSpace(l); strings.HasPrefix(t, "namespace:") {
				yamlNS = strings.TrimSpace(strings.TrimPrefix(t, "namespace:"))
			} else if strings.HasPrefix(t, "name:") && yamlName == "" {
				yamlName = strings.TrimSpace(strings.TrimPrefix(t, "name:"))
			} else if strings.HasPrefix(t, "mode:") && strings.Contains(t, "STRICT") {
				out = append(out, strictPolicy{namespace: orWord(yamlNS, cmdNS), name: orWord(yamlName, "default"), from: o.Run})
				yamlNS, yamlName = "", ""
				continue
			} else if t == "---" || strings.HasPrefix(t, "- apiVersion:") || strings.HasPrefix(t, "apiVersion:") {
				yamlNS, yamlName = "", ""
			}
			if cols == nil || len(fields) != len(cols) {
				continue
			}
			row := map[string]string{}
			for i, c := range cols {
				row[c] = fields[i]
			}
			if row["MODE"] == "STRICT" {
				out = append(out, strictPolicy{namespace: orWord(row["NAMESPACE"], cmdNS), name: row["NAME"], from: o.Run})
			}
		}
	}
	return out
}

// flagValue is the value of a command-line flag ("-n orders").
func flagValue(cmd string, names ...string) string {
	f := strings.Fields(cmd)
	for i, w := range f {
		for _, n := range names {
			if w == n && i+1 < len(f) {
				return f[i+1]
			}
			if strings.HasPrefix(w, n+"=") {
				return strings.TrimPrefix(w, n+"=")
			}
		}
	}
	return ""
}

// strictFromChanges reads STRICT PeerAuthentications from the changes'
// descriptions.
func strictFromChanges(cs []evidence.Change) []strictPolicy {
	var out []strictPolicy
	for _, c := range cs {
		if m := findSubmatch(strictChangeRE, c.Description); m != nil {
			out = append(out, strictPolicy{namespace: strings.ToLower(m[1]), name: strings.ToLower(m[2]), from: fmt.Sprintf("change at %s: %q", ts(c.Timestamp), c.Description)})
		}
	}
	return out
}

// injected says whether a namespace's labels turn on sidecar injection.
func injected(labels map[string]string) bool {
	return labels["istio-injection"] == "enabled" || labels["istio.io/rev"] != "" || labels["istio.io/dataplane-mode"] == "ambient"
}

// podSidecar says whether a pod's spec shows an Istio sidecar (true), shows
// none (false), or does not say (its containers are not known).
func podSidecar(p *corev1.Pod) (has, known bool) {
	if p.Annotations["sidecar.istio.io/inject"] == "false" || p.Labels["sidecar.istio.io/inject"] == "false" {
		return false, true
	}
	if len(p.Spec.Containers) == 0 {
		return false, false
	}
	for _, c := range append(slices.Clone(p.Spec.Containers), p.Spec.InitContainers...) {
		if c.Name == "istio-proxy" || strings.Contains(c.Image, "istio/proxyv2") {
			return true, true
		}
	}
	return false, true
}

// gatherMeshPolicy follows a caller's reset connections to the host it
// calls in another namespace and reads whether the mesh there requires
// mutual TLS from a caller that has no sidecar (meshMTLS).
func (g *gatherer) gatherMeshPolicy(ctx context.Context, plan []specialist, findings []Finding) []Finding {
	var onset time.Time
	caller := ""
	var resetLine string
	for i := range findings {
		f := &findings[i]
		if f.Namespace != "" && g.sc.Namespace != "" && f.Namespace != g.sc.Namespace {
			continue
		}
		if f.Kind == KindConnReset || f.Kind == KindJobFailed && Kind(f.fact("line_kind")) == KindConnReset {
			// A reset read in a caller's log names the host it called
			// as its subject: the caller is the one whose log it is.
			who := orWord(f.fact("caller"), f.Subject)
			if caller == "" || who == g.sc.Service {
				caller = who
			}
			onset = earliest(onset, f.Time)
			if resetLine == "" {
				resetLine = f.fact("line")
			}
		}
	}
	if caller == "" || g.src == nil || g.src.Kubernetes == nil {
		return nil
	}
	hosts := calledHosts(g.sc.Namespace, g.dependencyTexts(), 2)
	if len(hosts) == 0 {
		return nil
	}
	policies := append(strictPolicies(g.commands), strictFromChanges(append(slices.Clone(g.earlier), g.changes...))...)
	var host calledHost
	var pol *strictPolicy
	// The policy of the host's own namespace first (the listing of the
	// current state before a change's description), else the mesh-wide
	// one.
	for _, h := range hosts {
		for i := range policies {
			if p := &policies[i]; p.namespace == h.namespace && (pol == nil || pol.namespace != h.namespace) {
				host, pol = h, p
			} else if p.namespace == meshRootNamespace && pol == nil {
				host, pol = h, p
			}
		}
		if pol != nil && pol.namespace == h.namespace {
			break
		}
	}
	if host.service == "" {
		host = hosts[0]
	}
	// The caller's side: its namespace's labels and its pods' specs.
	var noSidecar string
	nss, _ := evidence.List[corev1.Namespace](ctx, g.src.Kubernetes, "", "")
	var calleeInjected bool
	for _, n := range nss {
		switch n.Name {
		case g.sc.Namespace:
			if !injected(n.Labels) && g.sc.Namespace != "" {
				noSidecar = fmt.Sprintf("namespace %s has no istio-injection label", n.Name)
				if v := n.Labels["istio-injection"]; v != "" {
					noSidecar = fmt.Sprintf("namespace %s is labelled istio-injection=%s", n.Name, v)
				}
			}
		case host.namespace:
			calleeInjected = injected(n.Labels)
		}
	}
	for i := range g.k8s.Pods {
		p := &g.k8s.Pods[i]
		if WorkloadOfPod(p) != caller && workloadOfName(p.Name) != caller && !strings.HasPrefix(p.Name, caller+"-") {
			continue
		}
		if has, known := podSidecar(p); known {
			if has {
				return nil // the caller is in the mesh: mTLS is not what fails
			}
			if noSidecar == "" {
				noSidecar = fmt.Sprintf("pod %s has no istio-proxy container", p.Name)
			}
		}
	}
	// The callee's side: its sidecar's access log.
	var refused []evidence.LogLine
	since, until := g.window()
	for _, sp := range plan {
		if !sp.run.Has("list_pods") || !sp.run.Has("get_pod_logs") {
			continue
		}
		out, ok := g.call(ctx, sp, "list_pods", map[string]any{"namespace": host.namespace})
		if !ok {
			break
		}
		pods, _ := as[[]corev1.Pod](out)
		n := 0
		for i := range pods {
			p := &pods[i]
			if !backsHost(p, host) || n >= 3 || ctx.Err() != nil {
				continue
			}
			n++
			out, ok := g.call(ctx, sp, "get_pod_logs", map[string]any{"namespace": p.Namespace, "pod": p.Name, "container": "istio-proxy", "since": since, "until": until, "limit": g.opts.PodLogLimit})
			if !ok {
				continue
			}
			if lr, _ := as[*evidence.LogResult](out); lr != nil {
				for _, l := range lr.Lines {
					if matchLine(filterChainRE, l.Text) {
						refused = append(refused, l)
					}
				}
			}
		}
		break
	}
	// The caller must be outside the mesh, and the host must require
	// mTLS: its policy says so, or its sidecar refuses plaintext.
	if noSidecar == "" || pol == nil && len(refused) == 0 {
		return nil
	}
	f := Finding{Kind: KindMeshMTLS, Subject: caller, Object: "workload " + caller, Namespace: g.sc.Namespace, Source: SrcKubernetes,
		Severity: SevCritical, Weight: 0.9, Time: onset, Related: []string{host.service}}
	f.setFact("callee", host.service)
	f.setFact("callee_namespace", "namespace "+host.namespace)
	f.setFact("caller_namespace", g.sc.Namespace)
	if pol != nil {
		f.setFact("policy", fmt.Sprintf("PeerAuthentication %s/%s mode STRICT", pol.namespace, pol.name))
		f.setFact("policy_name", fmt.Sprintf("PeerAuthentication %s/%s", pol.namespace, pol.name))
		if pol.namespace == meshRootNamespace {
			f.setFact("callee_namespace", "the whole mesh")
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("PeerAuthentication %s/%s is in mode STRICT (%s): the sidecars of %s accept only mutual TLS", pol.namespace, pol.name, pol.from, orWord(map[bool]string{true: "every namespace"}[pol.namespace == meshRootNamespace], "namespace "+pol.namespace)))
	}
	if noSidecar != "" {
		f.setFact("no_sidecar", noSidecar)
		ev := fmt.Sprintf("%s runs without an Istio sidecar: %s", caller, noSidecar)
		if calleeInjected {
			ev += fmt.Sprintf(" (namespace %s has one)", host.namespace)
		}
		f.Evidence = append(f.Evidence, ev)
	}
	if len(refused) > 0 {
		l := refused[len(refused)-1]
		f.setFact("refused", fmt.Sprintf("%s: NR filter_chain_not_found", plural(len(refused), "connection", "connections")))
		f.Evidence = append(f.Evidence, fmt.Sprintf("the sidecar of %s closed %s with no matching filter chain (plaintext at an mTLS port): %s", orWord(strings.TrimSuffix(l.Source, "/istio-proxy"), host.service), plural(len(refused), "connection", "connections"), quote(l.Text, 200)))
		if f.Time.IsZero() || refused[0].Time.Before(f.Time) && !refused[0].Time.IsZero() {
			f.Time = refused[0].Time
		}
	}
	if resetLine != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's calls to %s: %s", caller, host.service, quote(ReadableLine(resetLine), 200)))
	}
	f.Summary = fmt.Sprintf("%s sends plaintext to %s, whose mesh requires mutual TLS", caller, host.service)
	return []Finding{f}
}
