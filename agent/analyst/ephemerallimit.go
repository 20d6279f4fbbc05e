package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Pods the kubelet evicts because they exceeded their own ephemeral-storage
// limit, not because the node ran short: "Container app exceeded its local
// ephemeral storage limit "2Gi"." (the container's writable layer and its
// logs), "Pod ephemeral local storage usage exceeds the total limit of
// containers 4Gi." or "Usage of EmptyDir volume "scratch" exceeds the limit
// "10Gi"." The node has no DiskPressure; the pod itself writes more than
// its limit, usually a file inside the container's filesystem (a log file
// at a debug level, a cache, a temporary download) that nothing rotates.
// What fills it is read from du and ls run in one of its pods (kubectl
// exec), outside its volume mounts for a container's limit.

// KindEphemeralLimit is pods evicted for exceeding their own
// ephemeral-storage limit.
const KindEphemeralLimit Kind = "ephemeral_limit"

var (
	// ephemeralLimitRE are the kubelet's eviction messages for a pod
	// over its own limits (pkg/kubelet/eviction/helpers.go).
	ephemeralLimitRE = []*regexp.Regexp{
		regexp.MustCompile(`(?i)Container (\S+) exceeded its local ephemeral storage limit "?([^"\s.]+(?:\.\d+)?[^"\s.]*)"?`),
		regexp.MustCompile(`(?i)Pod ephemeral local storage usage exceeds the total limit of containers ()(\S+?)\.?\s*$`),
		regexp.MustCompile(`(?i)Usage of EmptyDir volume "?([^"\s]+)"? exceeds the limit "?([^"\s]+?)"?\.?\s*$`),
	}
	// ephemeralChangeRE is what a change that makes a pod write more to
	// its own filesystem, or lowers its limit, says.
	ephemeralChangeRE = regexp.MustCompile(`(?i)log|debug|trace|verbose|ephemeral|storage|disk|cache|tmp|scratch|emptydir|sizelimit|limit`)
)

var ephemeralLimit = &mechanism{
	kind:   KindEphemeralLimit,
	class:  classCause,
	label:  "pods evicted for exceeding their own ephemeral-storage limit",
	pod:    ephemeralLimitPod,
	detect: detectEphemeralFiller,
	event: func(e *corev1.Event) (float64, bool) {
		_, _, _, ok := ephemeralLimitOf(e.Message)
		return 0.9, e.Reason == "Evicted" && ok
	},
	eventCritical:    true,
	eventOutlivesPod: true,
	eventFacts: func(f *Finding, e *corev1.Event) {
		if f.fact("limit") != "" {
			return
		}
		scope, name, limit, _ := ephemeralLimitOf(e.Message)
		f.setFact("limit_scope", scope)
		f.setFact("limit_of", name)
		f.setFact("limit", limit)
		f.setFact("node", e.Source.Host)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return matchLine(ephemeralChangeRE, t) || h.fact("filler_path") != "" && strings.Contains(t, strings.ToLower(h.fact("filler_path")))
	},
	related: kindsOnSubject(KindEviction, KindRestarts),
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s pods are evicted by the kubelet for exceeding their own ephemeral-storage limit", h.Subject)
		switch h.fact("limit_scope") {
		case "container":
			d += fmt.Sprintf(" (container %s, limit %s: its writable layer and logs)", h.fact("limit_of"), h.fact("limit"))
		case "emptydir":
			d += fmt.Sprintf(" (emptyDir volume %s, sizeLimit %s)", h.fact("limit_of"), h.fact("limit"))
		default:
			d += fmt.Sprintf(" (the pod's containers' total limit %s)", h.fact("limit"))
		}
		d += h.clause(" on node ", "node")
		if h.fact("node_disk_ok") != "" {
			d += fmt.Sprintf(", not because the node's disk is short: %s", h.fact("node_disk_ok"))
		} else {
			d += ", not because the node's disk is short"
		}
		if p := h.fact("filler_path"); p != "" {
			d += fmt.Sprintf("; what fills it is %s inside the container (%s", p, h.fact("filler_size"))
			if f := h.fact("filler_file"); f != "" {
				d += fmt.Sprintf(", the file %s", f)
			}
			d += ")"
			if h.fact("filler_log") != "" {
				d += ", a log file written into the container's filesystem, which nothing rotates or ships"
				if v := h.fact("verbose"); v != "" {
					d += fmt.Sprintf(", at %s level", v)
				}
				if c := h.fact("verbose_change"); c != "" {
					d += fmt.Sprintf(" since the %s", c)
				} else if l := h.fact("filler_logline"); l != "" {
					d += fmt.Sprintf(" (its log: %s)", quote(truncate(l, 160), 170))
				}
			}
		}
		if m := h.fact("message"); m != "" && h.fact("filler_path") == "" {
			d += ": " + quote(truncate(m, 160), 170)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		if p := h.fact("filler_path"); p != "" && h.fact("filler_log") != "" {
			if c := h.fact("verbose_change"); c != "" {
				r.high("Revert the logging change of %s (back to its earlier level), and write its log to stdout instead of %s inside the container", s, p)
			} else {
				r.high("Write the log of %s to stdout (collected and rotated by the node) instead of %s inside the container, or lower its level", s, p)
			}
			r.med("If a file log is needed, put %s on an emptyDir volume with a sizeLimit and rotate it (logrotate, the logger's max size)", p)
		} else if p != "" {
			r.high("Stop %s from filling %s inside the container: clean or rotate it, or move it to a volume sized for it", s, p)
		} else {
			r.high("Find what %s writes into its own filesystem (kubectl exec POD -- du -sh /tmp /var/log /var/cache) and stop it, or move it to a volume sized for it", s)
		}
		r.med("Raise the ephemeral-storage limit of %s above what it legitimately writes (now %s), with a request to match so the scheduler accounts for it", s, orWord(h.fact("limit"), "its limit"))
		r.low("Alert on container ephemeral-storage use near its limit (kubelet stats, container_fs_usage_bytes) and on Evicted pods")
	},
}

// ephemeralLimitOf reads a kubelet eviction message for a pod over its
// own limit: the scope ("container", "pod", "emptydir"), the container or
// volume named, and the limit.
func ephemeralLimitOf(msg string) (scope, name, limit string, ok bool) {
	for i, re := range ephemeralLimitRE {
		if m := findSubmatch(re, strings.TrimSpace(msg)); m != nil {
			return []string{"container", "pod", "emptydir"}[i], m[1], strings.TrimSuffix(m[2], "."), true
		}
	}
	return "", "", "", false
}

// ephemeralLimitPod judges a pod evicted for exceeding its own limit.
func ephemeralLimitPod(p *corev1.Pod, base Finding) ([]Finding, bool) {
	if p.Status.Reason != "Evicted" {
		return nil, false
	}
	scope, name, limit, ok := ephemeralLimitOf(p.Status.Message)
	if !ok {
		return nil, false
	}
	f := base
	f.Kind, f.Severity, f.Weight = KindEphemeralLimit, SevCritical, 0.9
	if p.Status.StartTime != nil {
		f.Time = p.Status.StartTime.Time
	}
	for _, c := range p.Status.Conditions {
		if !c.LastTransitionTime.IsZero() {
			f.Time = earliest(f.Time, c.LastTransitionTime.Time)
		}
	}
	f.Summary = fmt.Sprintf("%s evicted: %s", base.Object, strings.TrimSpace(p.Status.Message))
	f.Evidence = []string{fmt.Sprintf("%s was evicted from node %s: %s", base.Object, p.Spec.NodeName, quote(strings.TrimSpace(p.Status.Message), 200))}
	f.setFact("node", p.Spec.NodeName)
	f.setFact("message", strings.TrimSpace(p.Status.Message))
	f.setFact("limit_scope", scope)
	f.setFact("limit_of", name)
	f.setFact("limit", limit)
	return []Finding{f}, true
}

// detectEphemeralFiller adds to each workload's eviction for its own limit
// what fills it (du and ls run in one of its pods, outside its volumes for
// a container's limit), whether it is a log at a verbose level and the
// change that set it, and what the node says of its disk.
func detectEphemeralFiller(ev *Gathered, found []Finding) []Finding {
	done := map[string]bool{}
	for i := range found {
		f := &found[i]
		if f.Kind != KindEphemeralLimit || done[f.Subject] {
			continue
		}
		done[f.Subject] = true
		ephemeralNode(ev, f)
		ephemeralFiller(ev, f)
	}
	return nil
}

// ephemeralNode says what the node of an eviction reports of its disk: no
// DiskPressure.
func ephemeralNode(ev *Gathered, f *Finding) {
	node := f.fact("node")
	for i := range ev.K8s.Nodes {
		n := &ev.K8s.Nodes[i]
		if node == "" || n.Name != node {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeDiskPressure && c.Status == corev1.ConditionFalse {
				f.setFact("node_disk_ok", fmt.Sprintf("node %s reports no DiskPressure", n.Name))
				f.Evidence = append(f.Evidence, fmt.Sprintf("node %s: DiskPressure False (%s)", n.Name, orWord(c.Reason, "no disk pressure")))
			}
		}
	}
}

// ephemeralFiller finds, in du and ls outputs run in a pod of f's
// workload, the largest path outside the pod's volume mounts (for a
// container's or the pod's limit) or in the volume (for an emptyDir's).
func ephemeralFiller(ev *Gathered, f *Finding) {
	mounts := map[string]string{} // mount path -> volume
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if WorkloadOfPod(p) != f.Subject {
			continue
		}
		for _, c := range p.Spec.Containers {
			for _, m := range c.VolumeMounts {
				mounts[strings.TrimSuffix(m.MountPath, "/")] = m.Name
			}
		}
	}
	volumeOf := func(path string) string {
		for mp, v := range mounts {
			if mp != "" && (path == mp || strings.HasPrefix(path, mp+"/")) {
				return v
			}
		}
		return ""
	}
	type entry struct {
		path, line string
		bytes      float64
	}
	var dirs, files []entry
	for _, c := range ev.Commands {
		if !c.Exec || workloadOfName(orWord(c.Pod, strings.TrimPrefix(strings.TrimPrefix(c.Target, "deploy/"), "deployment/"))) != f.Subject && c.Pod != f.Subject {
			continue
		}
		dir := ""
		for _, w := range strings.Fields(c.Run) {
			if strings.HasPrefix(strings.Trim(w, `'"`), "/") {
				dir = strings.TrimSuffix(strings.Trim(w, `'";`), "/")
			}
		}
		for _, raw := range c.Lines {
			line := strings.TrimSpace(strings.TrimRight(raw, "\r"))
			if m := findSubmatch(duRowRE, line); m != nil {
				if b, ok := sizeBytes(m[1], !strings.Contains(c.Run, "-h") && !strings.Contains(c.Run, "-sh")); ok {
					dirs = append(dirs, entry{path: strings.TrimSuffix(m[2], "/"), line: line, bytes: b})
				}
			} else if m := findSubmatch(lsRowRE, line); m != nil && strings.HasPrefix(line, "-") {
				b, _ := sizeBytes(m[1], false)
				p := m[3]
				if !strings.HasPrefix(p, "/") && dir != "" {
					p = dir + "/" + p
				}
				files = append(files, entry{path: p, line: line, bytes: b})
			}
		}
	}
	var top *entry
	for i := range dirs {
		e := &dirs[i]
		v := volumeOf(e.path)
		own := v == ""
		if f.fact("limit_scope") == "emptydir" {
			own = v != "" && v == f.fact("limit_of")
		}
		if own && e.bytes >= 64<<20 && (top == nil || e.bytes > top.bytes) {
			top = e
		}
	}
	if top == nil {
		return
	}
	file, fileBytes := "", 0.0
	for _, e := range files {
		if strings.HasPrefix(e.path, top.path+"/") && e.bytes > fileBytes {
			file, fileBytes = e.path, e.bytes
		}
	}
	// A directory's size comes from du, its file's from ls: the larger
	// says what is held.
	held := max(top.bytes, fileBytes)
	f.setFact("filler_path", top.path)
	f.setFact("filler_size", humanBytes(int64(held)))
	f.Evidence = append(f.Evidence, fmt.Sprintf("du in a pod of %s: %s", f.Subject, quote(top.line, 200)))
	if file != "" {
		f.setFact("filler_file", file[strings.LastIndexByte(file, '/')+1:])
	}
	if !matchLine(logPathRE, top.path) && !matchLine(logPathRE, file) {
		return
	}
	f.setFact("filler_log", "true")
	// The level: the change that set it (or that names the file), else
	// the workload's own line that says where and how it logs.
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if c.Timestamp.After(ev.Window.End) {
			continue
		}
		named := strings.Contains(c.Description, top.path)
		if c.Service == f.Subject && matchLine(logLevelWordsRE, c.Description) && matchLine(verboseLevelRE, c.Description) || named && matchLine(verboseLevelRE, c.Description) {
			f.setFact("verbose_change", fmt.Sprintf("%s change of %s at %s: %s", c.Kind, c.Service, ts(c.Timestamp), quote(truncate(c.Description, 200), 210)))
			f.setFact("verbose", strings.ToUpper(findString(verboseLevelRE, c.Description)))
		}
	}
	for _, set := range ev.Logs {
		if set.Subject != f.Subject {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if strings.Contains(l, top.path) && f.fact("filler_logline") == "" {
					f.setFact("filler_logline", ReadableLine(l))
					if f.fact("verbose") == "" && matchLine(verboseLevelRE, l) && matchLine(logLevelWordsRE, l) {
						f.setFact("verbose", strings.ToUpper(findString(verboseLevelRE, l)))
					}
				}
			}
		}
	}
	if c := f.fact("verbose_change"); c != "" {
		f.Evidence = append(f.Evidence, c)
	} else if l := f.fact("filler_logline"); l != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs: %s", f.Subject, quote(truncate(l, 200), 210)))
	}
}
