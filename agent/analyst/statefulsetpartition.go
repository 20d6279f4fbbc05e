package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A StatefulSet whose RollingUpdate strategy carries a partition updates
// only the pods whose ordinal is at or above it: the others stay on the
// old revision by design, and nothing fails or logs an error. A partition
// left over from a canary makes every later template change (an image
// bump) reach only the highest ordinals: "the rollout is stuck" while the
// controller does exactly what it was told. The status says so
// (currentRevision differs from updateRevision, updatedReplicas below
// replicas), and the change that set the partition names why.

// KindSTSPartition is a StatefulSet update held back by its
// rollingUpdate.partition.
const KindSTSPartition Kind = "statefulset_partition"

var stsPartition = &mechanism{
	kind:   KindSTSPartition,
	class:  classCause,
	label:  "StatefulSet update held by rollingUpdate.partition",
	detect: detectSTSPartition,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the StatefulSet %s has updateStrategy.rollingUpdate.partition=%s, so its update reaches only pods with ordinal >= %s (%s): %s stay on the old revision by design, the rollout is not failing",
			h.Subject, h.fact("partition"), h.fact("partition"), orWord(h.fact("updated"), "the highest ordinals"), orWord(h.fact("held"), "the lower ordinals"))
		d += h.wrapped(" (", "revisions", ")")
		d += h.wrapped("; the partition was set by the ", "set_by", " and never put back to 0")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		ns := orWord(h.top().Namespace, sc.Namespace)
		r.high("Put the partition back to 0 so the remaining ordinals update: kubectl -n %s patch statefulset %s -p '{\"spec\":{\"updateStrategy\":{\"rollingUpdate\":{\"partition\":0}}}}' (and in the chart values, or the next release sets it again)", ns, h.Subject)
		r.med("Make canaries by partition end with the partition reset in the same change that closes them")
		r.low("Alert on a StatefulSet whose updated replicas stay below its replicas after a release (kube_statefulset_status_replicas_updated vs kube_statefulset_replicas)")
	},
}

// partitionChangeRE: a change that speaks of a StatefulSet's partition.
var partitionChangeRE = regexp.MustCompile(`(?i)\bpartition\b\s*[:=]?\s*\d*`)

func detectSTSPartition(ev *Gathered, _ []Finding) []Finding {
	subjects := ev.Scope.Subjects()
	changes := append(append([]evidence.Change(nil), ev.Earlier...), ev.Changes...)
	var out []Finding
	for i := range ev.K8s.StatefulSets {
		ss := &ev.K8s.StatefulSets[i]
		ru := ss.Spec.UpdateStrategy.RollingUpdate
		if ss.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType || ru == nil || ru.Partition == nil || *ru.Partition <= 0 {
			continue
		}
		part := int(*ru.Partition)
		replicas := int(ss.Status.Replicas)
		if ss.Spec.Replicas != nil {
			replicas = int(*ss.Spec.Replicas)
		}
		if part > replicas {
			part = replicas // every pod held
		}
		st := ss.Status
		revSplit := st.CurrentRevision != "" && st.UpdateRevision != "" && st.CurrentRevision != st.UpdateRevision
		statusRead := st.UpdateRevision != "" || st.UpdatedReplicas > 0
		split := revSplit || statusRead && int(st.UpdatedReplicas) < replicas
		if !split {
			continue
		}
		asked := containsFold(subjects, ss.Name)
		f := Finding{Kind: KindSTSPartition, Subject: ss.Name, Object: "statefulset " + ss.Namespace + "/" + ss.Name, Namespace: ss.Namespace,
			Source: SrcKubernetes, Severity: SevWarning, Weight: 0.4, Time: ev.Window.Start}
		if asked {
			f.Severity, f.Weight = SevCritical, 0.9
		}
		f.setFact("partition", fmt.Sprint(*ru.Partition))
		var held, upd []string
		for o := 0; o < replicas; o++ {
			name := fmt.Sprintf("%s-%d", ss.Name, o)
			if o < part {
				held = append(held, name)
			} else {
				upd = append(upd, name)
			}
		}
		f.setFact("held", strings.Join(held, ", "))
		f.setFact("updated", strings.Join(upd, ", "))
		e1 := fmt.Sprintf("StatefulSet %s/%s: updateStrategy RollingUpdate with partition %d of %d replicas; %d updated", ss.Namespace, ss.Name, *ru.Partition, replicas, st.UpdatedReplicas)
		if st.CurrentRevision != "" && st.UpdateRevision != "" && st.CurrentRevision != st.UpdateRevision {
			rev := fmt.Sprintf("currentRevision %s, updateRevision %s, updatedReplicas %d of %d", st.CurrentRevision, st.UpdateRevision, st.UpdatedReplicas, replicas)
			f.setFact("revisions", rev)
			e1 += "; " + rev
		}
		f.Evidence = []string{e1}
		// The pods on each revision, as their labels say.
		byRev := map[string][]string{}
		for j := range ev.K8s.Pods {
			p := &ev.K8s.Pods[j]
			if h := p.Labels["controller-revision-hash"]; h != "" && strings.HasPrefix(p.Name, ss.Name+"-") && (p.Namespace == ss.Namespace || p.Namespace == "" || ss.Namespace == "") {
				byRev[h] = append(byRev[h], p.Name)
			}
		}
		if len(byRev) > 1 {
			revs := make([]string, 0, len(byRev))
			for r := range byRev {
				revs = append(revs, r)
			}
			sort.Strings(revs)
			var parts []string
			for _, r := range revs {
				parts = append(parts, r+": "+strings.Join(byRev[r], ", "))
			}
			f.Evidence = append(f.Evidence, "pods by revision: "+strings.Join(parts, "; "))
		}
		// The change that set the partition, and the latest one of the
		// StatefulSet the partition held back.
		var set, last *evidence.Change
		for j := range changes {
			c := &changes[j]
			if !strings.EqualFold(c.Service, ss.Name) && !mentionsName(c.Description, ss.Name) {
				continue
			}
			if matchLine(partitionChangeRE, c.Description) && (set == nil || c.Timestamp.After(set.Timestamp)) {
				set = c
			} else if last == nil || c.Timestamp.After(last.Timestamp) {
				last = c
			}
		}
		if set != nil {
			f.setFact("set_by", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(set.Kind), set.Service, ts(set.Timestamp), set.Description))
			f.Evidence = append(f.Evidence, "partition set by the "+f.fact("set_by"))
		}
		if last != nil && (set == nil || last.Timestamp.After(set.Timestamp)) {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the later %s change of %s at %s reached only %s: %q", changeKindWords(last.Kind), last.Service, ts(last.Timestamp), f.fact("updated"), last.Description))
			if last.Timestamp.After(ev.Window.BaselineStart) {
				f.Time = last.Timestamp
			}
		}
		f.Summary = fmt.Sprintf("StatefulSet %s/%s update held by partition %d", ss.Namespace, ss.Name, *ru.Partition)
		out = append(out, f)
	}
	return out
}
