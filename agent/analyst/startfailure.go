package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A container whose command or entrypoint the runtime cannot execute
// (StartError, RunContainerError, exit 126/127/128): the executable does
// not exist in the image, is built for another architecture, or is not
// executable. The application never ran.
var startFailureM = &mechanism{
	kind:      KindStartFailure,
	class:     classCause,
	label:     "container cannot start (bad command/entrypoint or image)",
	container: startFailureContainer,
	fromCrash: func(crash Finding, c *containerState) (Finding, bool) {
		t := c.Term
		if t == nil {
			return Finding{}, false
		}
		if f, ok := startFailure(crash, c.Object, t.Reason, t.Message, t.ExitCode, t.FinishedAt.Time); ok {
			return f, true
		}
		// The runtime's own line, the container's only output: the
		// process it was to exec could not be started, whatever exit
		// code the runtime gave it.
		if l := execFailedLine(c.LastLines); l != "" && t.Message == "" {
			f, ok := startFailure(crash, c.Object, "StartError", l, t.ExitCode, t.FinishedAt.Time)
			f.Summary = strings.Replace(f.Summary, "(StartError)", "("+orDash(t.Reason)+")", 1)
			f.Evidence[0] = strings.Replace(f.Evidence[0], "reason StartError", "reason "+orDash(t.Reason), 1)
			f.setFact("reason", t.Reason)
			f.setFact("exec_line", l)
			return f, ok
		}
		return Finding{}, false
	},
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
			d += h.clause(", exit code ", "exit_code")
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

// startFailureContainer judges a container the kubelet cannot create or
// run because its command cannot be started.
func startFailureContainer(c *containerState) []Finding {
	if c.killedByOOM() || !c.waitingFor(createErrorReasons...) {
		return nil
	}
	sf, ok := startFailure(c.Base, c.Object, c.Waiting.Reason, c.Waiting.Message, 0, containerSince(c.Pod, c.Status))
	if !ok {
		return nil
	}
	sf.setFact("container", c.Status.Name)
	sf.setFact("restarts", strconv.Itoa(int(c.Status.RestartCount)))
	if c.Spec != nil {
		sf.setFact("image", c.Spec.Image)
	}
	return []Finding{sf}
}

var startFailureMsgRE = regexp.MustCompile(`(?i)executable file not found|exec format error|no such file or directory|permission denied|oci runtime (create|exec) failed|runc create failed|unable to start container process|failed to create (containerd )?(task|shim)|exec: "[^"]*": `)

// IsStartFailure reports whether a container termination or waiting state
// says its command or entrypoint cannot be started at all (a bad image or
// command), as opposed to an application that starts and exits.
func IsStartFailure(reason, msg string, code int32) bool {
	switch reason {
	case "StartError", "ContainerCannotRun", "RunContainerError":
		return msg != "" || code == 126 || code == 127 || code == 128
	}
	if msg != "" && matchLine(startFailureMsgRE, msg) && (code == 126 || code == 127 || code == 128 || strings.Contains(strings.ToLower(msg), "runc") || strings.Contains(strings.ToLower(msg), "oci runtime")) {
		return true
	}
	return false
}

// startFailure derives a start_failure finding from a crashing container
// whose command/entrypoint cannot be executed.
func startFailure(crash Finding, cobj, reason, msg string, code int32, at time.Time) (Finding, bool) {
	if !IsStartFailure(reason, msg, code) {
		return Finding{}, false
	}
	f := crash
	f.Kind, f.Severity, f.Weight = KindStartFailure, SevCritical, 0.95
	f.Facts = maps.Clone(crash.Facts)
	if f.Time.IsZero() || f.Time.Year() <= 1971 {
		f.Time = at
	}
	mech := startMechanism(msg)
	f.Summary = fmt.Sprintf("%s cannot start its command/entrypoint (%s): %s", cobj, orDash(reason), truncate(msg, 160))
	ev := fmt.Sprintf("%s terminated with reason %s", cobj, orDash(reason))
	if code != 0 {
		ev += fmt.Sprintf(", exit code %d (%s)", code, exitMeaning(code))
	}
	ev += ": " + quote(msg, 300)
	f.Evidence = append([]string{ev}, crash.Evidence...)
	f.setFact("reason", reason)
	if f.Facts != nil {
		f.Facts["start_message"] = msg
	} else {
		f.setFact("start_message", msg)
	}
	f.setFact("start_mechanism", mech)
	if code != 0 {
		f.setFact("exit_code", strconv.Itoa(int(code)))
	}
	return f, true
}

var execNameRE = regexp.MustCompile(`exec: "([^"]+)"|^exec (/\S+): `)

// execFailedRE is the line runc's init prints as the container's output
// when the execve of its entrypoint fails ("exec /app/entrypoint.sh: no
// such file or directory", "exec /docker-entrypoint.sh: exec format
// error"; before runc 1.1 "standard_init_linux.go:228: exec user process
// caused: no such file or directory"): the container exits at once,
// with code 1, before the application printed anything.
var execFailedRE = regexp.MustCompile(`^exec (/\S+): (?:no such file or directory|exec format error|permission denied)\s*$|^standard_init_linux\.go:\d+: exec user process caused:? "?(?:no such file or directory|exec format error|permission denied)"?\s*$`)

// execFailedLine returns the runtime's exec failure when it is among a
// container's last lines and the only kind of line there.
func execFailedLine(lines []evidence.LogLine) string {
	found := ""
	for _, l := range lines {
		t := strings.TrimSpace(l.Text)
		if t == "" {
			continue
		}
		if !execFailedRE.MatchString(t) {
			return ""
		}
		found = t
	}
	return found
}

// startMechanism says in plain words why the runtime could not start the
// process.
func startMechanism(msg string) string {
	l := strings.ToLower(msg)
	name := ""
	if m := findSubmatch(execNameRE, msg); m != nil {
		name = m[1] + m[2]
	}
	what := "the command"
	if name != "" {
		what = fmt.Sprintf("the command %q", name)
	}
	switch {
	case strings.Contains(l, "executable file not found"):
		return what + " does not exist in the image (executable file not found in $PATH)"
	case strings.Contains(l, "exec format error"):
		return what + " is built for another CPU architecture (exec format error)"
	case strings.Contains(l, "no such file or directory"):
		return what + " or its interpreter does not exist in the image (no such file or directory)"
	case strings.Contains(l, "permission denied"):
		return what + " is not executable (permission denied)"
	}
	return "the OCI runtime cannot start the container process"
}
