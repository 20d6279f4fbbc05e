package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Files in a memory-backed volume: an emptyDir with medium: Memory (a
// tmpfs, /dev/shm, a scratch directory moved to RAM for speed) holds its
// files in the container's memory cgroup as shared memory (shmem), so
// every file written there counts against the container's memory limit.
// The working set climbs to the limit and the OOM killer kills the
// container while the process's own memory (its RSS, its heap) stays
// flat: it is not a leak in the code. Read from the pod's volumes (or the
// change that set medium: Memory) with what shows the files there: the
// container's memory.stat (shmem, total_shmem in cgroup v1), df of the
// mount (a tmpfs filling), or its working set growing while its RSS does
// not. The fix is the volume (back on disk, or a sizeLimit) and what the
// service leaves in it, not the heap.

// KindTmpfsMemory is a memory-backed volume filling the memory limit.
const KindTmpfsMemory Kind = "tmpfs_memory"

var tmpfsMemory = &mechanism{
	kind:    KindTmpfsMemory,
	class:   classCause,
	label:   "files in a memory-backed volume (tmpfs) counted against the memory limit",
	detect:  detectTmpfsMemory,
	related: kindsOnSubject(KindOOMKilled, KindSaturation, KindMemoryClaim, KindCrashLoop, KindEviction),
	// Only a change of the volume (its medium, a tmpfs, a sizeLimit)
	// brings it.
	strictTriggers: true,
	fitsChange:     changeSays(memoryMediumRE),
	describe:       describeTmpfsMemory,
	recommend:      recommendTmpfsMemory,
}

var (
	// memoryMediumRE is a change or a spec that puts a volume in memory.
	memoryMediumRE = regexp.MustCompile(`(?i)medium:?\s*"?memory\b|medium\s*=\s*memory|\btmpfs\b|memory-backed|ramdisk|/dev/shm`)
	// shmemRE is the shared-memory line of a cgroup's memory.stat (v2
	// shmem, v1 total_shmem).
	shmemRE = regexp.MustCompile(`^\s*(?:total_)?shmem\s+(\d+)\s*$`)
	// anonRE is the anonymous memory of a cgroup (v2 anon, v1 total_rss).
	anonRE = regexp.MustCompile(`^\s*(?:anon|total_rss)\s+(\d+)\s*$`)
	// dfTmpfsRE is a df row of a tmpfs: filesystem, size, used, avail,
	// use%, mount point.
	dfTmpfsRE = regexp.MustCompile(`^(?:tmpfs|shm|none)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)%\s+(/\S*)\s*$`)
)

// memoryVolume is a memory-backed volume of a workload's pods.
type memoryVolume struct {
	name, mount, sizeLimit, memLimit string
}

// memoryVolumes lists the memory-backed emptyDirs the pods of a workload
// mount, with the memory limit of the container that mounts each.
func memoryVolumes(pods []corev1.Pod) map[string][]memoryVolume {
	out := map[string][]memoryVolume{}
	for i := range pods {
		p := &pods[i]
		wl := WorkloadOfPod(p)
		if len(out[wl]) > 0 {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
				continue
			}
			mv := memoryVolume{name: v.Name}
			if q := v.EmptyDir.SizeLimit; q != nil {
				mv.sizeLimit = q.String()
			}
			for _, c := range p.Spec.Containers {
				for _, m := range c.VolumeMounts {
					if m.Name == v.Name && mv.mount == "" {
						mv.mount = m.MountPath
						if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
							mv.memLimit = q.String()
						}
					}
				}
			}
			out[wl] = append(out[wl], mv)
		}
	}
	return out
}

func detectTmpfsMemory(ev *Gathered, found []Finding) []Finding {
	vols := memoryVolumes(ev.K8s.Pods)
	// A change that set medium: Memory names the workload even when no
	// pod spec was read.
	changed := map[string]string{}
	for _, c := range append(toChanges(ev.Earlier), toChanges(ev.Changes)...) {
		if matchLine(memoryMediumRE, c.text) && c.service != "" {
			changed[strings.ToLower(c.service)] = fmt.Sprintf("%s (%s)", c.text, ts(c.at))
		}
	}
	var out []Finding
	for _, subject := range memorySubjects(ev, vols, changed) {
		mvs := vols[subject]
		f := Finding{Kind: KindTmpfsMemory, Subject: subject, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.8,
			Source: SrcKubernetes, Time: ev.Window.Start, Object: "pod volumes of " + subject}
		if len(mvs) > 0 {
			v := mvs[0]
			f.setFact("volume", v.name)
			f.setFact("mount", v.mount)
			f.setFact("size_limit", v.sizeLimit)
			f.setFact("memory_limit", v.memLimit)
			e := fmt.Sprintf("the pods of %s mount volume %s at %s: an emptyDir with medium: Memory (tmpfs)", subject, v.name, orWord(v.mount, "?"))
			if v.sizeLimit == "" {
				e += " and no sizeLimit"
			} else {
				e += ", sizeLimit " + v.sizeLimit
			}
			if v.memLimit != "" {
				e += "; the container's memory limit is " + v.memLimit
			}
			f.Evidence = append(f.Evidence, e)
		} else if t := changed[strings.ToLower(subject)]; t != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("a change of %s put a volume in memory: %s", subject, quote(t, 160)))
		}
		if t := changed[strings.ToLower(subject)]; t != "" {
			f.setFact("change", t)
		}
		// What shows the files there: the cgroup's shmem, df of a tmpfs.
		measured := false
		for _, c := range ev.Commands {
			if c.Pod != "" && !strings.EqualFold(workloadOfName(c.Pod), subject) {
				continue
			}
			var shmem, anon int64
			for _, l := range c.Lines {
				if m := findSubmatch(shmemRE, l); m != nil {
					shmem, _ = strconv.ParseInt(m[1], 10, 64)
				} else if m := findSubmatch(anonRE, l); m != nil {
					anon, _ = strconv.ParseInt(m[1], 10, 64)
				} else if m := findSubmatch(dfTmpfsRE, l); m != nil && (f.fact("mount") == "" || m[5] == f.fact("mount")) {
					f.setFact("mount", m[5])
					f.setFact("tmpfs_used", m[2])
					f.Evidence = append(f.Evidence, fmt.Sprintf("df in %s: %s is a tmpfs with %s used (%s)", orWord(c.Pod, subject), m[5], m[2], strings.Join(strings.Fields(l), " ")))
					measured = true
				}
			}
			if shmem >= 64<<20 {
				f.setFact("shmem", humanBytes(shmem))
				e := fmt.Sprintf("memory.stat of %s: shmem %s (files in tmpfs, counted in its memory)", orWord(c.Pod, subject), humanBytes(shmem))
				if anon > 0 {
					f.setFact("anon", humanBytes(anon))
					e += fmt.Sprintf(", against anon %s (the process's own memory)", humanBytes(anon))
				}
				f.Evidence = append(f.Evidence, e)
				measured = true
			}
		}
		// Or its working set growing while its RSS stays flat.
		ws, rss := memoryGrowth(ev.Metrics, subject, "working_set"), memoryGrowth(ev.Metrics, subject, "rss")
		rssFlat := ws > 64<<20 && rss >= 0 && rss*4 < ws
		if rssFlat {
			f.setFact("rss_flat", "true")
			f.Evidence = append(f.Evidence, fmt.Sprintf("its working set grew by %s in the window while its RSS grew by %s: the growth is not the process's", humanBytes(int64(ws)), humanBytes(int64(max(rss, 0)))))
		}
		grows := rssFlat || measured
		for _, g := range found {
			if !strings.EqualFold(g.Subject, subject) {
				continue
			}
			if g.Kind == KindOOMKilled || g.Kind == KindSaturation && strings.Contains(g.fact("metric"), "memory") {
				grows = true
				if !g.Time.IsZero() && g.Time.Before(f.Time) {
					f.Time = g.Time
				}
			}
		}
		if !grows || len(mvs) == 0 && !measured {
			continue
		}
		if measured || rssFlat {
			f.Weight = 0.92
			f.setFact("why", "files in the memory-backed volume "+orWord(f.fact("mount"), f.fact("volume"))+" count against its memory limit")
		}
		f.Summary = fmt.Sprintf("%s fills its memory limit with files in a memory-backed emptyDir (tmpfs) at %s", subject, orWord(f.fact("mount"), f.fact("volume")))
		out = append(out, f)
	}
	return out
}

// memorySubjects are the workloads with a memory-backed volume (or a
// change that made one) that the question is about, or whose memory the
// findings show growing.
func memorySubjects(ev *Gathered, vols map[string][]memoryVolume, changed map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[strings.ToLower(s)] {
			seen[strings.ToLower(s)] = true
			out = append(out, s)
		}
	}
	for wl := range vols {
		if strings.EqualFold(wl, ev.Scope.Service) {
			add(wl)
		}
	}
	if changed[strings.ToLower(ev.Scope.Service)] != "" {
		add(ev.Scope.Service)
	}
	for wl := range vols {
		add(wl)
	}
	return out
}

// memoryGrowth is how much a subject's memory series named like part
// grew over the window (last against first), -1 when none was gathered.
func memoryGrowth(sets []MetricSet, subject, part string) float64 {
	for _, ms := range sets {
		n := strings.ToLower(ms.Name)
		if !strings.Contains(n, "memory") || !strings.Contains(n, part) {
			continue
		}
		total, ok := 0.0, false
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) || len(s.Points) < 2 {
				continue
			}
			first, last := s.Points[0].V, s.Points[len(s.Points)-1].V
			total += last - first
			ok = true
		}
		if ok {
			return total
		}
	}
	return -1
}

// evidenceChange is a change's service and text, for reading either list.
type evidenceChange struct {
	service, text string
	at            time.Time
}

func toChanges(cs []evidence.Change) []evidenceChange {
	out := make([]evidenceChange, 0, len(cs))
	for _, c := range cs {
		out = append(out, evidenceChange{c.Service, c.Description, c.Timestamp})
	}
	return out
}

func describeTmpfsMemory(h *Hypothesis, sc Scope) string {
	mount := orWord(h.fact("mount"), "its volume")
	d := fmt.Sprintf("%s's memory fills with files, not with its process: ", h.Subject)
	if v := h.fact("volume"); v != "" {
		d += fmt.Sprintf("volume %s, mounted at %s, is an emptyDir with medium: Memory (tmpfs)", v, mount)
	} else {
		d += fmt.Sprintf("%s is a memory-backed emptyDir (tmpfs)", mount)
	}
	d += ", so every file written there is shmem charged to the container's memory cgroup and counts against its memory limit"
	d += h.clause(" of ", "memory_limit")
	var measured []string
	if u := h.fact("tmpfs_used"); u != "" {
		measured = append(measured, u+" used on the tmpfs")
	}
	if s := h.fact("shmem"); s != "" {
		m := "shmem " + s
		m += h.clause(" against anon ", "anon")
		measured = append(measured, m+" in memory.stat")
	}
	if len(measured) > 0 {
		d += " (" + strings.Join(measured, ", ") + ")"
	}
	if h.fact("size_limit") == "" && h.fact("volume") != "" {
		d += "; the volume has no sizeLimit"
	}
	if c := h.fact("change"); c != "" && h.Trigger == nil {
		d += "; it was put in memory by the change " + quote(c, 200)
	}
	if h.fact("rss_flat") != "" {
		d += ". Its working set climbs while its RSS stays flat: not a leak in the code"
	} else {
		d += ". It is not a leak in the process"
	}
	if hasKind(h.Support, KindOOMKilled) {
		d += "; the OOM killer kills the container when the files and the process together reach the limit"
	}
	return d
}

func recommendTmpfsMemory(h *Hypothesis, sc Scope, r *recommender) {
	mount := orWord(h.fact("mount"), "the volume")
	if c := h.Trigger; c != nil {
		r.high("Revert the change that put %s in memory (%s), or drop medium: Memory so the emptyDir is on the node's disk", mount, truncate(orWord(c.fact("description"), c.Summary), 140))
	} else if c := h.fact("change"); c != "" {
		r.high("Revert the change that put %s in memory (%s), or drop medium: Memory so the emptyDir is on the node's disk", mount, truncate(c, 140))
	} else {
		r.high("Drop medium: Memory from the emptyDir at %s of %s so its files are on the node's disk, or give it a sizeLimit well below the memory limit", mount, h.Subject)
	}
	r.high("Delete the files %s leaves in %s once they are used, so the volume does not grow for the whole run", h.Subject, mount)
	r.med("If the volume must stay in memory, raise the memory limit of %s by the volume's sizeLimit: the files and the process share it", h.Subject)
	r.low("Alert on shmem (container_memory_cache or memory.stat) growing while RSS stays flat, not only on the working set")
}
