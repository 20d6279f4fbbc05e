package analyst

import (
	"context"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// calledHostRE reads a cluster host a client calls or waits for: an
// optional pod label (a StatefulSet's per-pod name), the Service and its
// namespace ("kafka-1.kafka-headless.streaming.svc",
// "kafka-bootstrap.streaming.svc").
var calledHostRE = regexp.MustCompile(`\b(?:([a-z0-9][a-z0-9-]*)\.)?([a-z0-9][a-z0-9-]*)\.([a-z0-9][a-z0-9-]*)\.svc\b`)

// calledHost is one dependency a client names by its cluster DNS name.
type calledHost struct {
	pod, service, namespace string
}

// serviceNameSuffixes are what a Service name adds to its workload's name
// ("kafka-headless" governs the pods of StatefulSet "kafka").
var serviceNameSuffixes = []string{"-headless", "-bootstrap", "-brokers", "-service", "-svc", "-hl", "-internal", "-cluster", "-client"}

// calledHosts lists the cluster hosts in other namespaces than ns that the
// texts name, at most max namespaces.
func calledHosts(ns string, texts []string, max int) []calledHost {
	var out []calledHost
	seen := map[calledHost]bool{}
	nss := map[string]bool{}
	for _, t := range texts {
		for _, m := range findAllSubmatch(calledHostRE, strings.ToLower(t), -1) {
			h := calledHost{pod: m[1], service: m[2], namespace: m[3]}
			if h.namespace == ns || h.namespace == "kube-system" || seen[h] {
				continue
			}
			if !nss[h.namespace] && len(nss) >= max {
				continue
			}
			nss[h.namespace] = true
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// backsHost reports whether pod p serves host h: it is the host's own pod
// (a StatefulSet pod's DNS name) or of the workload the Service is named
// after.
func backsHost(p *corev1.Pod, h calledHost) bool {
	if p.Namespace != "" && p.Namespace != h.namespace {
		return false
	}
	if h.pod != "" && p.Name == h.pod {
		return true
	}
	wl := WorkloadOfPod(p)
	if wl == "" {
		return false
	}
	svc := h.service
	if svc == wl {
		return true
	}
	for _, s := range serviceNameSuffixes {
		if strings.TrimSuffix(svc, s) == wl && svc != wl+"" {
			if strings.HasSuffix(svc, s) {
				return true
			}
		}
	}
	return false
}

// podFailing reports whether a pod's containers keep failing: restarted,
// waiting in a back-off or terminated in error.
func podFailing(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			continue
		}
		if cs.RestartCount > 0 || cs.LastTerminationState.Terminated != nil {
			return true
		}
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return true
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return true
		}
	}
	return false
}

// dependencyTexts are where the pods under investigation name the hosts
// they depend on: their mined log lines, and their init containers'
// commands and environment (an init container that waits for a
// dependency names it).
func (g *gatherer) dependencyTexts() []string {
	var texts []string
	for _, set := range g.logSets {
		for _, t := range set.Templates {
			texts = append(texts, t.Example)
		}
	}
	for i := range g.k8s.Pods {
		p := &g.k8s.Pods[i]
		if p.Namespace != "" && g.sc.Namespace != "" && p.Namespace != g.sc.Namespace {
			continue
		}
		for _, c := range p.Spec.InitContainers {
			texts = append(texts, strings.Join(c.Command, " "), strings.Join(c.Args, " "))
			for _, e := range c.Env {
				texts = append(texts, e.Value)
			}
		}
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				texts = append(texts, e.Value)
			}
		}
	}
	return texts
}

// gatherCalledPods follows the dependencies the pods under investigation
// call or wait for in other namespaces to their own pods: the pods behind
// a called host that keep failing, with the last lines of their crashed
// containers, join the evidence, so that a dependency crashing in its own
// namespace explains a client that cannot reach it (an init container
// waiting on a broker that crash-loops; lookups of a headless Service's
// pods failing because none is ready).
func (g *gatherer) gatherCalledPods(ctx context.Context, plan []specialist) {
	hosts := calledHosts(g.sc.Namespace, g.dependencyTexts(), 2)
	if len(hosts) == 0 {
		return
	}
	byNS := map[string][]calledHost{}
	var order []string
	for _, h := range hosts {
		if byNS[h.namespace] == nil {
			order = append(order, h.namespace)
		}
		byNS[h.namespace] = append(byNS[h.namespace], h)
	}
	have := map[string]bool{}
	for _, p := range g.k8s.Pods {
		have[p.Namespace+"/"+p.Name] = true
	}
	for _, sp := range plan {
		if !sp.run.Has("list_pods") {
			continue
		}
		for _, ns := range order {
			if ctx.Err() != nil {
				return
			}
			out, ok := g.call(ctx, sp, "list_pods", map[string]any{"namespace": ns})
			if !ok {
				continue
			}
			pods, _ := as[[]corev1.Pod](out)
			for i := range pods {
				p := &pods[i]
				if have[p.Namespace+"/"+p.Name] || !podFailing(p) {
					continue
				}
				backs := false
				for _, h := range byNS[ns] {
					if backsHost(p, h) {
						backs = true
						break
					}
				}
				if !backs {
					continue
				}
				have[p.Namespace+"/"+p.Name] = true
				g.k8s.Pods = append(g.k8s.Pods, *p)
				for _, cs := range p.Status.ContainerStatuses {
					if cs.RestartCount == 0 && cs.LastTerminationState.Terminated == nil {
						continue
					}
					key := p.Namespace + "/" + p.Name + "/" + cs.Name
					if _, ok := g.k8s.PreviousLogs[key]; ok {
						continue
					}
					if lines := g.containerLog(ctx, sp, p, cs.Name, true); len(lines) > 0 {
						g.k8s.PreviousLogs[key] = lines
					} else if lines := g.containerLog(ctx, sp, p, cs.Name, false); len(lines) > 0 {
						g.k8s.CurrentLogs[key] = true
						g.k8s.PreviousLogs[key] = lines
					}
				}
			}
		}
		return
	}
}
