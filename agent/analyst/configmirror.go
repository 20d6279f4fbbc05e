package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// A pod's Secret or ConfigMap is missing from its namespace because the
// controller that copies it there does not: the object lives in another
// namespace (a platform namespace of shared credentials) and a mirroring
// controller copies it to the namespaces its annotations permit, and the
// pod's namespace is not among them (a new namespace, a canary or preview
// namespace the list was never extended to). The kubelet reports only
// `secret "x" not found`; the cause is in the source object's annotations.
//
// The mirroring controllers read here, with their annotations:
//   - emberstack Reflector: reflector.v1.k8s.emberstack.com/
//     reflection-allowed(-namespaces), reflection-auto-enabled,
//     reflection-auto-namespaces (comma-separated names or regexes);
//   - mittwald kubernetes-replicator: replicator.v1.mittwald.de/
//     replicate-to (push) and replication-allowed(-namespaces) (pull, by a
//     target that names its source with replicate-from);
//   - appscode kubed (config-syncer): kubed.appscode.com/sync, a namespace
//     label selector (its namespaces' labels decide).
//
// The finding deepens the config error of the pod (configerror.go): the
// same subject and facts, one hop further, weighted just above it.

// mirrorAnnotations are the annotation prefixes of the mirroring
// controllers, with the controller's name.
var mirrorControllers = []struct{ prefix, name string }{
	{"reflector.v1.k8s.emberstack.com/", "Reflector (emberstack)"},
	{"replicator.v1.mittwald.de/", "kubernetes-replicator"},
	{"kubed.appscode.com/", "kubed (config-syncer)"},
}

// missingConfigNames are the names of the Secrets and ConfigMaps the
// pods' waiting containers and the events say are not found.
func missingConfigNames(k *K8sEvidence) map[string]bool {
	names := map[string]bool{}
	add := func(msg string) {
		for _, m := range findAllSubmatch(missingRefRE, msg, -1) {
			if m[2] != "" {
				names[m[2]] = true
			}
		}
	}
	for i := range k.Pods {
		for _, cs := range k.Pods[i].Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				add(w.Message)
			}
		}
		for _, cs := range k.Pods[i].Status.InitContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				add(w.Message)
			}
		}
	}
	for i := range k.Events {
		add(k.Events[i].Message)
	}
	return names
}

// mirrorVerdict is what a mirroring source's annotations say of one
// target namespace.
type mirrorVerdict struct {
	controller string
	// permits is false when the annotations keep the namespace out.
	permits bool
	// rule is the annotation (key: value) that decides.
	rule string
	// list is the namespaces (names or patterns) it names.
	list string
}

// mirrorPatternMatch reports whether ns matches a comma-separated list of
// names or regular expressions (anchored, as the controllers match them);
// an empty list matches every namespace.
func mirrorPatternMatch(list, ns string) bool {
	list = strings.TrimSpace(list)
	if list == "" {
		return true
	}
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if p == ns {
			return true
		}
		if re, err := regexp.Compile("^(?:" + p + ")$"); err == nil && re.MatchString(ns) {
			return true
		}
	}
	return false
}

// mirrorJudge reads a source object's mirroring annotations for target
// namespace ns; ok is false when the object carries none (or is itself a
// copy).
func mirrorJudge(ann map[string]string, ns string) (mirrorVerdict, bool) {
	get := func(prefix, k string) (string, bool) {
		v, ok := ann[prefix+k]
		return strings.TrimSpace(v), ok
	}
	const refl = "reflector.v1.k8s.emberstack.com/"
	if _, copy := get(refl, "reflects"); !copy {
		allowed, hasAllowed := get(refl, "reflection-allowed")
		if hasAllowed {
			v := mirrorVerdict{controller: mirrorControllers[0].name, permits: true}
			allowNS, _ := get(refl, "reflection-allowed-namespaces")
			auto, _ := get(refl, "reflection-auto-enabled")
			autoNS, hasAutoNS := get(refl, "reflection-auto-namespaces")
			switch {
			case !strings.EqualFold(allowed, "true"):
				v.permits, v.rule = false, refl+"reflection-allowed: "+allowed
			case !mirrorPatternMatch(allowNS, ns):
				v.permits, v.rule, v.list = false, refl+"reflection-allowed-namespaces: "+allowNS, allowNS
				if strings.EqualFold(auto, "true") && hasAutoNS && !mirrorPatternMatch(autoNS, ns) {
					v.rule += "; " + refl + "reflection-auto-namespaces: " + autoNS
				}
			case strings.EqualFold(auto, "true") && hasAutoNS && !mirrorPatternMatch(autoNS, ns):
				v.permits, v.rule, v.list = false, refl+"reflection-auto-namespaces: "+autoNS, autoNS
			case !strings.EqualFold(auto, "true"):
				// Permitted, but copied only where a target object asks
				// for it (reflects); nothing copies it on its own.
				v.permits, v.rule = false, refl+"reflection-auto-enabled: "+orWord(auto, "(unset)")
			}
			return v, true
		}
	}
	const repl = "replicator.v1.mittwald.de/"
	if _, copy := get(repl, "replicated-from-version"); !copy {
		if to, ok := get(repl, "replicate-to"); ok {
			v := mirrorVerdict{controller: mirrorControllers[1].name, permits: mirrorPatternMatch(to, ns), list: to}
			if to == "" {
				v.permits = false
			}
			v.rule = repl + "replicate-to: " + to
			return v, true
		}
		if allowed, ok := get(repl, "replication-allowed"); ok {
			allowNS, _ := get(repl, "replication-allowed-namespaces")
			v := mirrorVerdict{controller: mirrorControllers[1].name, permits: strings.EqualFold(allowed, "true") && mirrorPatternMatch(allowNS, ns), list: allowNS}
			v.rule = repl + "replication-allowed-namespaces: " + allowNS
			if !strings.EqualFold(allowed, "true") {
				v.rule = repl + "replication-allowed: " + allowed
			}
			return v, true
		}
	}
	const kubed = "kubed.appscode.com/"
	if _, copy := get(kubed, "origin"); !copy {
		if sel, ok := get(kubed, "sync"); ok {
			// A namespace selector: whether it matches depends on the
			// namespace's labels, which are not read; it is named, not
			// judged.
			return mirrorVerdict{controller: mirrorControllers[2].name, permits: true, rule: kubed + "sync: " + orWord(sel, `""`), list: sel}, true
		}
	}
	return mirrorVerdict{}, false
}

// detectConfigMirror follows a missing Secret or ConfigMap of a config
// error to the object of that name in another namespace that a mirroring
// controller copies, and to what its annotations say of the pod's
// namespace.
func detectConfigMirror(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, f := range found {
		if f.Kind != KindConfigError || f.Namespace == "" || f.fact("mirror_source") != "" {
			continue
		}
		kind, name, ok := strings.Cut(f.fact("missing"), " ")
		if !ok || (kind != "secret" && kind != "configmap") {
			continue
		}
		var hits []string
		var g *Finding
		for i := range ev.K8s.ConfigSources {
			src := &ev.K8s.ConfigSources[i]
			if !strings.EqualFold(src.Kind, kind) || src.Meta.Name != name || src.Meta.Namespace == f.Namespace {
				continue
			}
			v, ok := mirrorJudge(src.Meta.Annotations, f.Namespace)
			if !ok {
				continue
			}
			hits = append(hits, src.Meta.Namespace)
			c := f
			c.Facts = maps.Clone(f.Facts)
			c.Evidence = slices.Clone(f.Evidence)
			c.Related = append(slices.Clone(f.Related), src.Meta.Namespace+"/"+name)
			c.setFact("mirror_source", src.Meta.Namespace+"/"+name)
			c.setFact("mirror_kind", src.Kind)
			c.setFact("mirror_controller", v.controller)
			c.setFact("mirror_rule", v.rule)
			c.setFact("mirror_list", v.list)
			if v.permits {
				c.setFact("mirror_permits", "true")
				c.Weight = f.Weight
			} else {
				c.Weight = min(1, f.Weight+0.05)
			}
			c.Evidence = append(c.Evidence, fmt.Sprintf("%s %s/%s carries the %s annotation %s", strings.ToLower(src.Kind), src.Meta.Namespace, name, v.controller, v.rule))
			g = &c
		}
		// One source decides; several (each a namespace's own copy
		// source) leave it unsaid.
		if g != nil && len(hits) == 1 {
			out = append(out, *g)
		}
	}
	return out
}

// mirrorClause is the config error's hop to its mirroring source.
func mirrorClause(h *Hypothesis) string {
	src := h.fact("mirror_source")
	if src == "" {
		return ""
	}
	ns := h.top().Namespace
	kind := h.fact("mirror_kind")
	if h.fact("mirror_permits") == "true" {
		return fmt.Sprintf(": it lives as %s %s, which %s mirrors to the namespaces its annotations name (%s), yet no copy exists in %s: the mirroring controller did not make it (is it running, does it watch the new namespace?)", kind, src, h.fact("mirror_controller"), h.fact("mirror_rule"), ns)
	}
	d := fmt.Sprintf(": it lives as %s %s, which %s mirrors only to the namespaces its annotations permit, and %s is not among them (%s)", kind, src, h.fact("mirror_controller"), ns, h.fact("mirror_rule"))
	return d + ", so no copy reaches " + ns
}

// mirrorRecommend is what to do when the mirror leaves the namespace out.
func mirrorRecommend(h *Hypothesis, r *recommender) bool {
	src := h.fact("mirror_source")
	if src == "" {
		return false
	}
	ns := h.top().Namespace
	srcNS, name, _ := strings.Cut(src, "/")
	if h.fact("mirror_permits") == "true" {
		r.high("Check the %s controller (its pods and logs) and why it made no copy of %s in namespace %s", h.fact("mirror_controller"), src, ns)
	} else {
		r.high("Add namespace %s to the mirror annotations of %s %s (now %s; kubectl annotate %s %s -n %s --overwrite ...): the controller then copies it and the pods of %s start", ns, h.fact("mirror_kind"), src, h.fact("mirror_rule"), strings.ToLower(h.fact("mirror_kind")), name, srcNS, h.Subject)
	}
	r.med("Create new namespaces (canaries, previews) from the same list the shared Secrets' mirror annotations use, or use patterns that cover them")
	r.low("Alert on pods in CreateContainerConfigError")
	return true
}
