package analyst

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A readiness probe that execs a command the container's image does not
// have (a grpc_health_probe, curl or shell left behind when the image moved
// to a distroless, scratch or slimmer base): the runtime cannot even start
// it ("exec: "/bin/x": stat /bin/x: no such file or directory",
// "executable file not found in $PATH", "sh: curl: not found"), so the
// kubelet counts every check as failed. The process runs and may be
// healthy, but its pods never become Ready: they get no traffic, and a
// rolling update stops at the first new pod until the Deployment exceeds
// its progress deadline. A liveness probe with the same fault kills the
// containers instead (livenesskill.go); this is the readiness side.

// KindReadinessExecMissing is a readiness probe whose command is not in
// the image.
const KindReadinessExecMissing Kind = "readiness_exec_missing"

// readinessImageRE is what a change says when it rebuilds the image on
// another base or changes the probe.
var readinessImageRE = regexp.MustCompile(`(?i)distroless|scratch|base image|\bbase\b|alpine|debian|ubuntu|chainguard|wolfi|slim|dockerfile|containerfile|\bbuild\b|image|probe|non-?root`)

var readinessExecMissing = &mechanism{
	kind:   KindReadinessExecMissing,
	class:  classCause,
	label:  "readiness probe command not in the image",
	detect: detectReadinessHistory,
	event: func(e *corev1.Event) (float64, bool) {
		return 0.9, readinessExecMissingEvent(e)
	},
	eventCritical: true,
	eventFacts: func(f *Finding, e *corev1.Event) {
		if f.fact("missing_command") != "" {
			return
		}
		o := probeOutcomeOf(e.Message)
		f.setFact("missing_command", o.missing)
		f.setFact("missing_error", o.missingError)
		f.setFact("missing_text", strings.ReplaceAll(o.missingText, `\"`, `"`))
	},
	enrich: func(f *Finding, c *corev1.Container) {
		if p := c.ReadinessProbe; p != nil && p.Exec != nil && len(p.Exec.Command) > 0 && f.fact("probe_command") == "" {
			f.setFact("probe_command", strings.Join(p.Exec.Command, " "))
		}
		if f.fact("image") == "" && c.Image != "" {
			f.setFact("image", c.Image)
		}
	},
	related:    kindsOnSubject(KindProbeFailure, KindRolloutStuck, KindNoEndpoints),
	refines:    []Kind{KindProbeFailure, KindRolloutStuck},
	fitsChange: func(h *Hypothesis, c *Finding) bool { return matchLine(readinessImageRE, changeText(c)) },
	describe: func(h *Hypothesis, sc Scope) string {
		cmd := orWord(h.fact("missing_command"), "its command")
		d := fmt.Sprintf("the pods of %s never become ready: their readiness probe is an exec probe whose command %s is not in the container's image", h.Subject, cmd)
		if pc := h.fact("probe_command"); pc != "" {
			d += fmt.Sprintf(" (readiness: exec [%s])", pc)
		}
		d += fmt.Sprintf(", so the kubelet cannot even start it (%s) and counts every check as failed", quote(truncate(orWord(h.fact("missing_text"), h.fact("message")), 200), 210))
		d += " — the application runs and may well be healthy, but the pods are kept out of the Service's endpoints and a rolling update stops at its first new pod until the Deployment exceeds its progress deadline"
		d += "; an image rebuilt on another base (distroless, scratch, a slimmer or non-root image) no longer ships the probe's binary or shell"
		if img := h.fact("image"); img != "" {
			d += fmt.Sprintf(" (image %s)", img)
		}
		if l := h.fact("history_line"); l != "" && (h.fact("image") == "" || !strings.Contains(h.fact("history_from"), h.fact("image"))) {
			d += fmt.Sprintf("; an earlier build copied it in (%s: %s)", truncate(h.fact("history_from"), 120), quote(truncate(l, 120), 130))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		cmd := orWord(h.fact("missing_command"), "the probe's command")
		r.rollback()
		r.high("Put %s back into the image of %s (copy the binary into the new base image), or replace the exec readiness probe by one that needs nothing in the image: a grpc, httpGet or tcpSocket probe", cmd, s)
		r.med("Before rolling out an image on a new base, run each exec probe's command in it (kubectl exec POD -- %s)", orWord(h.fact("probe_command"), cmd))
		r.low("Alert on readiness probes that error (Unhealthy events with \"probe errored\") and on rollouts that stop progressing")
	},
}

// readinessExecMissingEvent reports whether e is a readiness probe that
// could not start its command because it is not in the image.
func readinessExecMissingEvent(e *corev1.Event) bool {
	if e.Reason != "Unhealthy" || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(e.Message)), "readiness probe") {
		return false
	}
	return probeOutcomeOf(e.Message).failure == "exec_missing"
}

// detectReadinessHistory adds, to a readiness probe's missing command,
// the line of an image's build history (crane config, docker history,
// a Dockerfile) that copied it in: an earlier image had it.
func detectReadinessHistory(ev *Gathered, found []Finding) []Finding {
	for i := range found {
		f := &found[i]
		if f.Kind != KindReadinessExecMissing || f.fact("history_line") != "" {
			continue
		}
		cmd := f.fact("missing_command")
		if cmd == "" {
			continue
		}
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				t := strings.TrimSpace(l)
				u := strings.ToUpper(t)
				if strings.Contains(t, cmd) && (strings.HasPrefix(u, "COPY ") || strings.HasPrefix(u, "ADD ") || strings.Contains(u, "/BIN/SH -C #(NOP) COPY") || strings.Contains(u, " COPY ")) {
					f.setFact("history_line", t)
					f.setFact("history_from", c.Command)
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(c.Command, 120), t))
					break
				}
			}
		}
	}
	return nil
}
