package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Native memory fragmented by the C allocator: a multi-threaded process
// of a language runtime (Ruby's Sidekiq or Puma, Python's threads, a
// native extension) that used jemalloc (LD_PRELOAD libjemalloc, a base
// image built with it) or capped glibc's arenas (MALLOC_ARENA_MAX=2), and
// lost it (a new base image, an env var dropped). glibc malloc then gives
// each thread its own arena and returns little of it to the system: the
// resident memory (RSS, the container's working set) climbs for hours
// while the language's own heap (Ruby's live slots, Python's objects)
// stays flat, and the container is OOMKilled at its limit. It looks like
// a leak in the code and is not: a heap profile finds nothing. Read from
// what shows the allocator gone (a Dockerfile diff or an env listing that
// removes jemalloc, LD_PRELOAD or MALLOC_ARENA_MAX; "grep -c jemalloc
// /proc/1/maps" answering 0) with memory growing or OOM kills on the same
// workload; the heap staying flat while RSS climbs confirms it.

// KindMallocFragmentation is native memory fragmented by glibc malloc
// after jemalloc or an arena cap was lost.
const KindMallocFragmentation Kind = "malloc_fragmentation"

var mallocFragmentation = &mechanism{
	kind:    KindMallocFragmentation,
	class:   classCause,
	label:   "native memory fragmentation in glibc malloc (jemalloc or MALLOC_ARENA_MAX lost)",
	detect:  detectMallocFragmentation,
	related: kindsOnSubject(KindOOMKilled, KindSaturation, KindMemoryClaim, KindCrashLoop),
	// Only a change of the image or its allocator settings brings it.
	strictTriggers: true,
	fitsChange:     changeSays(allocatorChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		d := fmt.Sprintf("%s's resident memory (RSS) climbs until its containers are OOMKilled", s)
		if l := h.fact("memory_limit"); l != "" {
			d += " at the memory limit of " + l
		}
		d += ": native memory fragmentation in glibc malloc, not a leak in the code"
		if hf := h.fact("heap_flat"); hf != "" {
			d += " (" + hf + ")"
		}
		d += fmt.Sprintf(" — %s", h.fact("allocator"))
		d += ", so glibc malloc gives each thread its own arena"
		if t := h.fact("threads"); t != "" {
			d += " (" + t + ")"
		}
		d += " and fragmented arenas are not returned to the system"
		if r := h.fact("release"); r != "" && h.Trigger == nil {
			d += "; the allocator changed with " + r
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.high("Bring jemalloc back in the image of %s (install libjemalloc2 and set LD_PRELOAD to it, or build the runtime with --with-jemalloc), or at least set MALLOC_ARENA_MAX=2", s)
		r.med("Check after the fix that the RSS of %s levels off with its language heap (grep jemalloc /proc/1/maps; the RSS against the heap's live objects)", s)
		r.low("Alert on RSS growth apart from heap growth, and keep allocator settings in the base image's tests so that a new image cannot drop them")
	},
}

var (
	// allocatorRE is a line that sets the allocator: jemalloc or
	// tcmalloc preloaded or built in, glibc's arena cap.
	allocatorRE = regexp.MustCompile(`(?i)jemalloc|tcmalloc|mimalloc|MALLOC_ARENA_MAX|MALLOC_CONF`)
	// allocatorChangeRE is a change that can change the allocator: the
	// image or its base, the runtime, the allocator's settings.
	allocatorChangeRE = regexp.MustCompile(`(?i)jemalloc|tcmalloc|malloc|LD_PRELOAD|base image|\bimage\b|dockerfile|\b(?:ruby|python|node) \d|slim|alpine|debian|bookworm|distroless`)
	// mallocCountCmdRE is a count of the allocator's library among the
	// process's mappings ("grep -c jemalloc /proc/1/maps").
	mallocCountCmdRE = regexp.MustCompile(`(?i)grep\b.*-c\b.*(?:jemalloc|tcmalloc).*(?:/proc/\S*maps|ldd)|grep\b.*(?:jemalloc|tcmalloc).*(?:/proc/\S*maps)`)
	// threadsEnvRE is a worker's thread count setting.
	threadsEnvRE  = regexp.MustCompile(`^(?:SIDEKIQ_CONCURRENCY|RAILS_MAX_THREADS|PUMA_MAX_THREADS|MAX_THREADS|WEB_CONCURRENCY_THREADS|GUNICORN_THREADS|THREADS)$`)
	procThreadsRE = regexp.MustCompile(`^Threads:\s*(\d+)`)
	// heapSeriesRE is a language heap's own size or live objects.
	heapSeriesRE = regexp.MustCompile(`(?i)heap_live_slots|heap_(?:used|inuse|alloc)|gc_heap|live_objects|heap_allocated`)
	rssSeriesRE  = regexp.MustCompile(`(?i)(?:^|_)rss(?:_|$)|resident_memory|working_set`)
)

func detectMallocFragmentation(ev *Gathered, found []Finding) []Finding {
	// The workloads whose memory grows or that are OOMKilled.
	var subjects []string
	at := map[string]Finding{}
	for _, g := range found {
		if g.Kind == KindOOMKilled || g.Kind == KindSaturation && strings.Contains(strings.ToLower(g.fact("metric")), "memory") {
			if e, ok := at[g.Subject]; !ok {
				subjects = append(subjects, g.Subject)
				at[g.Subject] = g
			} else if !g.Time.IsZero() && (e.Time.IsZero() || g.Time.Before(e.Time)) {
				// The earliest sign of the growth is its onset.
				e.Time = g.Time
				at[g.Subject] = e
			}
		}
	}
	var out []Finding
	for _, s := range subjects {
		allocator, removedLine, notLoaded := "", "", ""
		for _, c := range ev.Commands {
			if c.Pod != "" && !strings.EqualFold(workloadOfName(c.Pod), s) && !strings.HasPrefix(c.Pod, s+"-") {
				continue
			}
			var removed, added []string
			for _, l := range c.Lines {
				t := strings.TrimSpace(l)
				if strings.HasPrefix(t, "---") || strings.HasPrefix(t, "+++") {
					continue
				}
				if strings.HasPrefix(t, "-") && matchLine(allocatorRE, t) {
					removed = append(removed, t)
				} else if strings.HasPrefix(t, "+") && matchLine(allocatorRE, t) {
					added = append(added, t)
				}
			}
			if len(removed) > 0 && len(added) == 0 && removedLine == "" {
				removedLine = fmt.Sprintf("%q removed in %s", truncate(removed[0], 100), truncate(c.Run, 60))
			}
			if matchLine(mallocCountCmdRE, c.Run) {
				out := strings.TrimSpace(strings.Join(c.Lines, "\n"))
				last := out
				if i := strings.LastIndex(out, "\n"); i >= 0 {
					last = strings.TrimSpace(out[i+1:])
				}
				if last == "0" || out == "" && c.ExitCode == 1 {
					notLoaded = fmt.Sprintf("%s found no allocator library mapped in the process", truncate(c.Run, 80))
				}
			}
		}
		switch {
		case removedLine != "" && notLoaded != "":
			allocator = "jemalloc is no longer loaded (" + removedLine + "; " + notLoaded + ")"
		case removedLine != "":
			allocator = "the image no longer sets up its allocator (" + removedLine + ")"
		case notLoaded != "":
			allocator = "jemalloc is not loaded (" + notLoaded + ")"
		default:
			continue
		}
		g := at[s]
		f := Finding{Kind: KindMallocFragmentation, Subject: s, Namespace: g.Namespace, Severity: SevCritical, Weight: 0.85,
			Source: SrcKubernetes, Time: g.Time, Object: "allocator of " + s}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		f.setFact("allocator", allocator)
		if removedLine != "" {
			f.Evidence = append(f.Evidence, removedLine)
		}
		if notLoaded != "" {
			f.Evidence = append(f.Evidence, notLoaded)
		}
		mallocThreads(&f, ev, s)
		if hf := heapFlatRSSGrows(ev.Metrics, s); hf != "" {
			f.setFact("heap_flat", hf)
			f.Evidence = append(f.Evidence, hf)
			f.Weight = 0.94
		}
		var latest time.Time
		for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
			if strings.EqualFold(c.Service, s) && matchLine(allocatorChangeRE, c.Description) && c.Timestamp.Before(f.Time) && c.Timestamp.After(latest) {
				latest = c.Timestamp
				f.Facts["release"] = (fmt.Sprintf("%s (%s)", quote(c.Description, 140), ts(c.Timestamp)))
			}
		}
		f.setFact("why", "glibc malloc fragments native memory once jemalloc or the arena cap is gone")
		f.Summary = fmt.Sprintf("%s's RSS climbs from native memory fragmentation in glibc malloc (%s)", s, "jemalloc or MALLOC_ARENA_MAX lost")
		out = append(out, f)
	}
	return out
}

// mallocThreads reads the workload's thread count (a worker's setting,
// the process's status) and its memory limit.
func mallocThreads(f *Finding, ev *Gathered, s string) {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if !strings.EqualFold(WorkloadOfPod(p), s) {
			continue
		}
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if matchLine(threadsEnvRE, e.Name) && e.Value != "" && f.fact("threads") == "" {
					f.setFact("threads", fmt.Sprintf("%s=%s threads", e.Name, e.Value))
				}
			}
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && f.fact("memory_limit") == "" {
				f.setFact("memory_limit", q.String())
			}
		}
	}
	if f.fact("threads") != "" {
		return
	}
	for _, c := range ev.Commands {
		if c.Pod != "" && !strings.EqualFold(workloadOfName(c.Pod), s) {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(procThreadsRE, strings.TrimSpace(l)); m != nil {
				f.setFact("threads", m[1]+" threads in the process")
				return
			}
		}
	}
}

// heapFlatRSSGrows says, when the workload's language heap stays flat
// (its largest value within 30% of its smallest, per series) while its
// resident memory at least doubles from its low, that the growth is not
// in the heap.
func heapFlatRSSGrows(sets []MetricSet, subject string) string {
	heapFlat, heapSeen, rssGrows := true, false, false
	var heapName, rssName string
	for _, ms := range sets {
		isHeap, isRSS := matchLine(heapSeriesRE, ms.Name), matchLine(rssSeriesRE, ms.Name)
		if !isHeap && !isRSS {
			continue
		}
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) || len(s.Points) < 3 {
				continue
			}
			lo, hi := s.Points[0].V, s.Points[0].V
			for _, p := range s.Points {
				lo, hi = min(lo, p.V), max(hi, p.V)
			}
			if lo <= 0 {
				continue
			}
			if isHeap {
				heapSeen, heapName = true, ms.Name
				if hi > lo*1.3 {
					heapFlat = false
				}
			} else if hi >= lo*1.6 {
				rssGrows, rssName = true, ms.Name
			}
		}
	}
	if !heapSeen || !heapFlat || !rssGrows {
		return ""
	}
	return fmt.Sprintf("its language heap stays flat (%s) while its resident memory climbs (%s)", heapName, rssName)
}
