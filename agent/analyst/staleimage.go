package analyst

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Pods of one workload share one image reference, but a mutable tag
// (":stable", ":latest") resolves to whatever digest the node pulled when
// the pod started: a pod created on a node with an older copy of the tag
// cached (imagePullPolicy IfNotPresent), or started before the tag moved,
// runs older code than its siblings. When the errors come from that pod
// alone, its image is the difference that explains them: asked "do the
// logs show X?", the answer is "yes, in this one pod, which runs the older
// image".

// KindStaleImage is a workload's errors confined to the one pod that runs
// a different image digest than its siblings.
const KindStaleImage Kind = "stale_image"

var staleImage = &mechanism{
	kind:   KindStaleImage,
	class:  classCause,
	label:  "errors from one pod only, which runs an older image digest",
	detect: detectStaleImage,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the errors of %s come from one pod only, %s, which runs a different image than its %s siblings: the same reference %s resolved to digest %s on it, while %s run %s",
			h.Subject, h.fact("pod"), h.fact("siblings_n"), h.fact("image"), shortDigest(h.fact("digest")), h.fact("siblings"), shortDigest(h.fact("siblings_digest")))
		if s := h.fact("started"); s != "" {
			d += " (it started at " + s + ", the others before)"
		}
		if l := h.fact("line"); l != "" {
			d += "; its error: " + quote(ReadableLine(l), 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Replace pod %s so it pulls the current image (kubectl delete pod %s -n %s), and pin the workload's image by digest rather than a mutable tag", h.fact("pod"), h.fact("pod"), orWord(h.top().Namespace, sc.Namespace))
		r.med("Use imagePullPolicy: Always for mutable tags, or release immutable tags only, so every pod of a workload runs the same build")
		r.low("Alert when pods of one workload run different image digests (kube_pod_container_info image_id)")
	},
}

// shortDigest shortens a sha256 digest for a sentence.
func shortDigest(d string) string {
	if i := strings.LastIndex(d, "sha256:"); i >= 0 && len(d) >= i+7+12 {
		return d[i : i+7+12]
	}
	return d
}

// imageDigest is the digest part of a container status's imageID.
func imageDigest(id string) string {
	if i := strings.LastIndex(id, "@"); i >= 0 {
		return id[i+1:]
	}
	return strings.TrimPrefix(id, "docker-pullable://")
}

func detectStaleImage(ev *Gathered, found []Finding) []Finding {
	// Pods by owner (the ReplicaSet or StatefulSet), with their first
	// container's image reference and digest.
	type member struct {
		pod    *corev1.Pod
		image  string
		digest string
	}
	groups := map[string][]member{}
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if len(p.Spec.Containers) == 0 || len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		owner := ""
		for _, o := range p.OwnerReferences {
			owner = o.Kind + "/" + o.Name
		}
		if owner == "" {
			owner = workloadOfPodName(p.Name)
		}
		c := p.Spec.Containers[0]
		var dg string
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == c.Name {
				dg = imageDigest(s.ImageID)
			}
		}
		if dg == "" {
			continue
		}
		groups[p.Namespace+"/"+owner+"|"+c.Image] = append(groups[p.Namespace+"/"+owner+"|"+c.Image], member{p, c.Image, dg})
	}
	var out []Finding
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		ms := groups[k]
		if len(ms) < 3 {
			continue
		}
		count := map[string]int{}
		for _, m := range ms {
			count[m.digest]++
		}
		if len(count) != 2 {
			continue
		}
		// The odd one: a single pod on a digest the others do not run.
		var odd *member
		var sibs []string
		var sibDigest string
		for i := range ms {
			if count[ms[i].digest] == 1 {
				odd = &ms[i]
			} else {
				sibs = append(sibs, ms[i].pod.Name)
				sibDigest = ms[i].digest
			}
		}
		if odd == nil {
			continue
		}
		// Errors of the workload from the odd pod, in a log template no
		// sibling's log shows, while the siblings' logs were read.
		errF := oddPodError(ev.Logs, found, odd.pod.Name, sibs)
		if errF == nil {
			continue
		}
		workload := errF.Subject
		if workload == "" {
			workload = workloadOfPodName(odd.pod.Name)
		}
		f := Finding{Kind: KindStaleImage, Subject: workload, Object: "pod " + odd.pod.Namespace + "/" + odd.pod.Name, Namespace: odd.pod.Namespace,
			Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9, Time: errF.Time, Related: []string{odd.pod.Name}}
		f.setFact("pod", odd.pod.Name)
		f.setFact("image", odd.image)
		f.setFact("digest", odd.digest)
		f.setFact("siblings", strings.Join(sibs, ", "))
		f.setFact("siblings_n", fmt.Sprint(len(sibs)))
		f.setFact("siblings_digest", sibDigest)
		if st := odd.pod.Status.StartTime; st != nil {
			f.setFact("started", ts(st.Time))
		}
		f.setFact("line", errF.fact("line"))
		f.Evidence = []string{fmt.Sprintf("pod %s runs %s as %s; %s run it as %s", odd.pod.Name, odd.image, odd.digest, strings.Join(sibs, ", "), sibDigest)}
		if len(errF.Evidence) > 0 {
			f.Evidence = append(f.Evidence, errF.Evidence[0]+" (no other pod of "+workload+" logs it)")
		}
		f.Summary = fmt.Sprintf("errors of %s only in pod %s, on an older image digest", workload, odd.pod.Name)
		out = append(out, f)
	}
	return out
}

// oddPodError is the strongest log finding whose line comes from pod
// alone: its template's sources name pod and none of sibs, and some
// other template shows the siblings' logs were read.
func oddPodError(logs []LogSet, found []Finding, pod string, sibs []string) *Finding {
	named := func(srcs []string, src string) (podSeen, sibSeen bool) {
		if len(srcs) == 0 {
			srcs = []string{src}
		}
		for _, x := range srcs {
			podSeen = podSeen || x == pod
			sibSeen = sibSeen || slices.Contains(sibs, x)
		}
		return
	}
	siblingsRead := false
	var only []string // examples of templates seen in pod alone
	for _, ls := range logs {
		for _, t := range ls.Templates {
			p, sb := named(t.Sources, ls.Source)
			siblingsRead = siblingsRead || sb
			if p && !sb && t.Incident > 0 && t.Example != "" {
				only = append(only, t.Example)
			}
		}
	}
	if !siblingsRead {
		return nil
	}
	var best *Finding
	for i := range found {
		f := &found[i]
		if f.Source != SrcLogs || f.Severity < SevWarning || !strings.Contains(f.Object+" "+strings.Join(f.Evidence, " "), pod) {
			continue
		}
		text := f.fact("line") + " " + strings.Join(f.Evidence, " ")
		for _, ex := range only {
			if len(ex) > 80 {
				ex = ex[:80]
			}
			if strings.Contains(text, ex) && (best == nil || f.Weight > best.Weight) {
				best = f
			}
		}
	}
	return best
}
