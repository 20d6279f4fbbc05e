package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A container whose configuration the kubelet cannot assemble
// (CreateContainerConfigError): a Secret or ConfigMap the pod spec
// references, or a key in it, does not exist.
var configError = &mechanism{
	kind:      KindConfigError,
	class:     classCause,
	label:     "container config error",
	container: configErrorContainer,
	event: func(e *corev1.Event) (float64, bool) {
		msg := strings.ToLower(e.Message)
		switch e.Reason {
		case "FailedMount", "FailedAttachVolume", "FailedMapVolume":
			return 0.85, missingConfigRef(msg)
		case "Failed":
			return 0.85, !imageEvent(msg) && !startFailureEvent(e) && (strings.Contains(msg, "createcontainerconfigerror") || missingConfigRef(msg))
		}
		return 0, false
	},
	eventCritical: true,
	eventFacts: func(f *Finding, e *corev1.Event) {
		f.setFact("missing", missingRef(e.Message))
		volumeKeyFacts(f, e.Message)
	},
	detect: func(ev *Gathered, found []Finding) []Finding {
		return append(detectVolumeKeySource(ev, found), detectConfigMirror(ev, found)...)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		d := strings.ToLower(c.fact("description") + " " + c.Summary)
		return c.Kind == KindConfigChange || strings.Contains(d, "configmap") || strings.Contains(d, "secret")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		if key := h.fact("volume_key"); key != "" {
			kind := volumeKindWord(h.fact("volume_kind"))
			d := fmt.Sprintf("%s pods stay in ContainerCreating: the kubelet cannot mount their volume %s (FailedMount), because the volume asks for the key %s", h.Subject, orWord(h.fact("volume"), "(unnamed)"), key)
			if src := h.fact("volume_source"); src != "" {
				d += fmt.Sprintf(" of %s %s, which has no such key", kind, src)
			} else {
				d += fmt.Sprintf(" of its %s, which has no such key", kind)
			}
			d += fmt.Sprintf(" (the %s's keys were renamed or the item is missing): %s", kind, quote(truncate(h.fact("message"), 200), 210))
			return d
		}
		d := fmt.Sprintf("%s pods cannot start: CreateContainerConfigError", h.Subject)
		if m := h.fact("missing"); m != "" {
			d += fmt.Sprintf(", the %s referenced by the pod spec is missing (not found)", m)
			d += mirrorClause(h)
		} else if m := h.fact("message"); m != "" {
			d += ": " + truncate(m, 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if mirrorRecommend(h, r) {
			return
		}
		r.rollback()
		if key := h.fact("volume_key"); key != "" {
			kind := volumeKindWord(h.fact("volume_kind"))
			src := orWord(h.fact("volume_source"), "the "+kind)
			r.high("Make the volume %s of %s and %s agree: add the key %s to %s, or change the volume's items (and the mount's subPath) to a key %s holds", orWord(h.fact("volume"), ""), h.Subject, src, key, src, src)
			r.med("Render the %s and the workloads that mount its keys from one change, and check item keys against the %s before rollout", kind, kind)
			r.low("Alert on pods stuck in ContainerCreating")
			return
		}
		r.high("Create the missing %s in namespace %s, or fix the reference in the pod spec of %s", orWord(h.fact("missing"), "secret or configmap"), orWord(h.top().Namespace, orWord(sc.Namespace, "the workload's")), h.Subject)
		r.med("Check the deploy pipeline applies secrets and configmaps before the workloads that use them")
		r.low("Validate manifests against the cluster (referenced secrets/configmaps exist) before rollout")
	},
}

// missingConfigRef reports whether a (lowercase) event message says a
// referenced Secret or ConfigMap, or a key in it, does not exist.
func missingConfigRef(msg string) bool {
	if !strings.Contains(msg, "secret") && !strings.Contains(msg, "configmap") {
		return false
	}
	return strings.Contains(msg, "not found") || strings.Contains(msg, "couldn't find key") || strings.Contains(msg, "references non-existent")
}

// volumeKeyRE reads the kubelet's word that a ConfigMap or Secret volume
// (or a projected one) asks for an item the object does not hold:
// `MountVolume.SetUp failed for volume "nginx-conf" : configmap references
// non-existent config key: default.conf`, `... : references non-existent
// secret key: tls.crt`.
var volumeKeyRE = regexp.MustCompile(`(?i)(?:for volume "([^"]+)"\s*:\s*)?(?:(configmap|secret) )?references non-existent (config|secret) key: ([\w./-]+)`)

// volumeKeyFacts sets the facts of a volume item missing from its
// ConfigMap or Secret: the volume, the key and the kind of object.
func volumeKeyFacts(f *Finding, msg string) {
	m := findSubmatch(volumeKeyRE, msg)
	if m == nil {
		return
	}
	kind := "configmap"
	if strings.EqualFold(m[3], "secret") {
		kind = "secret"
	}
	f.setFact("volume", m[1])
	f.setFact("volume_key", m[4])
	f.setFact("volume_kind", kind)
	f.setFact("missing", fmt.Sprintf("key %s in the %s of volume %s", m[4], kind, orWord(m[1], "")))
}

// detectVolumeKeySource names the ConfigMap or Secret a volume with a
// missing item projects, from the spec of the pod the kubelet failed to
// mount it for: a finding of the pod, weighted above its event's.
func detectVolumeKeySource(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, f := range found {
		if f.Kind != KindConfigError || f.fact("volume_key") == "" || !strings.HasPrefix(f.Object, "pod ") {
			continue
		}
		ns, name, _ := strings.Cut(strings.TrimPrefix(f.Object, "pod "), "/")
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if p.Namespace != ns || p.Name != name {
				continue
			}
			obj := volumeSource(p, f.fact("volume"), f.fact("volume_kind"))
			if obj == "" {
				break
			}
			g := f
			g.Facts = maps.Clone(f.Facts)
			g.Evidence = slices.Clone(f.Evidence)
			g.Weight = min(1, f.Weight+0.05)
			g.setFact("volume_source", obj)
			g.setFact("missing", fmt.Sprintf("key %s in %s %s/%s", f.fact("volume_key"), volumeKindWord(f.fact("volume_kind")), ns, obj))
			g.Evidence = append([]string{fmt.Sprintf("pod %s/%s mounts volume %s from %s %s, which has no key %s", ns, name, f.fact("volume"), volumeKindWord(f.fact("volume_kind")), obj, f.fact("volume_key"))}, g.Evidence...)
			out = append(out, g)
			break
		}
	}
	return out
}

// volumeSource is the name of the ConfigMap or Secret a pod's volume
// projects ("" when the spec does not say).
func volumeSource(p *corev1.Pod, volume, kind string) string {
	for _, v := range p.Spec.Volumes {
		if volume != "" && v.Name != volume {
			continue
		}
		switch {
		case kind == "configmap" && v.ConfigMap != nil:
			return v.ConfigMap.Name
		case kind == "secret" && v.Secret != nil:
			return v.Secret.SecretName
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if kind == "configmap" && s.ConfigMap != nil {
					return s.ConfigMap.Name
				}
				if kind == "secret" && s.Secret != nil {
					return s.Secret.Name
				}
			}
		}
	}
	return ""
}

func volumeKindWord(kind string) string {
	if kind == "secret" {
		return "Secret"
	}
	return "ConfigMap"
}

// createErrorReasons are the waiting reasons of a container the kubelet
// could not create or run.
var createErrorReasons = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// configErrorContainer judges a container the kubelet cannot create for
// its configuration (a missing Secret, ConfigMap or key), as opposed to a
// command that cannot start (startFailureContainer).
func configErrorContainer(c *containerState) []Finding {
	if c.killedByOOM() || !c.waitingFor(createErrorReasons...) || IsStartFailure(c.Waiting.Reason, c.Waiting.Message, 0) || matchLine(nonRootRefusedRE, c.Waiting.Message) {
		return nil
	}
	waiting := c.Waiting
	f := c.Base
	f.Kind, f.Severity, f.Weight = KindConfigError, SevCritical, 0.95
	f.Time = containerSince(c.Pod, c.Status)
	f.Summary = fmt.Sprintf("%s cannot start: %s: %s", c.Object, waiting.Reason, waiting.Message)
	f.Evidence = []string{fmt.Sprintf("%s is waiting with reason %s: %s", c.Object, waiting.Reason, quote(waiting.Message, 300))}
	f.setFact("reason", waiting.Reason)
	f.setFact("message", waiting.Message)
	f.setFact("missing", missingRef(waiting.Message))
	f.setFact("container", c.Status.Name)
	return []Finding{f}
}

var missingRefRE = regexp.MustCompile(`(?i)(secret|configmap)s? "?([\w.-]+)"? not found|couldn't find key ([\w.-]+) in (Secret|ConfigMap) ([\w./-]+)`)

// missingRef extracts `secret "db-credentials"` from a config error.
func missingRef(msg string) string {
	m := findSubmatch(missingRefRE, msg)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return strings.ToLower(m[1]) + " " + m[2]
	default:
		return fmt.Sprintf("key %s in %s %s", m[3], strings.ToLower(m[4]), m[5])
	}
}
