package analyst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A container whose command or entrypoint the runtime cannot execute
// (StartError, RunContainerError, exit 126/127/128): the executable does
// not exist in the image, is built for another architecture, or is not
// executable. The application never ran.
var startFailureM = &mechanism{
	kind:  KindStartFailure,
	class: classCause,
	label: "container cannot start (bad command/entrypoint or image)",
	event: func(e *corev1.Event) (float64, bool) {
		return 0.85, startFailureEvent(e)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || c.fact("image") != "" || strings.Contains(strings.ToLower(c.fact("description")+" "+c.Summary), "image")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		msg := orWord(h.fact("start_message"), h.fact("message"))
		d := fmt.Sprintf("%s containers cannot start: the container's command/entrypoint cannot be executed", h.Subject)
		if m := orWord(h.fact("start_mechanism"), startMechanism(msg)); m != "" {
			d += " — " + m
		}
		if r := h.fact("reason"); r != "" {
			d += fmt.Sprintf(" (%s", r)
			if c := h.fact("exit_code"); c != "" {
				d += ", exit code " + c
			}
			d += ")"
		}
		return d + ": " + quote(truncate(msg, 220), 230) + "; a bad image or command, so the new pods crash-loop"
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Roll %s back to the last image that starts, or fix its command/entrypoint so it names an executable that exists in the image%s", h.Subject, parenthesized(h.fact("image")))
		r.med("Check the image's base (distroless/scratch images have no shell or tools), its architecture against the nodes', and the executable bit of the entrypoint")
		r.low("Smoke-test new images in CI by starting them with the deployment's command and args before rollout")
	},
}

// startFailureEvent reports whether a kubelet "Failed" event says the
// container's command cannot be started (not an image pull).
func startFailureEvent(e *corev1.Event) bool {
	msg := strings.ToLower(e.Message)
	return e.Reason == "Failed" && !imageEvent(msg) && IsStartFailure("", e.Message, 128) &&
		(strings.Contains(msg, "exec") || strings.Contains(msg, "runc") || strings.Contains(msg, "oci runtime"))
}
