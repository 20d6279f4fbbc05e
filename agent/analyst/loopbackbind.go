package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// KindLoopbackBind is a server that listens on the loopback address only,
// so nothing outside its own container reaches it.
const KindLoopbackBind Kind = "loopback_bind"

// A server bound to 127.0.0.1 (or localhost) inside a pod: it starts and
// logs that it runs, but only its own container can connect. The kubelet
// probes the pod's IP, so its probes are refused ("dial tcp
// 10.24.3.18:8000: connect: connection refused"), the pods never become
// ready, the Service has no ready endpoints and callers cannot reach it.
// The server's own startup line names the address ("Uvicorn running on
// http://127.0.0.1:8000", "Listening on 127.0.0.1:8080", "Running on
// http://localhost:5000"); it usually follows a change of entrypoint or
// server whose default listen address is the loopback (uvicorn, flask,
// many dev servers) with no --host/--bind given.
var loopbackBind = &mechanism{
	kind:   KindLoopbackBind,
	class:  classCause,
	label:  "server listens on the loopback address only",
	detect: detectLoopbackBind,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || c.Kind == KindConfigChange
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s listens on %s only (the loopback address: its log says %s), so nothing outside its own container can connect", h.Subject, h.fact("listen"), quote(h.fact("line"), 160))
		if p := h.fact("probe"); p != "" {
			d += fmt.Sprintf(": the kubelet's %s probe to the pod's IP (%s) is refused (connection refused), the pods never become ready and the Service has no ready endpoints, so callers cannot reach it", p, h.fact("probe_target"))
		}
		if lb := h.fact("lb_check"); lb != "" {
			d += fmt.Sprintf(": the load balancer's health checks, sent from outside to the task's IP, cannot connect, so its targets are unhealthy (%s) and the orchestrator replaces the tasks again and again, while a check from inside the container, to localhost, passes", quote(lb, 160))
		}
		if c := h.fact("command"); c != "" {
			d += fmt.Sprintf("; its command (%s) sets no listen address (--host/--bind), and the server's default is the loopback", c)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Make %s listen on all interfaces: start it with --host 0.0.0.0 (or --bind 0.0.0.0:%s), or roll back to the previous entrypoint", h.Subject, orWord(h.fact("port"), "PORT"))
		r.med("Check a new server or entrypoint's listen address in a pod before rolling it out (kubectl exec ... ss -ltn)")
		r.low("Alert on Deployments whose rollout makes no progress and on Services without ready endpoints")
	},
}

// loopbackListenRE is a server's line that it listens on a loopback
// address, with the port.
var loopbackListenRE = regexp.MustCompile(`(?i)\b(?:listen(?:ing)?|running|serving|started|bound|bind(?:ing)?|accepting connections)\b[^\n]{0,40}?(?:^|[\s/=("'@])(?:https?://)?(127\.0\.0\.1|localhost|\[::1\]):(\d{2,5})\b`)

// probeRefusedRE is a kubelet's probe failure for a refused connection:
// the kind of probe and the address it dialled.
var probeRefusedRE = regexp.MustCompile(`^(Readiness|Liveness|Startup) probe failed: .*?dial tcp ([0-9a-f.:\[\]]+):(\d+): connect: connection refused`)

// detectLoopbackBind finds a workload whose log says its server listens on
// a loopback address while the kubelet's probes of the same port at the
// pod's IP are refused (or, without probes, whose pods are not ready).
func detectLoopbackBind(ev *Gathered, _ []Finding) []Finding {
	type probe struct {
		kind, target, port string
		at                 time.Time
	}
	probes := map[string]probe{} // by workload
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if e.Reason != "Unhealthy" || e.InvolvedObject.Kind != "Pod" {
			continue
		}
		m := findSubmatch(probeRefusedRE, strings.TrimSpace(e.Message))
		if m == nil {
			continue
		}
		wl := workloadOfName(e.InvolvedObject.Name)
		t, _ := eventTime(e)
		if p, ok := probes[wl]; !ok || t.Before(p.at) {
			probes[wl] = probe{kind: strings.ToLower(m[1]), target: m[2] + ":" + m[3], port: m[3], at: t}
		}
	}
	var out []Finding
	seen := map[string]bool{}
	for _, set := range ev.Logs {
		if set.Host || seen[set.Subject] {
			continue
		}
		for _, t := range set.Templates {
			m := findSubmatch(loopbackListenRE, t.Example)
			if m == nil {
				continue
			}
			p, probed := probes[set.Subject]
			if probed && p.port != m[2] {
				continue
			}
			lb := ""
			if !probed {
				lb = lbCheckRefused(ev, set.Subject)
			}
			if !probed && lb == "" && !podsNotReady(ev.K8s.Pods, set.Subject) {
				continue
			}
			seen[set.Subject] = true
			f := Finding{Kind: KindLoopbackBind, Subject: set.Subject, Object: "workload " + set.Subject, Namespace: set.Namespace,
				Severity: SevCritical, Weight: 0.9, Source: SrcLogs, Time: t.FirstSeen}
			line := strings.TrimSpace(t.Example)
			f.setFact("listen", m[1]+":"+m[2])
			f.setFact("port", m[2])
			f.setFact("line", line)
			f.Evidence = append(f.Evidence, fmt.Sprintf("log of %s: %s (it listens on the loopback address %s:%s)", orWord(t.Source, set.Source), quote(line, 200), m[1], m[2]))
			if probed {
				f.setFact("probe", p.kind)
				f.setFact("probe_target", p.target)
				f.Evidence = append(f.Evidence, fmt.Sprintf("the kubelet's %s probe to %s is refused from %s: connect: connection refused", p.kind, p.target, ts(p.at)))
				if f.Time.IsZero() || !p.at.IsZero() && p.at.Before(f.Time) {
					f.Time = p.at
				}
			}
			if lb != "" {
				f.setFact("lb_check", lb)
				f.Evidence = append(f.Evidence, "the load balancer's health check of its tasks fails: "+quote(lb, 200))
			}
			if c := listenCommand(ev.K8s.Pods, set.Subject); c != "" {
				f.setFact("command", c)
			}
			f.Summary = fmt.Sprintf("%s listens on %s:%s only", set.Subject, m[1], m[2])
			out = append(out, f)
			break
		}
	}
	return out
}

// elbCheckFailedRE: a load balancer's health check of a target failing,
// as ECS's service events, a stopped task's reason and elbv2
// describe-target-health print it.
var elbCheckFailedRE = regexp.MustCompile(`(?i)is unhealthy in \(target-group|failed (?:ELB|load balancer) health checks|Target\.FailedHealthChecks|Target\.Timeout|HealthCheckFailed`)

// lbCheckRefused is a line of a handed-over command (aws ecs
// describe-services or describe-tasks, aws elbv2 describe-target-health)
// saying a load balancer's health check of the workload's targets fails;
// "" when none does. The command or the line must name the workload.
func lbCheckRefused(ev *Gathered, wl string) string {
	for _, c := range ev.Commands {
		named := strings.Contains(c.Command, wl)
		for _, l := range c.Lines {
			if elbCheckFailedRE.MatchString(l) && (named || strings.Contains(l, wl)) {
				l = strings.TrimSpace(l)
				// A JSON field's value: what follows its key.
				if _, v, ok := strings.Cut(l, `": "`); ok {
					l = v
				}
				return strings.Trim(l, `",`)
			}
		}
	}
	return ""
}

// podsNotReady reports whether a workload's pods are listed and none is
// ready.
func podsNotReady(pods []corev1.Pod, wl string) bool {
	n := 0
	for i := range pods {
		p := &pods[i]
		if WorkloadOfPod(p) != wl {
			continue
		}
		n++
		if podReady(p) {
			return false
		}
	}
	return n > 0
}

// listenCommand is the command line of a workload's main container when it
// names no listen address (no --host, --bind, 0.0.0.0).
func listenCommand(pods []corev1.Pod, wl string) string {
	for i := range pods {
		p := &pods[i]
		if WorkloadOfPod(p) != wl || len(p.Spec.Containers) == 0 {
			continue
		}
		c := p.Spec.Containers[0]
		cmd := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
		if cmd == "" {
			return ""
		}
		l := strings.ToLower(cmd)
		for _, w := range []string{"--host", "--bind", "-b ", "0.0.0.0", "::", "--listen", "--address"} {
			if strings.Contains(l, w) {
				return ""
			}
		}
		for _, e := range c.Env {
			if strings.Contains(strings.ToUpper(e.Name), "HOST") || strings.Contains(strings.ToUpper(e.Name), "BIND") {
				return ""
			}
		}
		return truncate(cmd, 120)
	}
	return ""
}
