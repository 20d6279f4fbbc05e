package analyst

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A container whose root file system is read-only (securityContext
// readOnlyRootFilesystem: true) while its application writes to it at
// start: Tomcat's tempDir under /tmp, a JVM's or Python's temporary files,
// nginx's client body cache, a PID file. The write fails with EROFS ("Read-
// only file system", errno 30) and the application exits, so its pods
// crash-loop. The setting often comes from no change of the workload: a
// mutating admission policy adds it to every pod it admits (Kyverno's
// patchStrategicMerge "+(readOnlyRootFilesystem): true", whose pods carry
// the annotation policies.kyverno.io/last-applied-patches; Gatekeeper's
// Assign mutators, gatekeeper.sh/mutations), so only the pods created
// after the policy (by a drain, a node upgrade, a scale-up) get it and the
// old ones keep running. The fix is a writable emptyDir at the path (or an
// exclusion from the policy), not the nodes nor a rollback.

// KindReadOnlyRootFS is an application that cannot write to its
// container's read-only root file system.
const KindReadOnlyRootFS Kind = "readonly_rootfs"

var readOnlyRootFS = &mechanism{
	kind:           KindReadOnlyRootFS,
	class:          classCause,
	label:          "the container's root file system is read-only and the application writes to it",
	fromCrash:      readOnlyRootFSFromCrash,
	related:        kindsOnSubject(KindCrashLoop, KindRestarts, KindLogErrors, KindAppCrash),
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		if p := strings.ToLower(h.fact("policy")); p != "" && strings.Contains(t, p) {
			return true
		}
		return strings.Contains(t, "readonlyrootfilesystem") || strings.Contains(t, "read-only root") ||
			h.fact("policy") != "" && (strings.Contains(t, "clusterpolicy") || strings.Contains(t, "kyverno") || strings.Contains(t, "gatekeeper") || strings.Contains(t, "mutat"))
	},
	describe:  describeReadOnlyRootFS,
	recommend: recommendReadOnlyRootFS,
}

var (
	// erofsRE is a write refused on a read-only file system, with the path
	// when the line names one.
	erofsRE = regexp.MustCompile(`(?i)(?:(/[\w./-]+)\S*:\s*)?Read-only file system|EROFS`)
	// erofsPathRE is a path a line around the refusal names.
	erofsPathRE = regexp.MustCompile(`(?:tmpdir is set to |mkdir\(\) "|Read-only file system: '|open |mkdir |create )(/[\w./-]+)`)
	// kyvernoPatchRE is a rule of a Kyverno policy that added
	// readOnlyRootFilesystem: "add-ro-rootfs.harden-pod-security.kyverno.io:
	// added /spec/containers/0/securityContext/readOnlyRootFilesystem".
	kyvernoPatchRE = regexp.MustCompile(`([\w-]+)\.([\w-]+)\.kyverno\.io:\s*(?:added|replaced)\s+\S*readOnlyRootFilesystem`)
)

func readOnlyRootFSFromCrash(crash Finding, c *containerState) (Finding, bool) {
	if c.Spec == nil || c.Spec.SecurityContext == nil || c.Spec.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.Spec.SecurityContext.ReadOnlyRootFilesystem {
		return Finding{}, false
	}
	line, path := "", ""
	for _, l := range c.LastLines {
		if m := findSubmatch(erofsRE, l.Text); m != nil {
			if line == "" {
				line = strings.TrimSpace(l.Text)
			}
			if path == "" && m[1] != "" {
				path = m[1]
			}
		}
	}
	if line == "" {
		return Finding{}, false
	}
	if path == "" {
		for _, l := range c.LastLines {
			if m := findSubmatch(erofsPathRE, l.Text); m != nil {
				path = m[1]
				break
			}
		}
	}
	f := crash
	f.Facts = nil
	f.Kind, f.Severity, f.Weight = KindReadOnlyRootFS, SevCritical, 0.92
	f.setFact("line", line)
	f.setFact("path", path)
	f.setFact("container", c.Status.Name)
	f.Evidence = []string{
		fmt.Sprintf("%s has securityContext readOnlyRootFilesystem: true", c.Object),
		"its last log lines before the crash: " + quote(line, 220),
	}
	policy, rule := mutatedBy(c.Pod)
	if policy != "" {
		f.setFact("policy", policy)
		f.setFact("rule", rule)
		f.Evidence = append(f.Evidence, fmt.Sprintf("the setting was added at admission by policy %s (rule %s), not by the workload's template: %s", policy, orWord(rule, "?"), quote(strings.TrimSpace(c.Pod.Annotations["policies.kyverno.io/last-applied-patches"]+c.Pod.Annotations["gatekeeper.sh/mutations"]), 200)))
	}
	f.Evidence = append(f.Evidence, crash.Evidence...)
	f.Summary = fmt.Sprintf("%s cannot write %s: its root file system is read-only", crash.Subject, orWord(path, "to its root file system"))
	return f, true
}

// mutatedBy names the admission policy (and its rule) that made a pod's
// root file system read-only, from the annotation the mutating webhook
// leaves.
func mutatedBy(p *corev1.Pod) (policy, rule string) {
	if p == nil {
		return "", ""
	}
	if m := findSubmatch(kyvernoPatchRE, p.Annotations["policies.kyverno.io/last-applied-patches"]); m != nil {
		return m[2], m[1]
	}
	// Gatekeeper: "0: Assign//readonly-rootfs:1"
	if g := p.Annotations["gatekeeper.sh/mutations"]; g != "" {
		for _, part := range strings.Split(g, ",") {
			if i := strings.LastIndex(part, "/"); i >= 0 && strings.Contains(strings.ToLower(part), "assign") {
				name := strings.TrimSpace(part[i+1:])
				if j := strings.Index(name, ":"); j >= 0 {
					name = name[:j]
				}
				return name, ""
			}
		}
	}
	return "", ""
}

func describeReadOnlyRootFS(h *Hypothesis, sc Scope) string {
	s, path := h.Subject, h.fact("path")
	d := fmt.Sprintf("%s cannot write %s at start-up: its container runs with readOnlyRootFilesystem: true and the write fails with \"Read-only file system\" (EROFS), so the application exits and its pods crash-loop", s, orWord(path, "to its root file system"))
	if p := h.fact("policy"); p != "" {
		d += fmt.Sprintf("; the setting is not in the workload's template: the mutating admission policy %s", p)
		if r := h.fact("rule"); r != "" {
			d += fmt.Sprintf(" (rule %s)", r)
		}
		d += " adds it to every pod it admits, so only pods created since the policy (recreated by a drain, a node upgrade, a scale-up) have it, while older pods keep running"
	}
	return d + ": " + quote(ReadableLine(h.fact("line")), 200)
}

func recommendReadOnlyRootFS(h *Hypothesis, sc Scope, r *recommender) {
	s, path := h.Subject, orWord(h.fact("path"), "the paths it writes")
	r.high("Mount a writable emptyDir at %s in %s (or point the application's temporary directory at one), so it starts with a read-only root file system", firstDir(path), s)
	if p := h.fact("policy"); p != "" {
		r.high("Until then, exclude %s from the policy %s (or set the rule to audit) so new pods start again; do not roll back the nodes or the application", s, p)
	}
	r.low("Roll mutating security policies out in audit mode first and test workloads with readOnlyRootFilesystem before enforcing it")
}

// firstDir is the top directory of a path (/tmp of /tmp/tomcat.8080.x).
func firstDir(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	if i := strings.Index(p[1:], "/"); i >= 0 {
		return p[:i+1]
	}
	return p
}
