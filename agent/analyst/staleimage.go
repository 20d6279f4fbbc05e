package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
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
//
// The same cause without errors: a new build pushed under a tag that
// already existed (:stable, :main, a re-pushed version) reaches only the
// nodes that pull it. With imagePullPolicy IfNotPresent (the default for
// every tag but :latest) a node that has the tag cached starts the old
// image ("Container image "x:stable" already present on machine"); only a
// node without it pulls the new one ("Successfully pulled image"). A
// restart leaves the pods of one ReplicaSet on different digests, the old
// build answering most requests: "the update did not take". The pods'
// image IDs (kubectl describe's "Image ID", custom-columns or jsonpath of
// .status.containerStatuses[].imageID, the docker-pullable:// form), the
// kubelet's Pulled events, the template's pull policy and what the
// registry says the tag is now (crane digest, skopeo inspect, docker
// buildx imagetools inspect) are its chain (detectCachedTags).

// KindStaleImage is a workload's errors confined to the one pod that runs
// a different image digest than its siblings.
const KindStaleImage Kind = "stale_image"

var staleImage = &mechanism{
	kind:  KindStaleImage,
	class: classCause,
	label: "pods of one workload run different builds of one mutable image tag (an older digest cached or pulled)",
	detect: func(ev *Gathered, found []Finding) []Finding {
		odd := detectStaleImage(ev, found)
		return append(odd, detectCachedTags(ev, odd)...)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if h.fact("tag") == "" {
			return false
		}
		t := changeText(c)
		return c.Kind == KindDeploy || strings.Contains(t, "tag") || strings.Contains(t, "push") || strings.Contains(t, "restart") || strings.Contains(t, "image")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		if h.fact("tag") != "" {
			return describeCachedTag(h)
		}
		d := fmt.Sprintf("the errors of %s come from one pod only, %s, which runs a different image than its %s siblings: the same reference %s resolved to digest %s on it, while %s run %s",
			h.Subject, h.fact("pod"), h.fact("siblings_n"), h.fact("image"), shortDigest(h.fact("digest")), h.fact("siblings"), shortDigest(h.fact("siblings_digest")))
		d += h.wrapped(" (it started at ", "started", ", the others before)")
		d += h.quoteClause("; its error: ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("tag") != "" {
			recommendCachedTag(h, r)
			return
		}
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

var (
	// digestRE is an image ID's digest.
	digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)
	// registryDigestCmdRE are commands that ask the registry what a tag
	// points at now.
	registryDigestCmdRE = regexp.MustCompile(`(?i)\bcrane (?:digest|manifest)|\bskopeo inspect|imagetools inspect|docker manifest inspect|\bregctl (?:image )?digest|\boras manifest fetch`)
)

// podImage is what one pod of a workload runs.
type podImage struct {
	pod, node, digest string
}

// detectCachedTags finds the ReplicaSets (StatefulSets, DaemonSets) whose
// pods run one image reference, by tag, with different digests, with no
// finding of detectStaleImage on their workload (done).
func detectCachedTags(ev *Gathered, done []Finding) []Finding {
	skip := map[string]bool{}
	for _, f := range done {
		skip[f.Namespace+"/"+f.Subject] = true
	}
	type group struct {
		ns, workload, image string
		policy              corev1.PullPolicy
		pods                map[string]*podImage
	}
	groups := map[string]*group{}
	var order []string
	podGroup := map[string]*group{} // ns/pod → its group
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		wl := WorkloadOfPod(p)
		if skip[p.Namespace+"/"+wl] {
			continue
		}
		// One owner: the pods of one template (a rollout's old and new
		// ReplicaSets may run different builds of one tag by design).
		owner := templateOwner(p)
		for _, c := range p.Spec.Containers {
			if c.Image == "" || strings.Contains(c.Image, "@") {
				continue
			}
			key := p.Namespace + "/" + owner + "|" + c.Image
			g := groups[key]
			if g == nil {
				g = &group{ns: p.Namespace, workload: wl, image: c.Image, pods: map[string]*podImage{}}
				groups[key] = g
				order = append(order, key)
			}
			if c.ImagePullPolicy != "" {
				g.policy = c.ImagePullPolicy
			}
			pi := &podImage{pod: p.Name, node: p.Spec.NodeName}
			for _, s := range p.Status.ContainerStatuses {
				if s.Name == c.Name {
					pi.digest = findString(digestRE, imageDigest(s.ImageID))
				}
			}
			g.pods[p.Name] = pi
			podGroup[p.Namespace+"/"+p.Name] = g
		}
	}
	// Image IDs a custom-columns or jsonpath output listed per pod (a
	// pod a table listed without its containers joins its owner's group).
	pods := map[string]*corev1.Pod{}
	for i := range ev.K8s.Pods {
		pods[ev.K8s.Pods[i].Name] = &ev.K8s.Pods[i]
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			d := findString(digestRE, l)
			if d == "" {
				continue
			}
			var p *corev1.Pod
			image := ""
			for _, w := range strings.Fields(l) {
				if q := pods[w]; q != nil && (c.Namespace == "" || c.Namespace == q.Namespace) {
					p = q
				}
				if strings.Contains(w, "/") && strings.Contains(w, ":") && !strings.Contains(w, "@") && !strings.Contains(w, "://") {
					image = w
				}
			}
			if p == nil || skip[p.Namespace+"/"+WorkloadOfPod(p)] {
				continue
			}
			if image == "" {
				image = templateImage(ev, p, l)
			}
			var g *group
			for _, key := range order {
				if x := groups[key]; x.ns == p.Namespace && strings.HasPrefix(key, p.Namespace+"/"+templateOwner(p)+"|") && (image == "" || x.image == image) {
					g = x
				}
			}
			if g == nil && image != "" {
				key := p.Namespace + "/" + templateOwner(p) + "|" + image
				g = &group{ns: p.Namespace, workload: WorkloadOfPod(p), image: image, pods: map[string]*podImage{}}
				groups[key] = g
				order = append(order, key)
			}
			if g == nil {
				continue
			}
			pi := g.pods[p.Name]
			if pi == nil {
				pi = &podImage{pod: p.Name, node: p.Spec.NodeName}
				g.pods[p.Name] = pi
				podGroup[p.Namespace+"/"+p.Name] = g
			}
			pi.digest = d
		}
	}
	// The pull policy of the workload's template.
	for i := range ev.K8s.Deployments {
		dp := &ev.K8s.Deployments[i]
		for _, c := range dp.Spec.Template.Spec.Containers {
			for _, g := range groups {
				if g.ns == dp.Namespace && g.workload == dp.Name && g.image == c.Image && c.ImagePullPolicy != "" {
					g.policy = c.ImagePullPolicy
				}
			}
		}
	}
	var out []Finding
	for _, key := range order {
		g := groups[key]
		byDigest := map[string][]*podImage{}
		for _, pi := range g.pods {
			if pi.digest != "" {
				byDigest[pi.digest] = append(byDigest[pi.digest], pi)
			}
		}
		if len(byDigest) < 2 {
			continue
		}
		tag := imageTag(g.image)
		policy := string(g.policy)
		if policy == "" {
			if tag == "latest" {
				continue // :latest defaults to Always
			}
			policy = "IfNotPresent (the default for a tag other than :latest)"
		}
		if g.policy == corev1.PullAlways {
			continue // every start asks the registry: not a cached tag
		}
		f := Finding{Kind: KindStaleImage, Subject: g.workload, Object: "deployment " + g.ns + "/" + g.workload, Namespace: g.ns,
			Severity: SevCritical, Weight: 0.92, Source: SrcKubernetes}
		f.setFact("image", g.image)
		f.setFact("tag", ":"+tag)
		f.setFact("pull_policy", policy)
		f.setFact("current", "true")
		// The registry's word on what the tag is now, and on the others.
		tagNow, named := registryDigests(ev, g.image)
		// The kubelet's Pulled events: cached on some nodes, pulled on
		// others.
		var cached, pulled []string
		isCached := map[string]bool{}
		for _, e := range ev.K8s.Events {
			if e.Reason != "Pulled" || e.InvolvedObject.Namespace != "" && e.InvolvedObject.Namespace != g.ns || podGroup[g.ns+"/"+e.InvolvedObject.Name] != g {
				continue
			}
			if !strings.Contains(e.Message, g.image) {
				continue
			}
			switch {
			case strings.Contains(e.Message, "already present on machine"):
				cached = appendOnce(cached, e.InvolvedObject.Name)
				isCached[e.InvolvedObject.Name] = true
			case strings.Contains(e.Message, "Successfully pulled"):
				pulled = appendOnce(pulled, e.InvolvedObject.Name)
			}
		}
		pulled = slices.DeleteFunc(pulled, func(p string) bool { return isCached[p] })
		// The chain: a pod that started from the node's cache runs
		// another build than one that pulled the tag, or the registry
		// says the tag is now another digest than some pods run (with the
		// cache in the way: IfNotPresent said or seen).
		chain := false
		for _, c := range cached {
			for _, p := range pulled {
				a, b := g.pods[c], g.pods[p]
				chain = chain || a != nil && b != nil && a.digest != "" && b.digest != "" && a.digest != b.digest
			}
		}
		if !chain && tagNow != "" && (g.policy == corev1.PullIfNotPresent || g.policy == corev1.PullNever || len(cached) > 0) {
			for d := range byDigest {
				chain = chain || d != tagNow
			}
		}
		if !chain {
			continue
		}
		digests := make([]string, 0, len(byDigest))
		for d := range byDigest {
			digests = append(digests, d)
		}
		sort.Slice(digests, func(i, j int) bool {
			return len(byDigest[digests[i]]) > len(byDigest[digests[j]]) || len(byDigest[digests[i]]) == len(byDigest[digests[j]]) && digests[i] < digests[j]
		})
		var parts, ev1 []string
		for _, d := range digests {
			ps := byDigest[d]
			sort.Slice(ps, func(i, j int) bool { return ps[i].pod < ps[j].pod })
			var names []string
			for _, pi := range ps {
				n := pi.pod
				if pi.node != "" {
					n += " on " + pi.node
				}
				names = append(names, n)
			}
			what := shortDigest(d)
			switch {
			case d == tagNow:
				what += " (what :" + tag + " is now)"
			case named[d] != "":
				what += " (" + named[d] + ")"
			}
			parts = append(parts, fmt.Sprintf("%s on %s", what, plural(len(ps), "pod", "pods")))
			ev1 = append(ev1, fmt.Sprintf("%s: %s", what, strings.Join(names, ", ")))
		}
		f.setFact("digests", strings.Join(parts, ", "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("pods of %s/%s run %s with %d digests: %s", g.ns, g.workload, g.image, len(byDigest), strings.Join(ev1, "; ")))
		f.Evidence = append(f.Evidence, fmt.Sprintf("imagePullPolicy of %s: %s, for the mutable tag :%s", g.workload, policy, tag))
		if tagNow != "" {
			r := fmt.Sprintf(":%s is %s", tag, shortDigest(tagNow))
			for d, n := range named {
				if d != tagNow && byDigest[d] != nil {
					r += fmt.Sprintf(", and %s is %s", shortDigest(d), n)
				}
			}
			f.setFact("registry", r)
			f.Evidence = append(f.Evidence, "registry: "+r)
		}
		if len(cached) > 0 {
			sort.Strings(cached)
			f.setFact("cached", strings.Join(cached, ", "))
			f.Evidence = append(f.Evidence, fmt.Sprintf("event Pulled on %s: \"Container image %q already present on machine\"", strings.Join(cached, ", "), g.image))
			f.setFact("why", fmt.Sprintf("nodes with :%s cached started the old build (already present on machine, pull policy %s)", tag, strings.Fields(policy)[0]))
		} else {
			f.setFact("why", fmt.Sprintf("pods of one tag :%s run %d digests under pull policy %s", tag, len(byDigest), strings.Fields(policy)[0]))
		}
		if len(pulled) > 0 {
			sort.Strings(pulled)
			f.setFact("pulled", strings.Join(pulled, ", "))
		}
		// When the pods started: the restart that did not update them.
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if podGroup[p.Namespace+"/"+p.Name] == g && p.Status.StartTime != nil && (f.Time.IsZero() || p.Status.StartTime.Time.Before(f.Time)) {
				f.Time = p.Status.StartTime.Time
			}
		}
		f.Summary = fmt.Sprintf("%s: pods run %d builds of %s (pull policy %s)", g.workload, len(byDigest), g.image, strings.Fields(policy)[0])
		out = append(out, f)
	}
	return out
}

// imageTag is an image reference's tag, "latest" when it has none.
func imageTag(image string) string {
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if _, t, ok := strings.Cut(name, ":"); ok {
		return t
	}
	return "latest"
}

// registryDigests reads what registry commands printed for the image's
// repository: the digest its tag is now, and the tags other digests were
// named by ("sha256:3b0f… is :1.17.3").
func registryDigests(ev *Gathered, image string) (tagNow string, named map[string]string) {
	named = map[string]string{}
	repo := strings.TrimSuffix(image, ":"+imageTag(image))
	for _, c := range ev.Commands {
		if !matchLine(registryDigestCmdRE, c.Command) || !strings.Contains(c.Command, repo) {
			continue
		}
		var d string
		for _, l := range c.Lines {
			if d = findString(digestRE, l); d != "" {
				break
			}
		}
		if d == "" {
			continue
		}
		switch i := strings.Index(c.Command, repo); {
		case strings.Contains(c.Command[i:], image+" ") || strings.HasSuffix(c.Command, image):
			tagNow = d
		default:
			rest := c.Command[i+len(repo):]
			if strings.HasPrefix(rest, ":") {
				named[d] = strings.Fields(rest)[0]
			}
		}
	}
	return tagNow, named
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// describeCachedTag explains a mutable tag the nodes' caches answer.
func describeCachedTag(h *Hypothesis) string {
	d := fmt.Sprintf("%s runs different builds under one image reference %s: its pods run %s", h.Subject, h.fact("image"), h.fact("digests"))
	d += fmt.Sprintf(". The tag %s is mutable (a new build was pushed under it) and the pull policy is %s, so a node that has the tag cached starts the old image without asking the registry", h.fact("tag"), orWord(h.fact("pull_policy"), "IfNotPresent"))
	if n := h.fact("cached"); n != "" {
		d += fmt.Sprintf(" (the kubelet: \"already present on machine\" for %s)", n)
	}
	if p := h.fact("pulled"); p != "" {
		d += fmt.Sprintf(", and only %s pulled it", p)
	}
	if r := h.fact("registry"); r != "" {
		d += fmt.Sprintf("; the registry says %s", r)
	}
	return d + "; restarting the pods does not update them"
}

// recommendCachedTag: an immutable reference, or a pull policy that asks
// the registry.
func recommendCachedTag(h *Hypothesis, r *recommender) {
	r.high("Deploy %s by an immutable reference: the new version's own tag or its digest (image@sha256:...), so every node runs the same build", h.Subject)
	r.high("Or set imagePullPolicy: Always on %s's containers and restart it, so each node asks the registry what %s is now", h.Subject, orWord(h.fact("tag"), "the tag"))
	r.med("Check which build each pod runs from its imageID (kubectl get pods -o custom-columns=NAME:.metadata.name,IMAGEID:.status.containerStatuses[0].imageID) after every release")
	r.low("Stop re-pushing moving tags (:stable, :latest) for deployments; have CI write the digest into the manifest")
}

// templateOwner names the pods of one template: the pod's owner (its
// ReplicaSet), else its name less the pod's own suffix.
func templateOwner(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		return o.Name
	}
	if i := strings.LastIndex(p.Name, "-"); i > 0 {
		return p.Name[:i]
	}
	return p.Name
}

// templateImage is the image reference, in the pod's Deployment template,
// of the repository an image ID line names ("" when not known).
func templateImage(ev *Gathered, p *corev1.Pod, line string) string {
	for i := range ev.K8s.Deployments {
		dp := &ev.K8s.Deployments[i]
		if dp.Namespace != p.Namespace || dp.Name != WorkloadOfPod(p) {
			continue
		}
		for _, c := range dp.Spec.Template.Spec.Containers {
			repo := strings.TrimSuffix(c.Image, ":"+imageTag(c.Image))
			if strings.Contains(line, repo+"@") {
				return c.Image
			}
		}
	}
	return ""
}
