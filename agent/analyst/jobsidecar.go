package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Job that never completes because its pod never ends: the main
// container finished (exit 0) but a sidecar container injected next to it
// (istio-proxy, linkerd-proxy, a Cloud SQL proxy, a log shipper) keeps
// running, so the pod stays Running and the Job Active for ever. A CronJob
// with concurrencyPolicy Forbid then skips every later run
// ("JobAlreadyActive: Not starting job because prior execution is running
// and concurrency policy is Forbid").

// KindJobSidecar is a Job held open by a sidecar container.
const KindJobSidecar Kind = "job_sidecar"

var jobSidecar = &mechanism{
	kind:   KindJobSidecar,
	class:  classCause,
	label:  "a sidecar container keeps a Job's pod running after its work finished",
	detect: detectJobSidecars,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "sidecar") || strings.Contains(t, "istio") || strings.Contains(t, "linkerd") || strings.Contains(t, "mesh") || strings.Contains(t, "inject")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the Job %s of %s never completes: its container %s finished (exit code 0 at %s) but the sidecar container %s keeps pod %s running, so the Job stays active",
			h.fact("job"), h.Subject, h.fact("main"), h.fact("finished"), h.fact("sidecar"), h.fact("pod"))
		if m := h.fact("injected_mark"); m != "" {
			d += fmt.Sprintf("; %s was not declared by the Job's template but injected into the pod at admission (%s)", h.fact("sidecar"), m)
		}
		if c := h.fact("injection_change"); c != "" {
			d += fmt.Sprintf("; injection was switched on by %s", c)
		}
		if ok := h.fact("last_complete"); ok != "" {
			d += fmt.Sprintf("; the run before it, %s", ok)
		}
		if s := h.fact("skipped"); s != "" {
			d += fmt.Sprintf("; with concurrencyPolicy Forbid the CronJob skips every later run (%s)", s)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Delete the stuck Job %s so the next run of %s can start", h.fact("job"), h.Subject)
		r.high("Make the sidecar %s end with the Job: run it as a native sidecar (an init container with restartPolicy: Always, Kubernetes 1.29+), or have the main container stop it (Istio: POST localhost:15020/quitquitquit), or disable injection for the Job (sidecar.istio.io/inject: \"false\")", h.fact("sidecar"))
		r.med("Set activeDeadlineSeconds on the Job template so a run that does not end is stopped")
		r.low("Alert on CronJobs whose last successful run is older than their schedule")
	},
}

// sidecarWords name containers injected next to an application.
var sidecarWords = []string{"istio-proxy", "linkerd-proxy", "envoy", "proxy", "sidecar", "cloud-sql", "cloudsql", "vault-agent", "fluent", "filebeat", "promtail", "datadog", "otel", "collector", "agent"}

func sidecarLike(name string) bool {
	n := strings.ToLower(name)
	for _, w := range sidecarWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// detectJobSidecars finds Job pods still running on a sidecar after their
// main container finished.
func detectJobSidecars(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		job := p.Labels["job-name"]
		if job == "" {
			job = p.Labels["batch.kubernetes.io/job-name"]
		}
		if job == "" || p.Status.Phase != corev1.PodRunning {
			continue
		}
		var done, running *corev1.ContainerStatus
		for j := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[j]
			switch {
			case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 && !sidecarLike(cs.Name):
				done = cs
			case cs.State.Running != nil && sidecarLike(cs.Name):
				running = cs
			}
		}
		if done == nil || running == nil {
			continue
		}
		subject := workloadOfName(job)
		f := Finding{Kind: KindJobSidecar, Subject: subject, Object: "pod " + p.Namespace + "/" + p.Name, Namespace: p.Namespace,
			Time: done.State.Terminated.FinishedAt.Time, Severity: SevCritical, Weight: 0.9, Source: SrcKubernetes}
		f.setFact("job", job)
		f.setFact("pod", p.Name)
		f.setFact("main", done.Name)
		f.setFact("sidecar", running.Name)
		f.setFact("finished", ts(done.State.Terminated.FinishedAt.Time))
		f.setFact("current", "true") // the pod's state now, however long ago it began
		f.Evidence = []string{fmt.Sprintf("pod %s/%s (Job %s): container %s Terminated (Completed, exit code 0) at %s; container %s still Running since %s",
			p.Namespace, p.Name, job, done.Name, ts(done.State.Terminated.FinishedAt.Time), running.Name, ts(running.State.Running.StartedAt.Time))}
		// The CronJob skipping its runs meanwhile.
		for _, e := range ev.K8s.Events {
			if e.Reason == "JobAlreadyActive" && (e.InvolvedObject.Name == subject || strings.HasPrefix(job, e.InvolvedObject.Name+"-")) {
				n := e.Count
				if e.Series != nil && e.Series.Count > n {
					n = e.Series.Count
				}
				skipped := fmt.Sprintf("JobAlreadyActive: %q", strings.TrimSpace(e.Message))
				if n > 1 {
					skipped += fmt.Sprintf(" (%d times)", n)
				}
				f.setFact("skipped", skipped)
				f.Evidence = append(f.Evidence, fmt.Sprintf("event %s on cronjob %s/%s: %q", e.Reason, e.Namespace, e.InvolvedObject.Name, strings.TrimSpace(e.Message)))
				break
			}
		}
		f.setFact("why", fmt.Sprintf("container %s exited 0 but the sidecar %s still runs", done.Name, running.Name))
		// How the sidecar got there: injected at admission (the pod says
		// so), switched on by a change; and the runs before that finished.
		if m := injectionMark(p, running.Name); m != "" {
			f.setFact("injected_mark", m)
			f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s: container %s was injected at admission (%s)", p.Namespace, p.Name, running.Name, m))
		}
		var switched time.Time
		if c, ok := injectionChange(ev, p.Namespace, subject, running.Name); ok {
			switched = c.Timestamp
			f.setFact("injection_change", fmt.Sprintf("the %s change at %s: %q", orWord(c.Kind, "recorded"), ts(c.Timestamp), c.Description))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s change of %s at %s: %q (sidecar injection switched on, before this run started)", orWord(c.Kind, "recorded"), orWord(c.Service, p.Namespace), ts(c.Timestamp), c.Description))
		}
		if j := lastCompletedRun(ev.K8s.Jobs, p.Namespace, job, switched); j != nil {
			took := ""
			if j.Status.StartTime != nil && j.Status.CompletionTime != nil {
				took = " in " + j.Status.CompletionTime.Sub(j.Status.StartTime.Time).Round(time.Second).String()
			}
			f.setFact("last_complete", fmt.Sprintf("%s, completed%s", j.Name, took))
			f.Evidence = append(f.Evidence, fmt.Sprintf("Job %s/%s (the run before) completed%s", j.Namespace, j.Name, took))
		}
		f.Summary = fmt.Sprintf("Job %s stays active: %s finished, sidecar %s still running", job, done.Name, running.Name)
		out = append(out, f)
	}
	return out
}

// injectionMarks are the pod annotations and labels mesh and agent
// injectors leave on a pod they injected a container into: Istio
// (sidecar.istio.io/status), Linkerd (linkerd.io/proxy-version), Kuma
// (kuma.io/sidecar-injected), Consul (consul.hashicorp.com/connect-inject-status),
// Vault (vault.hashicorp.com/agent-inject-status), Open Service Mesh
// (openservicemesh.io/sidecar-injection), Dapr (dapr.io/enabled).
var injectionMarks = []string{"sidecar.istio.io/status", "linkerd.io/proxy-version", "kuma.io/sidecar-injected", "consul.hashicorp.com/connect-inject-status",
	"vault.hashicorp.com/agent-inject-status", "openservicemesh.io/sidecar-injection", "dapr.io/enabled", "linkerd.io/inject", "sidecar.istio.io/inject", "istio.io/rev"}

// injectionMark says which mark of an injector the pod carries, "" when
// none does.
func injectionMark(p *corev1.Pod, sidecar string) string {
	for _, k := range injectionMarks {
		for _, m := range []map[string]string{p.Annotations, p.Labels} {
			v, ok := m[k]
			if !ok {
				continue
			}
			if k == "sidecar.istio.io/inject" || k == "linkerd.io/inject" {
				if strings.EqualFold(v, "false") || strings.EqualFold(v, "disabled") {
					continue
				}
			}
			if strings.HasSuffix(k, "/status") && strings.Contains(v, sidecar) {
				return fmt.Sprintf("annotation %s lists %s", k, sidecar)
			}
			if v == "" {
				return "annotation " + k
			}
			return fmt.Sprintf("%s=%s", k, truncate(v, 40))
		}
	}
	return ""
}

// injectionChangeRE are the words of a change that switches sidecar
// injection on: a namespace or pod label or annotation of an injector, a
// mesh onboarding.
var injectionChangeRE = regexp.MustCompile(`(?i)istio-injection|istio\.io/rev|sidecar\.istio\.io/inject|linkerd\.io/inject|kuma\.io/sidecar-injection|connect-inject|agent-inject|sidecar.injection|inject(?:ion|ed)?\b.*\b(?:sidecar|proxy|mesh|enabled)|\bmesh onboarding|\b(?:enable|onboard)\w* (?:the )?(?:service )?mesh`)

// injectionChange finds the change, in the window or the month before,
// that switched sidecar injection on for the namespace or the Job's
// workload: the latest one.
func injectionChange(ev *Gathered, ns, subject, sidecar string) (evidence.Change, bool) {
	var best evidence.Change
	found := false
	for _, list := range [][]evidence.Change{ev.Earlier, ev.Changes} {
		for _, c := range list {
			if !matchLine(injectionChangeRE, c.Description) {
				continue
			}
			t := strings.ToLower(c.Service + " " + c.Description)
			if !strings.Contains(t, strings.ToLower(ns)) && !strings.Contains(t, strings.ToLower(subject)) {
				continue
			}
			if !found || c.Timestamp.After(best.Timestamp) {
				best, found = c, true
			}
		}
	}
	return best, found
}

// lastCompletedRun is the latest Job of the same CronJob (its name less
// the schedule suffix) that completed, before the injection was switched
// on when that is known.
func lastCompletedRun(jobs []batchv1.Job, ns, job string, before time.Time) *batchv1.Job {
	cron := workloadOfName(job)
	var best *batchv1.Job
	for i := range jobs {
		j := &jobs[i]
		if j.Namespace != ns && j.Namespace != "" || j.Name == job || workloadOfName(j.Name) != cron || j.Status.Succeeded == 0 {
			continue
		}
		if !before.IsZero() && j.Status.CompletionTime != nil && j.Status.CompletionTime.After(before) {
			continue
		}
		if best == nil || best.Status.CompletionTime == nil || j.Status.CompletionTime != nil && j.Status.CompletionTime.After(best.Status.CompletionTime.Time) {
			best = j
		}
	}
	return best
}
