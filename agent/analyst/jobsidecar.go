package analyst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
		f.Summary = fmt.Sprintf("Job %s stays active: %s finished, sidecar %s still running", job, done.Name, running.Name)
		out = append(out, f)
	}
	return out
}
