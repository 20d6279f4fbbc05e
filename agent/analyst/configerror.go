package analyst

import (
	"fmt"
	"regexp"
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
	eventFacts:    func(f *Finding, e *corev1.Event) { f.setFact("missing", missingRef(e.Message)) },
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		d := strings.ToLower(c.fact("description") + " " + c.Summary)
		return c.Kind == KindConfigChange || strings.Contains(d, "configmap") || strings.Contains(d, "secret")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s pods cannot start: CreateContainerConfigError", h.Subject)
		if m := h.fact("missing"); m != "" {
			d += fmt.Sprintf(", the %s referenced by the pod spec is missing (not found)", m)
		} else if m := h.fact("message"); m != "" {
			d += ": " + truncate(m, 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
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
	return strings.Contains(msg, "not found") || strings.Contains(msg, "couldn't find key")
}

// createErrorReasons are the waiting reasons of a container the kubelet
// could not create or run.
var createErrorReasons = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// configErrorContainer judges a container the kubelet cannot create for
// its configuration (a missing Secret, ConfigMap or key), as opposed to a
// command that cannot start (startFailureContainer).
func configErrorContainer(c *containerState) []Finding {
	if c.killedByOOM() || !c.waitingFor(createErrorReasons...) || IsStartFailure(c.Waiting.Reason, c.Waiting.Message, 0) {
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
	m := missingRefRE.FindStringSubmatch(msg)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return strings.ToLower(m[1]) + " " + m[2]
	default:
		return fmt.Sprintf("key %s in %s %s", m[3], strings.ToLower(m[4]), m[5])
	}
}
