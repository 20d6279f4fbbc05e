package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindPrivilegedPort is a server refused the port it listens on: a
// process that does not run as root binding a port below 1024.
const KindPrivilegedPort Kind = "privileged_port"

// A server that exits at start-up because the operating system refuses it
// the port it listens on (EACCES): ports below 1024 are privileged, and a
// process that is not root and lacks CAP_NET_BIND_SERVICE may not bind
// them. It follows a move to a non-root image (nginx-unprivileged runs as
// uid 101, distroless ":nonroot" as 65532, a Dockerfile USER), a pod
// securityContext with runAsNonRoot or runAsUser, or capabilities dropped
// (drop: ALL removes NET_BIND_SERVICE), while the server's own
// configuration still listens on 80 or 443. Each server says it its way:
// nginx "bind() to 0.0.0.0:80 failed (13: Permission denied)", Go (Caddy,
// Traefik) "listen tcp :80: bind: permission denied", Node "listen EACCES:
// permission denied 0.0.0.0:80", uvicorn "[Errno 13] error while
// attempting to bind on address ('0.0.0.0', 80): permission denied",
// Apache "(13)Permission denied: AH00072: make_sock: could not bind to
// address [::]:80", HAProxy "cannot bind socket (Permission denied)
// [0.0.0.0:80]", Envoy "cannot bind '0.0.0.0:80': Permission denied",
// Redis "Could not create server TCP listening socket *:80: bind:
// Permission denied", Puma "Permission denied - bind(2) for "0.0.0.0" port
// 80 (Errno::EACCES)", Java "java.net.BindException: Permission denied".
var privilegedPort = &mechanism{
	kind:       KindPrivilegedPort,
	class:      classCause,
	label:      "a non-root process refused a privileged port (bind: permission denied)",
	lines:      bindDeniedRE,
	lineWeight: 0.95,
	detect: func(ev *Gathered, found []Finding) []Finding {
		out := crashLogCauses(ev, found, KindPrivilegedPort, func(f *Finding, lines []evidence.LogLine, i int) {
			f.setFact("port", boundPort(lines[i].Text))
		})
		for i := range out {
			bindDeniedWhy(ev, &out[i])
		}
		return out
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || c.Kind == KindConfigChange || matchLine(nonRootWordsRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		port := h.fact("port")
		d := fmt.Sprintf("%s cannot start: the operating system refuses it the port it listens on (bind: permission denied, EACCES)", h.Subject)
		if n, err := strconv.Atoi(port); err == nil && n < 1024 {
			d = fmt.Sprintf("%s cannot start: it listens on port %s, a privileged port (below 1024), and its process does not run as root, so the operating system refuses the bind (permission denied, EACCES); a non-root process needs CAP_NET_BIND_SERVICE for it", h.Subject, port)
		}
		if u := h.fact("runs_as"); u != "" {
			d += fmt.Sprintf(" — it runs as %s", u)
		}
		if c := h.fact("caps"); c != "" {
			d += fmt.Sprintf("; %s", c)
		}
		if h.fact("crashloop") != "" {
			d += "; its pods exit at start-up and are in CrashLoopBackOff"
		}
		d += h.quoteClause(" — ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		port := orWord(h.fact("port"), "its port")
		r.rollback()
		r.high("Make %s listen on an unprivileged port (8080 rather than %s: the listen directive of its configuration) and point its containerPort, Service targetPort and probes at it; or, if it must bind %s, add the capability NET_BIND_SERVICE to its securityContext (or set the pod sysctl net.ipv4.ip_unprivileged_port_start=0)", h.Subject, port, port)
		r.med("When an image is moved to a non-root base, check the ports its configuration listens on in the same change")
		r.low("Alert on Deployments with no available replicas and on containers restarting at start-up")
	},
}

var (
	// bindDeniedRE are the servers' ways of saying the bind of their
	// listening port was refused (see privilegedPort).
	bindDeniedRE = regexp.MustCompile(`(?i)bind\(\) to \S+ failed \(13: permission denied\)|\bbind: permission denied|listen EACCES|error while attempting to bind on address .*permission denied|permission denied\)?:? (?:AH00072: )?make_sock: could not bind|cannot bind socket \(permission denied\)|cannot bind '[^']*': permission denied|permission denied - bind\(2\)|BindException: permission denied`)
	// portRE reads the port from those lines: "host:80", "[::]:443",
	// "('0.0.0.0', 80)", "port 80".
	portRE     = regexp.MustCompile(`:(\d{1,5})\b[)'\]]?|, (\d{1,5})\)|\bport (\d{1,5})\b`)
	bindWordRE = regexp.MustCompile(`(?i)bind|listen|socket|address|\bport\b`)
	// nonRootWordsRE are the words of an image or a change that make a
	// process run as a user other than root.
	nonRootWordsRE = regexp.MustCompile(`(?i)unprivileged|non-?root|rootless|drop(?:ped|s)? root|run ?as ?non ?root|runAsUser|\bUSER\s+\d+|distroless|chainguard`)
)

// boundPort is the port a bind-refused line names, "" when it names none.
func boundPort(line string) string {
	// From the first word of binding on: a timestamp before it is not a
	// port.
	l := line
	if loc := bindWordRE.FindStringIndex(l); loc != nil {
		l = l[loc[0]:]
	}
	for _, m := range findAllSubmatch(portRE, l, -1) {
		for _, g := range m[1:] {
			if g != "" {
				if n, err := strconv.Atoi(g); err == nil && n > 0 && n < 65536 {
					return g
				}
			}
		}
	}
	return ""
}

// bindDeniedWhy reads who the refused server runs as and what its
// securityContext grants: the pod's securityContext (read from -o yaml,
// jsonpath output or the pod spec), the image, and the change that moved
// it; the facts runs_as and caps, and why.
func bindDeniedWhy(ev *Gathered, f *Finding) {
	runAs, caps := "", ""
	ns, _, _ := strings.Cut(strings.TrimPrefix(f.Object, "pod "), "/")
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if p.Namespace != ns || WorkloadOfPod(p) != f.Subject {
			continue
		}
		if sc := p.Spec.SecurityContext; sc != nil && runAs == "" {
			runAs = securityUser(sc.RunAsUser, sc.RunAsNonRoot)
		}
		for _, c := range p.Spec.Containers {
			if sc := c.SecurityContext; sc != nil {
				if u := securityUser(sc.RunAsUser, sc.RunAsNonRoot); u != "" {
					runAs = u
				}
				if sc.Capabilities != nil && caps == "" {
					caps = capsWords(sc.Capabilities)
				}
			}
			if runAs == "" && matchLine(nonRootWordsRE, c.Image) {
				runAs = "the non-root user of its image " + c.Image
			}
		}
	}
	// What a jsonpath or -o yaml of the securityContext printed.
	for _, c := range ev.Commands {
		if !strings.Contains(strings.ToLower(c.Command), "securitycontext") && !strings.Contains(strings.ToLower(c.Command), "yaml") {
			continue
		}
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			if !strings.HasPrefix(t, "{") {
				continue
			}
			var sc corev1.SecurityContext
			if json.Unmarshal([]byte(t), &sc) != nil {
				continue
			}
			if u := securityUser(sc.RunAsUser, sc.RunAsNonRoot); u != "" && (runAs == "" || strings.HasPrefix(runAs, "the non-root user")) {
				runAs = u
			}
			if sc.Capabilities != nil && caps == "" {
				caps = capsWords(sc.Capabilities)
			}
		}
	}
	// The change that moved the image to a non-root user.
	for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
		if (strings.EqualFold(c.Service, f.Subject) || strings.Contains(c.Description, f.Subject)) && matchLine(nonRootWordsRE, c.Description) {
			f.setFact("nonroot_change", fmt.Sprintf("%q at %s", c.Description, ts(c.Timestamp)))
			if runAs == "" || strings.HasPrefix(runAs, "runAsNonRoot") {
				since := fmt.Sprintf("a non-root user since the %s change %q", orWord(c.Kind, "recorded"), c.Description)
				if runAs != "" {
					since = runAs + ", " + since
				}
				runAs = since
			}
			break
		}
	}
	f.setFact("runs_as", runAs)
	f.setFact("caps", caps)
	why := "the operating system refuses the bind of its listening port (permission denied)"
	if n, err := strconv.Atoi(f.fact("port")); err == nil && n < 1024 {
		why = fmt.Sprintf("port %d is privileged (below 1024) and the process is not root", n)
	}
	f.setFact("why", why)
}

// securityUser says who a securityContext runs a container as, "" when
// it does not say.
func securityUser(uid *int64, nonRoot *bool) string {
	switch {
	case uid != nil && *uid != 0:
		return fmt.Sprintf("uid %d (runAsUser)", *uid)
	case nonRoot != nil && *nonRoot:
		return "runAsNonRoot: true"
	}
	return ""
}

// capsWords says what a securityContext's capabilities do to binding a
// privileged port.
func capsWords(c *corev1.Capabilities) string {
	for _, a := range c.Add {
		if strings.EqualFold(string(a), "NET_BIND_SERVICE") || strings.EqualFold(string(a), "CAP_NET_BIND_SERVICE") {
			return "its securityContext adds NET_BIND_SERVICE"
		}
	}
	for _, d := range c.Drop {
		if strings.EqualFold(string(d), "ALL") || strings.EqualFold(string(d), "NET_BIND_SERVICE") {
			return fmt.Sprintf("its securityContext drops %s capabilities (no NET_BIND_SERVICE)", d)
		}
	}
	return ""
}
