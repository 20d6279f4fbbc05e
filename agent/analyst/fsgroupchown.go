package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A pod slow to start because the kubelet changes the ownership of every
// file on its volume. A pod whose securityContext sets fsGroup has each
// volume that supports it made group-owned by that group before its
// containers start; without fsGroupChangePolicy: OnRootMismatch the
// kubelet walks the whole volume every time it mounts it (chown and chmod
// of each file), which for millions of files takes many minutes. The pod
// sits in ContainerCreating, the kubelet's mount wait times out ("Unable
// to attach or mount volumes: unmounted volumes=[data] ... timed out
// waiting for the condition") and retries while the walk goes on; the
// disk looks busy with small reads. The kubelet says it in its log
// ("Setting volume ownership for <dir> and fsGroup set. If the volume has
// a lot of files then setting volume ownership could be slow"; since 1.30
// "Perform recursive ownership change for directory") and, since 1.32, in
// a VolumePermissionChangeInProgress event. The fix is
// fsGroupChangePolicy: OnRootMismatch (the walk runs once, when the
// volume's root does not match), not a faster disk.

// KindFSGroupChown is a pod waiting for the kubelet's recursive ownership
// change of its volume (fsGroup without OnRootMismatch).
const KindFSGroupChown Kind = "fsgroup_chown"

var (
	// ownershipChangeRE is the kubelet walking a volume for fsGroup.
	ownershipChangeRE = regexp.MustCompile(`(?i)Setting volume ownership for|recursive ownership change|VolumePermissionChangeInProgress|volume ownership change (?:is )?taking`)
	// mountWaitRE is the kubelet's mount wait timing out.
	mountWaitRE = regexp.MustCompile(`(?i)unmounted volumes=\[([^\]]*)\]`)
	// fsGroupChangeRE is a change that set a pod's fsGroup or security
	// context.
	fsGroupChangeRE = regexp.MustCompile(`(?i)fsGroup|securityContext|security context|runAsUser|runAsGroup|run as (?:uid|user|gid)|hardening`)
)

var fsGroupChown = &mechanism{
	kind:   KindFSGroupChown,
	class:  classCause,
	label:  "pod start waits for the kubelet's recursive fsGroup ownership change of its volume",
	detect: detectFSGroupChown,
	// The mount wait timing out is its consequence.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindMountFailure && f.Subject == h.Subject
	},
	fitsChange:     changeSays(fsGroupChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s's pods wait in ContainerCreating while the kubelet changes the ownership of every file on volume %s: the pod's securityContext sets fsGroup %s without fsGroupChangePolicy (OnRootMismatch), so at each mount the kubelet recursively chowns the whole volume before the containers start", h.Subject, orWord(h.fact("volume"), "its volume"), h.fact("fsgroup"))
		if n := h.fact("files"); n != "" {
			d += fmt.Sprintf(" (%s files on it)", n)
		}
		if l := h.fact("line"); l != "" {
			d += fmt.Sprintf("; the kubelet: %s", quote(l, 200))
		}
		d += "; its mount wait times out and retries meanwhile, the volume and its disk are not at fault"
		if c := h.fact("change"); c != "" {
			d += fmt.Sprintf(". fsGroup came with %s", quote(c, 180))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Set securityContext.fsGroupChangePolicy: OnRootMismatch on %s's pod template, so the kubelet changes ownership only when the volume's root does not match fsGroup %s (once), not at every start", h.Subject, orWord(h.fact("fsgroup"), ""))
		r.med("Let the current start finish (or chown the volume once to group %s), and leave the disk type alone: the time goes to the per-file ownership walk, not to the disk", orWord(h.fact("fsgroup"), "fsGroup"))
		r.low("Alert on pods in ContainerCreating for more than a few minutes, and on the kubelet's VolumePermissionChangeInProgress events")
	},
}

// detectFSGroupChown finds the workloads whose pods cannot finish
// mounting while fsGroup is set without OnRootMismatch and the kubelet
// says it is changing the volume's ownership.
func detectFSGroupChown(ev *Gathered, found []Finding) []Finding {
	// The kubelet's own word: its log or the event.
	line := ""
	var at time.Time
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			for _, l := range t.Lines() {
				if matchLine(ownershipChangeRE, l) && line == "" {
					line, at = l, firstOf(t.FirstSeen, t.FirstIncident)
				}
			}
		}
	}
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if line == "" && (matchLine(ownershipChangeRE, e.Reason) || matchLine(ownershipChangeRE, e.Message)) {
			line, at = e.Reason+": "+e.Message, firstOf(e.FirstTimestamp.Time, e.EventTime.Time)
		}
	}
	var out []Finding
	for i := range found {
		m := &found[i]
		if m.Kind != KindMountFailure || slices.ContainsFunc(out, func(f Finding) bool { return f.Subject == m.Subject }) {
			continue
		}
		spec := workloadPodSpec(ev, m.Subject)
		if spec == nil || spec.SecurityContext == nil || spec.SecurityContext.FSGroup == nil {
			continue
		}
		if p := spec.SecurityContext.FSGroupChangePolicy; p != nil && *p == corev1.FSGroupChangeOnRootMismatch {
			continue
		}
		// Without the kubelet's word, only a mount wait timing out on a
		// claim's volume fits.
		volume := ""
		if mm := findSubmatch(mountWaitRE, m.fact("message")); mm != nil {
			volume = strings.TrimSpace(mm[1])
		}
		if line == "" && volume == "" {
			continue
		}
		f := Finding{Kind: KindFSGroupChown, Subject: m.Subject, Object: m.Object, Namespace: m.Namespace, Time: firstOf(m.Time, at),
			Severity: SevCritical, Weight: 0.9, Source: SrcKubernetes}
		if line == "" {
			f.Weight = 0.8
		}
		f.setFact("fsgroup", fmt.Sprint(*spec.SecurityContext.FSGroup))
		f.setFact("volume", volume)
		f.setFact("line", ReadableLine(line))
		f.setFact("files", volumeFiles(ev, volume))
		for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
			if (c.Service == m.Subject || strings.Contains(c.Description, m.Subject)) && strings.Contains(strings.ToLower(c.Description), "fsgroup") {
				f.Facts["change"] = fmt.Sprintf("%s (%s)", c.Description, ts(c.Timestamp))
			}
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's pod securityContext: fsGroup %s, no fsGroupChangePolicy OnRootMismatch", m.Subject, f.fact("fsgroup")))
		if line != "" {
			f.Evidence = append(f.Evidence, "kubelet: "+quote(ReadableLine(line), 300))
		}
		if n := f.fact("files"); n != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("volume %s holds %s files (df -i)", orWord(volume, "?"), n))
		}
		f.Summary = fmt.Sprintf("%s's volume ownership changed file by file at each start (fsGroup %s)", m.Subject, f.fact("fsgroup"))
		out = append(out, f)
	}
	return out
}

// workloadPodSpec is the pod spec of a workload: a listed pod's, else its
// controller's template.
func workloadPodSpec(ev *Gathered, workload string) *corev1.PodSpec {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if WorkloadOfPod(p) == workload && p.Spec.SecurityContext != nil && p.Spec.SecurityContext.FSGroup != nil {
			return &p.Spec
		}
	}
	for i := range ev.K8s.StatefulSets {
		if ev.K8s.StatefulSets[i].Name == workload {
			return &ev.K8s.StatefulSets[i].Spec.Template.Spec
		}
	}
	for i := range ev.K8s.Deployments {
		if ev.K8s.Deployments[i].Name == workload {
			return &ev.K8s.Deployments[i].Spec.Template.Spec
		}
	}
	return nil
}

// volumeFiles reads how many files a df -i shows used on a mount of the
// volume (its claim's volume directory), "" when none says.
func volumeFiles(ev *Gathered, volume string) string {
	for _, c := range ev.Commands {
		var cols []string
		for _, l := range c.Lines {
			f := strings.Fields(l)
			if len(f) > 0 && f[0] == "Filesystem" {
				cols = nil
				if matchLine(dfInodeHeaderRE, l) {
					cols = dfColumns(l)
				}
				continue
			}
			if cols == nil || len(f) != len(cols) {
				continue
			}
			mount := f[len(f)-1]
			if !strings.Contains(mount, "kubernetes.io~") && (volume == "" || !strings.Contains(mount, volume)) {
				continue
			}
			for i, k := range cols {
				if strings.EqualFold(k, "IUsed") || strings.EqualFold(k, "iused") {
					return f[i]
				}
			}
		}
	}
	return ""
}
