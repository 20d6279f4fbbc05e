package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// A StatefulSet with podManagementPolicy OrderedReady (the default)
// creates pod N+1 only once pod N is Ready. When its members were all
// stopped together (a node pool replaced), the first to come back may wait
// for its peers before it reports ready (RabbitMQ's Mnesia tables, a
// quorum): the peers are never created, and it never becomes ready. The
// StatefulSet shows fewer pods than replicas, the last one not ready, its
// log waiting for the others.

// KindOrderedReady is a StatefulSet whose ordered start waits on itself.
const KindOrderedReady Kind = "ordered_ready"

var orderedReady = &mechanism{
	kind:   KindOrderedReady,
	class:  classCause,
	label:  "StatefulSet ordered start deadlocked (pods wait for peers never created)",
	detect: detectOrderedReady,
	describe: func(h *Hypothesis, sc Scope) string {
		// A member that is not ready for a reason of its own (its
		// readiness probe failing, its log not waiting for peers)
		// blocks the start; it is not a deadlock.
		if pr := h.fact("probe_failure"); pr != "" && h.fact("line") == "" {
			return fmt.Sprintf("the StatefulSet %s is blocked: with podManagementPolicy OrderedReady it creates the next pod only once %s is Ready, but %s is not ready because its readiness probe fails: %s, so %s are never created (%s of %s pods exist)",
				h.Subject, h.fact("waiting"), h.fact("waiting"), quote(truncate(pr, 220), 230), h.fact("missing"), h.fact("have"), h.fact("replicas"))
		}
		d := fmt.Sprintf("the StatefulSet %s is deadlocked: with podManagementPolicy OrderedReady it creates the next pod only once %s is Ready, but %s is not ready, so %s are never created (%s of %s pods exist)",
			h.Subject, h.fact("waiting"), h.fact("waiting"), h.fact("missing"), h.fact("have"), h.fact("replicas"))
		d += h.quoteClause("; it waits for those peers: ", "line", 220)
		d += h.quoteClause("; its readiness probe fails: ", "probe_failure", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if pr := h.fact("probe_failure"); pr != "" && h.fact("line") == "" {
			r.high("Make the readiness probe of %s pass (it fails: %s): fix the probe or the setting it checks, and the StatefulSet %s creates %s once %s is Ready", h.fact("waiting"), quote(truncate(pr, 160), 170), h.Subject, h.fact("missing"), h.fact("waiting"))
			r.med("Check the probe commands of a StatefulSet against the image when its version changes")
			r.low("Alert on a StatefulSet whose ready replicas stay below its replicas (kube_statefulset_status_replicas_ready)")
			return
		}
		r.high("Let the StatefulSet %s start its pods together: set podManagementPolicy: Parallel (recreate the StatefulSet with --cascade=orphan), or force the waiting member to boot alone (rabbitmqctl force_boot) and let the others join", h.Subject)
		r.med("Keep clustered StatefulSets' members on different node pools or drain them one at a time, so they never stop all at once")
		r.low("Alert on a StatefulSet whose ready replicas stay below its replicas (kube_statefulset_status_replicas_ready)")
	},
}

// peerWaitRE: a member's log waiting for, or failing to reach, its peers.
var peerWaitRE = regexp.MustCompile(`(?i)waiting for (?:mnesia tables|peers?|cluster|quorum|other nodes)|timeout contacting cluster nodes|could not (?:contact|reach) (?:any )?(?:peer|cluster|seed)|no (?:peers|seed nodes) (?:found|reachable)|cluster nodes?:? .*(?:unreachable|not running)`)

func detectOrderedReady(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for i := range ev.K8s.StatefulSets {
		ss := &ev.K8s.StatefulSets[i]
		if ss.Spec.PodManagementPolicy == appsv1.ParallelPodManagement || ss.Spec.Replicas == nil || *ss.Spec.Replicas < 2 {
			continue
		}
		want := int(*ss.Spec.Replicas)
		have := map[int]*corev1.Pod{}
		for j := range ev.K8s.Pods {
			p := &ev.K8s.Pods[j]
			if p.Namespace != ss.Namespace && p.Namespace != "" && ss.Namespace != "" {
				continue
			}
			rest, ok := strings.CutPrefix(p.Name, ss.Name+"-")
			if !ok {
				continue
			}
			if n, err := strconv.Atoi(rest); err == nil && n < want {
				have[n] = p
			}
		}
		if len(have) == 0 || len(have) >= want {
			continue
		}
		// The last created member blocks the next one.
		last := -1
		for n := 0; n < want; n++ {
			if have[n] == nil {
				break
			}
			last = n
		}
		if last < 0 || podReady(have[last]) || podStateUnknown(have[last]) {
			continue
		}
		waiting := have[last].Name
		var missing []string
		for n := last + 1; n < want; n++ {
			missing = append(missing, fmt.Sprintf("%s-%d", ss.Name, n))
		}
		f := Finding{Kind: KindOrderedReady, Subject: ss.Name, Object: "statefulset " + ss.Namespace + "/" + ss.Name, Namespace: ss.Namespace,
			Source: SrcKubernetes, Severity: SevCritical, Weight: 0.5, Time: ev.Window.Start, Related: []string{waiting}}
		f.setFact("waiting", waiting)
		f.setFact("missing", strings.Join(missing, ", "))
		f.setFact("have", strconv.Itoa(len(have)))
		f.setFact("replicas", strconv.Itoa(want))
		if p := have[last]; p.Status.StartTime != nil && ev.Window.recent(p.Status.StartTime.Time) {
			f.Time = p.Status.StartTime.Time
		}
		f.Evidence = []string{
			fmt.Sprintf("StatefulSet %s/%s wants %d replicas with podManagementPolicy %s; %d pods exist and %s is not ready", ss.Namespace, ss.Name, want, orWord(string(ss.Spec.PodManagementPolicy), "OrderedReady (the default)"), len(have), waiting),
		}
		// The waiting member's own log (previous container first) naming
		// its peers.
		var lines []string
		for _, cs := range have[last].Status.ContainerStatuses {
			for _, l := range ev.K8s.PreviousLogs[have[last].Namespace+"/"+waiting+"/"+cs.Name] {
				lines = append(lines, l.Text)
			}
		}
		for _, set := range ev.Logs {
			if set.Source == waiting || strings.EqualFold(set.Subject, ss.Name) {
				for _, t := range set.Templates {
					lines = append(lines, t.Example)
				}
			}
		}
		for _, l := range lines {
			if matchLine(peerWaitRE, l) {
				f.setFact("line", l)
				f.Weight = 0.9
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s's log: %s", waiting, quote(ReadableLine(l), 240)))
				break
			}
		}
		// Its readiness probe's failure says why it is not ready.
		if f.fact("line") == "" {
			for _, g := range found {
				if g.Kind == KindProbeFailure && g.Object == "pod "+have[last].Namespace+"/"+waiting && g.fact("message") != "" && !strings.EqualFold(g.fact("probe"), "liveness") {
					f.setFact("probe_failure", strings.TrimSpace(strings.TrimPrefix(g.fact("message"), "Readiness probe failed:")))
					f.Weight = 0.8
					break
				}
			}
		}
		f.Summary = fmt.Sprintf("StatefulSet %s/%s: %d of %d pods exist, %s not ready blocks %s", ss.Namespace, ss.Name, len(have), want, waiting, strings.Join(missing, ", "))
		out = append(out, f)
	}
	return out
}
