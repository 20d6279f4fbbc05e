package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A runtime's own memory cap set at or above its container's memory limit.
// A managed runtime sizes its heap from a flag, not from the cgroup: V8
// from --max-old-space-size (NODE_OPTIONS or node's command line), the
// JVM from -Xmx or -XX:MaxRAMPercentage, Go's collector from GOMEMLIMIT,
// .NET's from DOTNET_GCHeapHardLimit. When that cap is at or above the
// container's limit, the runtime lets its heap grow (and collects lazily)
// past what the container may use, and the kernel's OOM killer ends the
// process at the limit (OOMKilled, exit code 137) before the runtime ever
// reaches its own cap: no "JavaScript heap out of memory", no Java
// OutOfMemoryError. Memory that climbs under load to the kill is then
// what the configuration allows, not by itself a leak. The application's
// own log may state the cap the runtime took (V8's heap_size_limit in a
// heap stats line, the JVM's "Heap Max Capacity" at start).

// heapCap is a runtime's memory cap, as a container's spec or its log
// sets it.
type heapCap struct {
	runtime string // "V8 (Node.js)", "JVM", "Go", ".NET"
	setting string // the setting as written ("NODE_OPTIONS=--max-old-space-size=1536")
	bytes   int64  // the cap; 0 when relative to the limit (percent)
	percent float64
}

var (
	// maxOldSpaceRE is V8's old-space cap, in MiB ("--max-old-space-size=1536",
	// "--max_old_space_size 4096").
	maxOldSpaceRE = regexp.MustCompile(`--max[-_]old[-_]space[-_]size[= ](\d+)`)
	// maxRAMPercentRE is the JVM's heap as a share of the container's
	// memory.
	maxRAMPercentRE = regexp.MustCompile(`-XX:(?:MaxRAMPercentage|InitialRAMPercentage)=(\d+(?:\.\d+)?)`)
	// goMemLimitRE is Go's soft memory limit (GOMEMLIMIT=900MiB).
	goMemLimitRE = regexp.MustCompile(`^(\d+)(B|KiB|MiB|GiB|TiB)?$`)
	// loggedHeapLimitRE is the heap cap an application logs: V8's
	// getHeapStatistics() heap_size_limit (bytes) or a stats line's
	// heapLimitMB, and the JVM's unified GC log "Heap Max Capacity: 1536M".
	// heapSettingRE is a change that sets a runtime's heap cap.
	heapSettingRE     = regexp.MustCompile(`(?i)max[-_]old[-_]space[-_]size|node_options|-xmx|maxrampercentage|gomemlimit|gcheaphardlimit`)
	loggedHeapLimitRE = regexp.MustCompile(`(?i)"?heap_?(?:size_?)?limit(_?mb|_?bytes)?"?\s*[:=]\s*(\d+(?:\.\d+)?)|Heap Max Capacity: (\d+)([KMG])`)
)

// heapCapOf reads the heap cap a container's spec sets: its command and
// arguments, and the environment variables the runtimes read.
func heapCapOf(c *corev1.Container) *heapCap {
	if c == nil {
		return nil
	}
	type src struct{ name, text string }
	srcs := []src{{"", strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")}}
	for _, e := range c.Env {
		srcs = append(srcs, src{e.Name, e.Value})
	}
	if hc := workerCapOf(srcs[0].text, c.Env); hc != nil {
		return hc
	}
	for _, s := range srcs {
		label := s.name + "=" + s.text
		if s.name == "" {
			label = s.text
		}
		if m := findSubmatch(maxOldSpaceRE, s.text); m != nil && (s.name == "" || s.name == "NODE_OPTIONS") {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			return &heapCap{runtime: "V8 (Node.js)", setting: settingOf(s.name, m[0]), bytes: n << 20}
		}
		if s.name == "GOMEMLIMIT" {
			if m := findSubmatch(goMemLimitRE, strings.TrimSpace(s.text)); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				shift := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[m[2]]
				return &heapCap{runtime: "Go", setting: label, bytes: n << shift}
			}
		}
		if s.name == "DOTNET_GCHeapHardLimit" || s.name == "COMPlus_GCHeapHardLimit" {
			// A hexadecimal byte count.
			if n, err := strconv.ParseInt(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s.text)), "0x"), 16, 64); err == nil && n > 0 {
				return &heapCap{runtime: ".NET", setting: label, bytes: n}
			}
		}
		if s.name == "" || strings.Contains(strings.ToUpper(s.name), "JAVA") || strings.Contains(strings.ToUpper(s.name), "JVM") {
			if x, n := xmxOf(s.text); x != "" {
				return &heapCap{runtime: "JVM", setting: settingOf(s.name, x), bytes: n}
			}
			if m := findSubmatch(maxRAMPercentRE, s.text); m != nil && strings.Contains(m[0], "MaxRAM") {
				p, _ := strconv.ParseFloat(m[1], 64)
				return &heapCap{runtime: "JVM", setting: settingOf(s.name, m[0]), percent: p}
			}
		}
	}
	return nil
}

func settingOf(name, flag string) string {
	if name == "" {
		return flag
	}
	return name + "=" + flag
}

// loggedHeapLimit reads the heap cap an application's log states, in
// bytes, with the line (0 when no line states one).
func loggedHeapLimit(lines []string) (int64, string) {
	for i := len(lines) - 1; i >= 0; i-- {
		m := findSubmatch(loggedHeapLimitRE, lines[i])
		if m == nil {
			continue
		}
		if m[3] != "" {
			n, _ := strconv.ParseInt(m[3], 10, 64)
			return n << map[string]uint{"K": 10, "M": 20, "G": 30}[strings.ToUpper(m[4])], lines[i]
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		unit := strings.ToLower(strings.TrimPrefix(m[1], "_"))
		switch {
		case unit == "mb":
			return int64(v * (1 << 20)), lines[i]
		case unit == "bytes" || v > 1<<20:
			return int64(v), lines[i]
		}
	}
	return 0, ""
}

// heapOverLimit compares a heap cap with a container's memory limit: the
// phrase that says the cap reaches the limit, "" when it leaves room (or
// either is unknown).
func heapOverLimit(hc *heapCap, limit string) string {
	if hc == nil || limit == "" {
		return ""
	}
	q, err := resource.ParseQuantity(limit)
	if err != nil || q.Value() <= 0 {
		return ""
	}
	lim := q.Value()
	if hc.percent > 0 {
		if hc.percent < 90 {
			return ""
		}
		return fmt.Sprintf("%s sizes the %s heap at %.0f%% of the container's memory limit of %s, leaving no room for the memory the runtime uses outside its heap (metaspace, threads, buffers)", hc.setting, hc.runtime, hc.percent, limit)
	}
	if float64(hc.bytes) < 0.9*float64(lim) {
		return ""
	}
	rel := "is above"
	if hc.bytes <= lim {
		rel = "reaches"
	}
	return fmt.Sprintf("the %s heap cap %s (%s) %s the container's memory limit of %s (%s)", hc.runtime, hc.setting, mib(hc.bytes), rel, limit, mib(lim))
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// followHeapCap sets, on an OOM kill's finding, the heap cap its
// container's spec sets when that cap reaches the memory limit, and the
// cap its last log lines state: the reason the process grows to the kill.
func followHeapCap(f *Finding, spec *corev1.Container, lines []string) {
	hc := heapCapOf(spec)
	lim := orWord(f.fact("memory_limit"), memLimit(spec))
	over := heapOverLimit(hc, lim)
	logged, line := loggedHeapLimit(lines)
	if over == "" && logged > 0 && lim != "" {
		// Only the log says which cap the runtime took.
		if q, err := resource.ParseQuantity(lim); err == nil && q.Value() > 0 && float64(logged) >= 0.9*float64(q.Value()) {
			over = fmt.Sprintf("the heap limit the runtime states in its log (%s) reaches or exceeds the container's memory limit of %s (%s)", mib(logged), lim, mib(q.Value()))
		}
	}
	if over == "" {
		return
	}
	f.setFact("heap_over_limit", over)
	f.setFact("heap_setting", hc.settingOr(""))
	if hc != nil {
		f.setFact("heap_runtime", hc.runtime)
	}
	f.setFact("why", over)
	f.Evidence = append(f.Evidence, over)
	if logged > 0 {
		f.setFact("heap_logged", fmt.Sprintf("its log states a heap limit of %s: %s", mib(logged), quote(strings.TrimSpace(line), 200)))
		f.Evidence = append(f.Evidence, "log before the kill: "+quote(strings.TrimSpace(line), 240))
	}
}

func (hc *heapCap) settingOr(def string) string {
	if hc == nil {
		return def
	}
	return hc.setting
}

// describeHeapOverLimit explains an OOM kill by a heap cap at or above the
// limit, and what that says of a leak.
func describeHeapOverLimit(h *Hypothesis) string {
	over := h.fact("heap_over_limit")
	how := "so the runtime lets its heap grow past what the container may use and collects lazily, and the kernel's OOM killer kills the process at the limit before the runtime reaches its own cap (no heap out-of-memory error of its own)"
	if strings.HasPrefix(h.fact("heap_runtime"), "Python") {
		how = "so a worker is recycled only past a size that, for all workers together, is more than the container may use, and the kernel's OOM killer kills them at the limit first"
	}
	d := fmt.Sprintf("%s containers are OOMKilled (out of memory, exit code 137): %s, %s", h.Subject, over, how)
	d += h.clause("; ", "heap_logged")
	d += "; this alone explains the kills whether or not the code leaks: memory that climbs with the work up to the limit is what the setting allows"
	return d
}

// recommendHeapOverLimit is the playbook of a heap cap at or above the
// limit.
func recommendHeapOverLimit(h *Hypothesis, r *recommender) {
	s, lim := h.Subject, orWord(h.fact("memory_limit"), "the memory limit")
	setting := orWord(h.fact("heap_setting"), "the runtime's heap cap")
	if strings.HasPrefix(h.fact("heap_runtime"), "Python") {
		r.high("Lower the per-worker recycle size or the number of workers of %s (%s) so that all workers together stay below its container memory limit (%s), or raise the limit above their sum plus the master process", s, setting, lim)
		r.med("Then watch whether a worker's memory still climbs between recycles under the same load: only then is it a leak (tracemalloc or memray on one worker of %s)", s)
		r.low("Derive the worker count and recycle size from the container limit in the chart (one value sets both)")
		return
	}
	r.high("Set the heap cap of %s (%s) below its container memory limit (%s): at most ~75%% of the limit (for Node.js --max-old-space-size, for the JVM -Xmx or -XX:MaxRAMPercentage=75, GOMEMLIMIT ~90%%), or raise the limit above the cap plus the memory the process uses outside its heap", s, setting, lim)
	r.med("With the cap below the limit, watch whether the heap still climbs after collections under the same load: only then is it a leak (take heap snapshots of %s)", s)
	r.low("Derive the heap cap from the container limit in the chart (one value sets both) and check in CI that the cap stays below the limit")
}

var (
	// uwsgiRSSRE is uWSGI's per-worker recycle threshold in MB
	// (--reload-on-rss, --evil-reload-on-rss, UWSGI_RELOAD_ON_RSS).
	uwsgiRSSRE = regexp.MustCompile(`--(?:evil-)?reload-on-rss[= ](\d+)`)
	// celeryChildRE is Celery's per-child memory cap in KiB
	// (--max-memory-per-child).
	celeryChildRE = regexp.MustCompile(`--max-memory-per-child[= ](\d+)`)
	// workersRE is the number of worker processes of uWSGI, Gunicorn
	// or Celery.
	workersRE = regexp.MustCompile(`(?:--(?:processes|workers|concurrency)|-[pwc])[= ](\d+)`)
)

// workerCapOf reads a pre-fork server's per-worker memory cap (uWSGI's
// --reload-on-rss, Celery's --max-memory-per-child) times its workers: a
// Python server has no heap cap of its own, but it recycles a worker only
// past that size, and all workers together may reach the limit first.
func workerCapOf(command string, env []corev1.EnvVar) *heapCap {
	text := command
	for _, e := range env {
		switch e.Name {
		case "UWSGI_RELOAD_ON_RSS":
			text += " --reload-on-rss=" + e.Value
		case "UWSGI_PROCESSES", "UWSGI_WORKERS", "WEB_CONCURRENCY", "CELERY_WORKER_CONCURRENCY":
			text += " --workers=" + e.Value
		}
	}
	per, unit := int64(0), ""
	if m := findSubmatch(uwsgiRSSRE, text); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		per, unit = n<<20, m[0]
	} else if m := findSubmatch(celeryChildRE, text); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		per, unit = n<<10, m[0]
	}
	if per == 0 {
		return nil
	}
	workers := int64(1)
	if m := findSubmatch(workersRE, text); m != nil {
		workers, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return &heapCap{runtime: "Python workers'", setting: fmt.Sprintf("%s × %d workers", unit, workers), bytes: per * max(workers, 1)}
}
