package analyst

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Replicas of one release that differ by node. A leak written into a
// release grows in every replica that serves the same load: the replicas
// of one ReplicaSet run one pod template (one image, one configuration).
// When some of them are killed for memory and others, as old, run without
// a restart on other nodes, what differs between them is the nodes (their
// OS image, kernel, cgroup version, runtime), not the code.
// markSparedReplicas notes that on each OOM kill ("spared_replicas"), and
// calibration holds an answer back that names the kills' root without
// taking the nodes in.

// markSparedReplicas sets, on each OOM kill among fs, the replicas of the
// killed pod's ReplicaSet that ran without a restart on nodes none of its
// killed replicas ran on, for at least as long as the killed container
// lived before its kill.
func markSparedReplicas(fs []Finding, pods []corev1.Pod, w Window) {
	killedNodes := map[string][]string{} // ReplicaSet key -> nodes of its killed pods
	var kills []int
	for i := range fs {
		if fs[i].Kind != KindOOMKilled {
			continue
		}
		p := podOfFinding(&fs[i], pods)
		if p == nil || p.Spec.NodeName == "" {
			continue
		}
		rs := replicaSetKey(p)
		if rs == "" {
			continue
		}
		kills = append(kills, i)
		if !slices.Contains(killedNodes[rs], p.Spec.NodeName) {
			killedNodes[rs] = append(killedNodes[rs], p.Spec.NodeName)
		}
	}
	for _, i := range kills {
		f := &fs[i]
		p := podOfFinding(f, pods)
		rs := replicaSetKey(p)
		lived, _ := time.ParseDuration(f.fact("ran_for"))
		var spared []string
		for j := range pods {
			q := &pods[j]
			if q.Name == p.Name || replicaSetKey(q) != rs || q.Spec.NodeName == "" || slices.Contains(killedNodes[rs], q.Spec.NodeName) {
				continue
			}
			if q.Status.Phase != corev1.PodRunning || podRestarts(q) > 0 || !longEnough(q, f.Time, lived, w) {
				continue
			}
			spared = append(spared, q.Name+" on "+q.Spec.NodeName)
		}
		if len(spared) > 0 {
			f.setFact("spared_replicas", strings.Join(spared, ", "))
			f.setFact("killed_nodes", strings.Join(killedNodes[rs], ", "))
		}
	}
}

// podOfFinding is the pod a finding of DetectPods is about (its object is
// "pod ns/name" or "pod ns/name container c").
func podOfFinding(f *Finding, pods []corev1.Pod) *corev1.Pod {
	for i := range pods {
		o := "pod " + pods[i].Namespace + "/" + pods[i].Name
		if f.Object == o || strings.HasPrefix(f.Object, o+" ") {
			return &pods[i]
		}
	}
	return nil
}

// replicaSetKey names the ReplicaSet a pod belongs to ("ns/checkout-7d9f8b6c5"):
// its owner, else its workload and pod-template-hash label, else its name
// when it has a ReplicaSet's generated form; "" for pods of other owners.
func replicaSetKey(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind == "ReplicaSet" {
			return p.Namespace + "/" + o.Name
		}
		return ""
	}
	if h := p.Labels["pod-template-hash"]; h != "" {
		return p.Namespace + "/" + WorkloadOfPod(p) + "-" + h
	}
	i := strings.LastIndexByte(p.Name, '-')
	if i <= 0 || len(p.Name)-i-1 != 5 || !isAlnumLower(p.Name[i+1:]) {
		return ""
	}
	rs := p.Name[:i]
	if trimHash(rs) == rs {
		return ""
	}
	return p.Namespace + "/" + rs
}

// podRestarts is the sum of a pod's container restarts.
func podRestarts(p *corev1.Pod) int {
	n := 0
	for _, cs := range p.Status.ContainerStatuses {
		n += int(cs.RestartCount)
	}
	return n
}

// longEnough reports whether pod q has run, by the end of the window, for
// at least lived (how long the killed container lived before its kill),
// or, that unknown, since before the kill at killed.
func longEnough(q *corev1.Pod, killed time.Time, lived time.Duration, w Window) bool {
	start := q.CreationTimestamp.Time
	if q.Status.StartTime != nil && !q.Status.StartTime.IsZero() {
		start = q.Status.StartTime.Time
	}
	if start.IsZero() {
		return false
	}
	if lived > 0 && !w.End.IsZero() {
		return w.End.Sub(start) >= lived
	}
	return !killed.IsZero() && start.Before(killed)
}
