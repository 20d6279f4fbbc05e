package analyst

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Old restarts of a healthy subject: a restart counter (kubectl's
// RESTARTS, Argo CD's pod view) never goes down, so a workload whose pods
// restarted days ago (a node reboot, a start-up retry) shows the count for
// ever. When every restart of the subject's pods ended before the incident
// window and every pod runs ready now, the count is history, not a crash
// loop: the healthy answer says how old it is.

// oldRestarts is the sentence a healthy answer adds about the restarts of
// service's pods, "" when it has none, when any pod is not running ready,
// or when a restart's time is unknown or inside the window.
func oldRestarts(pods []corev1.Pod, service string, w Window) string {
	if service == "" || w.End.IsZero() {
		return ""
	}
	var total, podsWith int
	var last time.Time
	for i := range pods {
		p := &pods[i]
		if !strings.EqualFold(WorkloadOfPod(p), service) {
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			return ""
		}
		n := 0
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil || !cs.Ready {
				return ""
			}
			if cs.RestartCount == 0 {
				continue
			}
			t := cs.LastTerminationState.Terminated
			if t == nil || t.FinishedAt.IsZero() {
				return ""
			}
			n += int(cs.RestartCount)
			last = latest(last, t.FinishedAt.Time)
		}
		if n > 0 {
			total += n
			podsWith++
		}
	}
	if total == 0 || !last.Before(w.Start) {
		return ""
	}
	return fmt.Sprintf("Its %s (on %s) are old: the last one ended %s before now (%s), none since, and its pods run ready; a restart count never goes down.",
		plural(total, "restart", "restarts"), plural(podsWith, "pod", "pods"), agoWords(w.End.Sub(last)), ts(last))
}

// agoWords writes a long duration as kubectl ages do ("2d7h", "5h12m").
func agoWords(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dm", int(d.Minutes()))
}
