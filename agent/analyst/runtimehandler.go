package analyst

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A pod whose RuntimeClass names a handler (gVisor's runsc, Kata's kata,
// a GPU runtime) that the container runtime of its node does not have.
// Only some nodes are set up with the handler; the RuntimeClass keeps its
// pods on them through its scheduling block (a nodeSelector and the
// tolerations of those nodes' taints). A RuntimeClass without it (created
// by hand without one, or recreated by a chart that dropped it) lets the
// scheduler place the pods anywhere, and on a node without the handler the
// kubelet cannot create their sandbox: containerd says 'no runtime for
// "runsc" is configured', CRI-O 'failed to find runtime handler runsc from
// runtime list'. The pods stay in ContainerCreating with
// FailedCreatePodSandBox events while the old ones run: neither the image
// nor the application is at fault.

// KindRuntimeHandler is a pod's RuntimeClass handler missing on its node.
const KindRuntimeHandler Kind = "runtime_handler"

var runtimeHandler = &mechanism{
	kind:          KindRuntimeHandler,
	class:         classCause,
	label:         "the node's container runtime lacks the RuntimeClass handler",
	eventCritical: true,
	event: func(e *corev1.Event) (float64, bool) {
		if e.Reason != "FailedCreatePodSandBox" || findSubmatch(runtimeHandlerRE, e.Message) == nil {
			return 0, false
		}
		return 0.9, true
	},
	eventFacts: func(f *Finding, e *corev1.Event) {
		if h := handlerOf(e.Message); h != "" {
			f.setFact("handler", h)
		}
	},
	detect: refineRuntimeHandler,
	related: func(h *Hypothesis, f *Finding) bool {
		// Pods not ready, a rollout stuck while the sandboxes fail.
		return (f.Kind == KindProbeFailure || f.Kind == KindRolloutStuck) && f.Subject == h.Subject
	},
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		if rc := strings.ToLower(h.fact("runtimeclass")); rc != "" && strings.Contains(t, rc) {
			return true
		}
		if hd := strings.ToLower(h.fact("handler")); hd != "" && strings.Contains(t, hd) {
			return true
		}
		return strings.Contains(t, "runtimeclass") || strings.Contains(t, "runtime class")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		handler := orWord(h.fact("handler"), "its RuntimeClass names")
		rc := "its RuntimeClass"
		if n := h.fact("runtimeclass"); n != "" {
			rc = "its RuntimeClass " + n
		}
		d := fmt.Sprintf("new %s pods stay in ContainerCreating: %s asks for the runtime handler %q, which the container runtime of the nodes they were placed on does not have, so the kubelet cannot create their sandbox (%s)", h.Subject, rc, handler, quote(ReadableLine(h.fact("message")), 160))
		if h.fact("no_scheduling") != "" {
			d += fmt.Sprintf("; %s sets no scheduling (no nodeSelector or tolerations), so nothing keeps its pods on the nodes set up with %s", strings.TrimPrefix(rc, "its "), handler)
		}
		d += h.clause(", nodes labelled for it: ", "handler_nodes")
		return d + "; the image and the application are not at fault"
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		rc := orWord(h.fact("runtimeclass"), "the RuntimeClass")
		r.high("Restore the scheduling block of %s (nodeSelector of the nodes that have the %s handler and the tolerations of their taints), or give %s's pods that nodeSelector, so they land on nodes with the handler", rc, orWord(h.fact("handler"), "runtime"), h.Subject)
		r.med("Delete the pods stuck in ContainerCreating once they can be placed, so they are rescheduled")
		r.low("Alert on FailedCreatePodSandBox events; test RuntimeClass changes in a chart against a pod that uses them")
	},
}

var (
	// runtimeHandlerRE is a sandbox that failed because the runtime has no
	// such handler: containerd's 'no runtime for "runsc" is configured',
	// CRI-O's 'failed to find runtime handler runsc from runtime list' and
	// 'RuntimeHandler "kata" not supported'.
	runtimeHandlerRE = regexp.MustCompile(`(?i)no runtime for "([\w.-]+)" is configured|failed to find runtime handler "?([\w.-]+)"? from runtime list|RuntimeHandler "([\w.-]+)" not supported|unknown runtime handler "?([\w.-]+)"?`)
	// rtClassYAMLRE reads a RuntimeClass's handler, name and scheduling
	// from its YAML.
	rtHandlerLineRE = regexp.MustCompile(`^handler:\s*"?([\w.-]+)"?\s*$`)
	rtNameLineRE    = regexp.MustCompile(`^\s{2}name:\s*"?([\w.-]+)"?\s*$`)
)

// handlerOf is the handler a sandbox failure names.
func handlerOf(msg string) string {
	if m := findSubmatch(runtimeHandlerRE, msg); m != nil {
		for _, g := range m[1:] {
			if g != "" {
				return g
			}
		}
	}
	return ""
}

// runtimeClass is what the commands handed over show of a RuntimeClass.
type runtimeClass struct {
	name, handler       string
	yaml, hasScheduling bool
}

// runtimeClasses reads the RuntimeClasses the commands show: kubectl get
// runtimeclass's NAME HANDLER table and -o yaml.
func runtimeClasses(ev *Gathered) []runtimeClass {
	var out []runtimeClass
	add := func(rc runtimeClass) {
		for i := range out {
			if out[i].name == rc.name {
				if rc.yaml {
					out[i] = rc
				}
				return
			}
		}
		out = append(out, rc)
	}
	for _, c := range ev.Commands {
		if !strings.Contains(strings.ToLower(c.Command), "runtimeclass") {
			continue
		}
		var y runtimeClass
		table := false
		for _, l := range c.Lines {
			f := strings.Fields(l)
			switch {
			case len(f) >= 2 && f[0] == "NAME" && f[1] == "HANDLER":
				table = true
			case table && len(f) >= 2 && !strings.Contains(l, ":"):
				add(runtimeClass{name: f[0], handler: f[1]})
			case matchLine(rtHandlerLineRE, l):
				y.handler, y.yaml = findSubmatch(rtHandlerLineRE, l)[1], true
			case matchLine(rtNameLineRE, l) && y.name == "":
				y.name = findSubmatch(rtNameLineRE, l)[1]
			case strings.HasPrefix(l, "scheduling:"):
				y.hasScheduling = true
			case strings.HasPrefix(l, "kind:") && !strings.Contains(l, "RuntimeClass"):
				y.yaml = false
			}
		}
		if y.yaml && y.name != "" && y.handler != "" {
			add(y)
		}
	}
	return out
}

// refineRuntimeHandler names the RuntimeClass whose handler the sandboxes
// lack, and says when it sets no scheduling.
func refineRuntimeHandler(ev *Gathered, found []Finding) []Finding {
	var classes []runtimeClass
	read := false
	for i := range found {
		f := &found[i]
		if f.Kind != KindRuntimeHandler {
			continue
		}
		if !read {
			classes, read = runtimeClasses(ev), true
		}
		for _, rc := range classes {
			if rc.handler != f.fact("handler") {
				continue
			}
			f.setFact("runtimeclass", rc.name)
			if rc.yaml && !rc.hasScheduling {
				f.setFact("no_scheduling", "true")
				f.Evidence = append(f.Evidence, fmt.Sprintf("RuntimeClass %s (handler %s) has no scheduling block: no nodeSelector nor tolerations keep its pods on the nodes with the handler", rc.name, rc.handler))
			}
			break
		}
	}
	return nil
}
