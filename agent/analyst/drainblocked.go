package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A node drain that never finishes because an eviction would violate a
// PodDisruptionBudget: kubectl drain retries "Cannot evict pod as it would
// violate the pod's disruption budget" for ever. The budget allows no
// disruption when it asks for as many healthy pods as the workload runs
// (minAvailable 3 of 3 replicas, maxUnavailable 0), typically after the
// workload was scaled down and the budget was not. The budget and the
// workload are the root; the node and its upgrade are what is blocked.

// KindDrainBlocked is an eviction a PodDisruptionBudget refuses.
const KindDrainBlocked Kind = "drain_blocked"

var drainBlocked = &mechanism{
	kind:   KindDrainBlocked,
	class:  classCause,
	label:  "eviction blocked by a PodDisruptionBudget",
	detect: detectDrainBlocked,
	describe: func(h *Hypothesis, sc Scope) string {
		pdb := "its PodDisruptionBudget"
		if p := h.fact("pdb"); p != "" {
			pdb = "the PodDisruptionBudget " + p
		}
		d := fmt.Sprintf("the drain cannot evict pod %s of %s: %s", h.fact("pod"), h.Subject, pdb)
		d += h.wrapped(" (", "budget", ")")
		d += " allows no disruption"
		if e := h.fact("expected"); e != "" {
			d += fmt.Sprintf(" while %s runs %s, so no pod of it may ever be evicted", h.Subject, plural(atoiOr(e), "pod", "pods"))
		}
		if n, g := h.fact("node"), h.fact("nodegroup"); g != "" && n != "" {
			d += fmt.Sprintf("; the update of node group %s cannot drain %s: its evictions are refused until it gives up (%s)", g, n, orWord(h.fact("failure"), "failed"))
		} else if n != "" {
			d += fmt.Sprintf("; the drain of %s retries for ever", n)
		}
		if c := h.fact("scaled"); c != "" {
			d += fmt.Sprintf(". The budget was not changed when %s was scaled down: %q", h.Subject, c)
		}
		if l := h.fact("line"); l != "" {
			d += ": " + quote(l, 200)
		}
		d += h.clause(". The budget was set by ", "budget_change")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Let the budget allow one disruption: lower minAvailable of PodDisruptionBudget %s below the replicas of %s (or use maxUnavailable: 1), then the drain finishes", orWord(h.fact("pdb"), h.Subject), h.Subject)
		r.med("Keep PodDisruptionBudgets in the workload's manifests so a replica change updates them together")
		r.low("Alert on PodDisruptionBudgets with zero allowed disruptions for more than an hour")
	},
}

var (
	evictBlockedRE = regexp.MustCompile(`(?i)error when evicting pods?/"?([\w.-]+)"?(?: -n "?([\w.-]+)"?)?.*?Cannot evict pod as it would violate the pod's disruption budget|Cannot evict pod as it would violate the pod's disruption budget`)
	drainNodeRE    = regexp.MustCompile(`\bdrain\s+(?:node/)?([\w.-]+)`)
	pdbRowRE       = regexp.MustCompile(`^(?:([\w.-]+)\s+)?([\w.-]+)\s+(\S+)\s+(\S+)\s+(\d+)\s+\S+$`)
	pdbFieldRE     = regexp.MustCompile(`^\s*(minAvailable|maxUnavailable|disruptionsAllowed|expectedPods|currentHealthy|desiredHealthy):\s*"?([\w%]+)"?`)
	podOrdinalRE   = regexp.MustCompile(`^(.+?)-\d+$`)
)

// detectDrainBlocked reads drain outputs handed over in transcripts, and
// the budgets listed or printed next to them.
func detectDrainBlocked(ev *Gathered, _ []Finding) []Finding {
	var f *Finding
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			m := findSubmatch(evictBlockedRE, l)
			if m == nil {
				continue
			}
			if f == nil {
				f = &Finding{Kind: KindDrainBlocked, Namespace: m[2], Source: SrcKubernetes, Time: ev.Window.End, Severity: SevCritical, Weight: 0.9,
					Object: "command " + c.Command}
				f.setFact("line", strings.TrimSpace(l))
				if m[1] != "" {
					f.setFact("pod", orWord(m[2], "?")+"/"+m[1])
					f.Subject = workloadOfPodName(m[1])
				}
				if n := findSubmatch(drainNodeRE, c.Command); n != nil {
					f.setFact("node", n[1])
					f.Related = append(f.Related, n[1])
				}
			}
			f.addCount(1)
		}
	}
	// The refusals an API server's audit log, a node group's or an
	// autoscaler's log recorded: the pod from the eviction's URI or
	// object, the node from the failed update that names it.
	airflowLines(ev, func(l string, cmd *evidence.CommandOutput) {
		if cmd != nil || !matchLine(evictBlockedRE, l) {
			return
		}
		ns, pod := evictedPodOf(l)
		if f == nil {
			f = &Finding{Kind: KindDrainBlocked, Namespace: ns, Source: SrcLogs, Time: ev.Window.End, Severity: SevCritical, Weight: 0.9,
				Object: "eviction refused"}
			f.setFact("line", refusalLine(l, ns, pod))
		}
		if pod != "" && f.fact("pod") == "" {
			f.Namespace = ns
			f.setFact("pod", orWord(ns, "?")+"/"+pod)
			f.Subject = workloadOfPodName(pod)
			delete(f.Facts, "line")
			f.setFact("line", refusalLine(l, ns, pod))
		}
		if t, ok := lineTime(l); ok && f.Source == SrcLogs && t.Before(f.Time) {
			f.Time = t
		}
		f.addCount(1)
	})
	if f != nil && f.fact("node") == "" {
		evictionFailedNode(ev, f)
	}
	if f == nil {
		return nil
	}
	if f.Subject == "" {
		f.Subject = orWord(f.fact("node"), "the drained node")
	}
	f.Evidence = []string{fmt.Sprintf("%s: %s (%s lines)", f.Object, quote(f.fact("line"), 200), f.fact("lines"))}
	// The drain evicted every other pod: only the budget holds it.
	evicted := 0
	for _, c := range ev.Commands {
		if strings.HasPrefix(f.Object, "command ") && c.Command == strings.TrimPrefix(f.Object, "command ") {
			for _, l := range c.Lines {
				if strings.HasSuffix(strings.TrimSpace(l), " evicted") {
					evicted++
				}
			}
		}
	}
	if evicted > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the drain evicted %s; only %s is refused", plural(evicted, "other pod", "other pods"), f.fact("pod")))
	}
	// The workload's pods: as many as the budget needs.
	var running []string
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if p.Namespace == f.Namespace && workloadOfPodName(p.Name) == f.Subject && string(p.Status.Phase) == "Running" {
			running = append(running, p.Name)
		}
	}
	runsLine := -1
	if len(running) > 0 {
		f.setFact("running", strconv.Itoa(len(running)))
		runsLine = len(f.Evidence)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s runs %s: %s", f.Subject, plural(len(running), "pod", "pods"), strings.Join(running, ", ")))
	}
	// The budget: a get pdb row of the namespace that allows 0, its YAML.
	for _, c := range ev.Commands {
		if !strings.Contains(strings.ToLower(c.Command), "pdb") && !strings.Contains(strings.ToLower(c.Command), "poddisruptionbudget") {
			continue
		}
		for _, l := range c.Lines {
			if r := findSubmatch(pdbRowRE, strings.TrimSpace(l)); r != nil && r[5] == "0" && (r[1] == "" || r[1] == f.Namespace) {
				if f.fact("pdb") == "" || r[2] == f.Subject {
					delete(f.Facts, "pdb")
					f.setFact("pdb", r[2])
					if r[3] != "N/A" {
						f.Facts["budget"] = "minAvailable " + r[3]
					} else {
						f.Facts["budget"] = "maxUnavailable " + r[4]
					}
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", c.Command, strings.Join(strings.Fields(l), " ")))
				}
			}
			if m := findSubmatch(pdbFieldRE, l); m != nil {
				switch m[1] {
				case "minAvailable", "maxUnavailable":
					f.setFact("budget", m[1]+" "+m[2])
				case "expectedPods":
					f.setFact("expected", m[2])
				case "disruptionsAllowed":
					f.setFact("allowed", m[2])
				}
			}
		}
	}
	// The budget's object (kubectl describe pdb, -o yaml), of the
	// evicted pod's namespace: what it requires and allows now.
	if b := budgetOfEvicted(ev.K8s, f.Namespace, f.Subject); b != nil && (f.fact("budget") == "" || f.fact("pdb") == b.Name) {
		delete(f.Facts, "pdb")
		f.setFact("pdb", b.Name)
		switch {
		case b.Spec.MinAvailable != nil:
			f.Facts["budget"] = "minAvailable " + b.Spec.MinAvailable.String()
		case b.Spec.MaxUnavailable != nil:
			f.Facts["budget"] = "maxUnavailable " + b.Spec.MaxUnavailable.String()
		}
		if b.Status.ExpectedPods > 0 || b.Status.CurrentHealthy > 0 {
			delete(f.Facts, "allowed")
			f.setFact("allowed", strconv.Itoa(int(b.Status.DisruptionsAllowed)))
			if f.fact("expected") == "" && b.Status.ExpectedPods > 0 {
				f.setFact("expected", strconv.Itoa(int(b.Status.ExpectedPods)))
			}
		}
	}
	if f.fact("expected") == "" && f.fact("budget") != "" {
		f.setFact("expected", f.fact("running"))
	}
	// Fewer pods read than the budget expects: the pods were listed
	// where the eviction ran (one node), not the workload's.
	if e := f.fact("expected"); runsLine >= 0 && atoiOr(e) > len(running) {
		f.Evidence = slices.Delete(f.Evidence, runsLine, runsLine+1)
	}
	if e := f.fact("expected"); e != "" {
		if n, err := strconv.Atoi(e); err == nil && len(f.Evidence) < 4 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("PodDisruptionBudget %s: %s, %d pods expected, %s disruptions allowed", orWord(f.fact("pdb"), f.Subject), f.fact("budget"), n, orWord(f.fact("allowed"), "0")))
		}
	}
	// A change that scaled the workload down left the budget behind; one
	// that created the workload with its budget (days before) set both.
	for _, c := range ev.Earlier {
		if c.Service == f.Subject && matchLine(pdbChangeRE, c.Description) && len(f.Evidence) < 5 {
			f.setFact("budget_change", fmt.Sprintf("the change of %s at %s: %q", c.Service, ts(c.Timestamp), c.Description))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
		}
	}
	for _, c := range ev.Changes {
		if c.Service == f.Subject && matchLine(scaleDownRE, c.Description) {
			f.setFact("scaled", c.Description)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
		}
	}
	if l := f.fact("failed_by"); l != "" {
		f.Evidence = append(f.Evidence, l)
	}
	f.Summary = fmt.Sprintf("the PodDisruptionBudget of %s blocks evicting %s (drain of %s)", f.Subject, f.fact("pod"), orWord(f.fact("node"), "a node"))
	return []Finding{*f}
}

var (
	// evictURIRE reads the pod of an eviction from its request URI (an
	// API server's audit log) or an audit event's objectRef.
	evictURIRE = regexp.MustCompile(`/namespaces/([\w.-]+)/pods/([\w.-]+)/eviction|"namespace":\s*"([\w.-]+)",\s*"name":\s*"([\w.-]+)",\s*"subresource":\s*"eviction"`)
	// evictPodRE reads the pod an autoscaler's or node manager's log
	// names: "pod kafka/zookeeper-1", "pod=kafka/zookeeper-1",
	// "pod":"kafka/zookeeper-1".
	evictPodRE = regexp.MustCompile(`(?i)\bpod"?\s*[=:]?\s*"?([a-z0-9][\w.-]*)/([a-z0-9][\w.-]*)`)
	// evictionFailureRE is a node group update or a node drain that
	// failed on evictions (EKS PodEvictionFailure, a drain's eviction
	// timeout), whose output names the node.
	evictionFailureRE = regexp.MustCompile(`PodEvictionFailure|(?i)\bfailed to (?:evict|drain)\b`)
	evictNodeRE       = regexp.MustCompile(`"((?:ip-[\d-]+|gke-[\w-]+|aks-[\w-]+)[\w.-]*)"`)
	nodegroupFlagRE   = regexp.MustCompile(`--nodegroup-name[= ]"?([\w.-]+)`)
)

// evictedPodOf is the namespace and pod a refused eviction's line names.
func evictedPodOf(l string) (ns, pod string) {
	if m := findSubmatch(evictURIRE, l); m != nil {
		if m[1] != "" {
			return m[1], m[2]
		}
		return m[3], m[4]
	}
	if m := findSubmatch(evictPodRE, l); m != nil {
		return m[1], m[2]
	}
	return "", ""
}

// auditUserRE reads the user of an audit event.
var auditUserRE = regexp.MustCompile(`"user":\s*\{\s*"username":\s*"([^"]+)"`)

// refusalLine words a refused eviction's line: an audit event (one JSON
// object) as who asked to evict which pod and the refusal, any other
// line as it is.
func refusalLine(l, ns, pod string) string {
	l = strings.TrimSpace(l)
	if pod == "" || !strings.Contains(l, `"audit.k8s.io/`) {
		return l
	}
	s := ""
	if t, ok := lineTime(l); ok {
		s = t.UTC().Format(time.RFC3339) + " "
	}
	s += "audit: eviction of pod " + orWord(ns, "?") + "/" + pod
	if u := findSubmatch(auditUserRE, l); u != nil {
		s += " by " + u[1]
	}
	return s + " refused (429): Cannot evict pod as it would violate the pod's disruption budget"
}

// evictionFailedNode reads the node (and the node group) a failed node
// group update or drain names from the commands' outputs (aws eks
// describe-update's errors with their resourceIds).
func evictionFailedNode(ev *Gathered, f *Finding) {
	for _, c := range ev.Commands {
		failed := false
		for _, l := range c.Lines {
			if matchLine(evictionFailureRE, l) {
				failed = true
				continue
			}
			if m := findSubmatch(evictNodeRE, l); failed && m != nil {
				f.setFact("node", m[1])
				f.Related = append(f.Related, m[1])
				if g := findSubmatch(nodegroupFlagRE, c.Command); g != nil {
					f.setFact("nodegroup", g[1])
					f.Related = append(f.Related, g[1])
				}
				failure := strings.TrimSpace(strings.Trim(strings.TrimSpace(firstMatching(c.Lines, evictionFailureRE)), `",`))
				if strings.Contains(failure, "PodEvictionFailure") {
					failure = "PodEvictionFailure"
				}
				f.setFact("failure", failure)
				f.setFact("failed_by", fmt.Sprintf("%s: %s on node %s", c.Command, failure, m[1]))
				return
			}
		}
	}
}

// firstMatching is the first line of lines that re matches.
func firstMatching(lines []string, re *regexp.Regexp) string {
	for _, l := range lines {
		if matchLine(re, l) {
			return l
		}
	}
	return ""
}

// pdbChangeRE is a change that set a workload's disruption budget.
var pdbChangeRE = regexp.MustCompile(`(?i)PodDisruptionBudget|\bPDB\b|minAvailable|maxUnavailable`)

// budgetOfEvicted is the PodDisruptionBudget of a namespace named after
// the evicted pod's workload or selecting its name label.
func budgetOfEvicted(k K8sEvidence, ns, workload string) *policyv1.PodDisruptionBudget {
	for _, list := range [][]policyv1.PodDisruptionBudget{k.PodDisruptionBudgets, k.OtherBudgets} {
		for i := range list {
			b := &list[i]
			if ns != "" && b.Namespace != "" && b.Namespace != ns {
				continue
			}
			if strings.EqualFold(b.Name, workload) || strings.EqualFold(strings.TrimSuffix(b.Name, "-pdb"), workload) {
				return b
			}
			if b.Spec.Selector != nil {
				for _, v := range b.Spec.Selector.MatchLabels {
					if v == workload {
						return b
					}
				}
			}
		}
	}
	return nil
}

var scaleDownRE = regexp.MustCompile(`(?i)\bscale|\breplicas?\b|(\d+)\s*(?:->|→|to)\s*(\d+)`)

// workloadOfPodName is the workload a pod's name carries: a StatefulSet's
// name before its ordinal, a Deployment's before its hashes.
func workloadOfPodName(pod string) string {
	if w := workloadOfName(pod); w != pod {
		return w
	}
	if m := findSubmatch(podOrdinalRE, pod); m != nil {
		return m[1]
	}
	return pod
}
