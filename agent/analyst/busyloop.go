package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A busy loop: a thread that spins on the CPU instead of waiting for work
// (a Go select with an empty default case around a channel receive, a
// poll that returns at once and is retried, a spin-wait that yields and
// tries again). The service burns every core it is allowed while doing as
// much work as before, so it is throttled at its CPU limit whatever the
// limit is: raising the limit only raises its usage. Throttling and CPU
// saturation are what it shows; the CPU profile says why: most of its
// samples sit in the non-blocking primitives (runtime.selectnbrecv,
// runtime.procyield, sched_yield, Thread.onSpinWait, try_recv) under one
// loop of the application's own. The profile is read as the profilers
// print it: go tool pprof -top, perf report, py-spy top and
// async-profiler's flat summary. The fix is in the code (block, or wait
// with a back-off), usually the release that brought it, not the limit.

// KindBusyLoop is a thread spinning on the CPU.
const KindBusyLoop Kind = "busy_loop"

var busyLoop = &mechanism{
	kind:   KindBusyLoop,
	class:  classCause,
	label:  "busy loop (a thread spinning on the CPU)",
	detect: detectBusyLoop,
	// The CPU it burns shows on its subject as throttling and saturation.
	related: kindsOnSubject(KindCPUThrottling, KindSaturation, KindLatency, KindHPAMax),
	// A loop is written in code: only a deploy of its service brings it;
	// a limit raised after it (or a ConfigMap edit) is not its trigger.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy && strings.EqualFold(c.Subject, h.Subject)
	},
	describe:  describeBusyLoop,
	recommend: recommendBusyLoop,
}

var (
	// profileRowRE reads one row of a CPU profile, as the profilers print
	// it: go tool pprof -top (flat flat% sum% cum cum% name), perf report
	// (children and self, or self, command, object, [.] symbol), py-spy
	// top (%Own %Total OwnTime TotalTime function) and async-profiler's
	// flat summary (ns percent samples name).
	pprofRowRE    = regexp.MustCompile(`^\s*[\d.]+\w*\s+([\d.]+)%\s+[\d.]+%\s+[\d.]+\w*\s+([\d.]+)%\s+(\S.*)$`)
	perfRowRE     = regexp.MustCompile(`^\s*([\d.]+)%\s+(?:([\d.]+)%\s+)?\S+\s+\S+\s+\[[.k]\]\s+(\S.*)$`)
	pyspyRowRE    = regexp.MustCompile(`^\s*([\d.]+)%\s+([\d.]+)%\s+[\d.]+s\s+[\d.]+s\s+(\S.*)$`)
	asyncRowRE    = regexp.MustCompile(`^\s*\d+\s+([\d.]+)%\s+\d+\s+(\S.*)$`)
	profileHeadRE = regexp.MustCompile(`(?i)^\s*flat\s+flat%\s+sum%\s+cum\s+cum%|^#?\s*(?:children\s+)?self\s+command\s+shared object|^#?\s*overhead\s+command\s+shared object|^\s*%own\s+%total\s+owntime|^\s*ns\s+percent\s+samples\s+top|^Type: cpu\b`)
	// spinRE names the primitives a spinning thread spends its CPU in:
	// non-blocking channel operations (a select with an empty default),
	// spin-waits and yields, try-receives polled in a loop.
	spinRE = regexp.MustCompile(`(?i)\bruntime\.(?:selectnbrecv|selectnbsend|procyield|osyield|Gosched)\b|\b__?sched_yield\b|\bsched_yield\b|Thread\.onSpinWait|java\.lang\.Thread\.yield|\bspin_loop\b|\byield_now\b|SpinWait|pthread_spin_lock|\btry_?recv\b|\bTryRecv\b|TryDequeue|\bpoll_nowait\b|\bbusy_?(?:wait|loop)\b`)
	// runtimeFrameRE is a frame of a runtime or a standard library, not
	// the application's loop.
	runtimeFrameRE = regexp.MustCompile(`^(?:runtime[./]|sync[./]|syscall\.|internal/|reflect\.|os\.|net\.|time\.|\[|_|java\.|jdk\.|sun\.|libc|libpthread|std::|core::|<|threading\.py|\(idle\))`)
	// podForwardRE is a port-forward (or exec) to a pod: what a profile
	// fetched from 127.0.0.1 after it was taken of.
	podForwardRE  = regexp.MustCompile(`\bkubectl\b.*\b(?:port-forward|exec)\b.*?\s(?:pod/)?([a-z0-9][a-z0-9-]*-[a-z0-9]{5})\b`)
	profileFileRE = regexp.MustCompile(`^File: (\S+)`)
)

// profileRow is one function of a CPU profile: its own share of the
// samples and its cumulative share (-1 when the profiler did not print it).
type profileRow struct {
	self, cum float64
	fn        string
}

// readProfile reads a command's output as a CPU profile; ok is false when
// it is none.
func readProfile(lines []string) (rows []profileRow, file string, ok bool) {
	head := false
	for _, l := range lines {
		if matchLine(profileHeadRE, l) {
			head = true
		}
		if m := findSubmatch(profileFileRE, l); m != nil {
			file = m[1]
		}
		var r profileRow
		if m := findSubmatch(pprofRowRE, l); m != nil {
			r.self, r.cum, r.fn = pct(m[1]), pct(m[2]), m[3]
		} else if m := findSubmatch(pyspyRowRE, l); m != nil {
			r.self, r.cum, r.fn = pct(m[1]), pct(m[2]), m[3]
		} else if m := findSubmatch(perfRowRE, l); m != nil {
			if m[2] != "" { // children, then self
				r.self, r.cum, r.fn = pct(m[2]), pct(m[1]), m[3]
			} else {
				r.self, r.cum, r.fn = pct(m[1]), -1, m[3]
			}
		} else if m := findSubmatch(asyncRowRE, l); m != nil {
			r.self, r.cum, r.fn = pct(m[1]), -1, m[2]
		} else {
			continue
		}
		r.fn = strings.TrimSpace(r.fn)
		rows = append(rows, r)
	}
	return rows, file, head && len(rows) >= 3
}

func pct(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// spinReading is what a profile says of a spinning loop.
type spinReading struct {
	share float64      // the samples in spin primitives, percent
	spins []profileRow // those primitives, largest first
	loop  profileRow   // the application's function above them
}

// readSpin reads a profile for a busy loop: at least a fifth of the
// samples in spin primitives.
func readSpin(rows []profileRow) (spinReading, bool) {
	var s spinReading
	for _, r := range rows {
		if matchLine(spinRE, r.fn) {
			s.share += r.self
			s.spins = append(s.spins, r)
		}
	}
	if s.share < 20 {
		return s, false
	}
	sort.SliceStable(s.spins, func(i, j int) bool { return s.spins[i].self > s.spins[j].self })
	for _, r := range rows {
		if matchLine(spinRE, r.fn) || matchLine(runtimeFrameRE, r.fn) {
			continue
		}
		score := r.cum
		if score < 0 {
			score = r.self
		}
		best := s.loop.cum
		if best < 0 {
			best = s.loop.self
		}
		if s.loop.fn == "" || score > best {
			s.loop = r
		}
	}
	return s, true
}

// spinMeaning says what the spinning primitive is.
func spinMeaning(fn string) string {
	f := strings.ToLower(fn)
	switch {
	case strings.Contains(f, "selectnbrecv"):
		return "a select with an empty default case: a non-blocking channel receive that returns at once and is retried, so the loop never blocks"
	case strings.Contains(f, "selectnbsend"):
		return "a select with an empty default case: a non-blocking channel send retried at once, so the loop never blocks"
	case strings.Contains(f, "recv") || strings.Contains(f, "dequeue") || strings.Contains(f, "nowait"):
		return "a non-blocking try-receive polled in a loop that never waits"
	}
	return "a spin-wait that yields and tries again instead of blocking"
}

func detectBusyLoop(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	forwarded := "" // the pod the last port-forward or exec reached
	for _, c := range ev.Commands {
		if m := findSubmatch(podForwardRE, c.Command); m != nil {
			forwarded = m[1]
		}
		rows, file, ok := readProfile(c.Lines)
		if !ok {
			continue
		}
		s, ok := readSpin(rows)
		if !ok {
			continue
		}
		subject := profileSubject(ev, c, file, forwarded)
		if subject == "" || seen[subject] {
			continue
		}
		seen[subject] = true
		f := Finding{Kind: KindBusyLoop, Subject: subject, Object: "profile " + truncate(c.Command, 120), Namespace: orWord(c.Namespace, ev.Scope.Namespace),
			Severity: SevCritical, Weight: 0.9, Source: SrcKubernetes, Time: ev.Window.Start}
		// It spins from the moment its CPU rose: the onset of its
		// throttling or CPU saturation.
		for _, g := range found {
			if (g.Kind == KindCPUThrottling || g.Kind == KindSaturation && strings.Contains(strings.ToLower(g.fact("metric")), "cpu")) &&
				strings.EqualFold(g.Subject, subject) && !g.Time.IsZero() && g.Time.Before(f.Time) {
				f.Time = g.Time
			}
		}
		if t := cpuRise(ev.Metrics, subject, ev.Window); !t.IsZero() && t.Before(f.Time) {
			f.Time = t
		}
		top := s.spins[0]
		f.setFact("spin", top.fn)
		f.setFact("spin_share", fmt.Sprintf("%.0f%%", s.share))
		f.setFact("loop", s.loop.fn)
		if s.loop.cum > 0 {
			f.setFact("loop_share", fmt.Sprintf("%.0f%%", s.loop.cum))
		}
		f.setFact("profile", c.Command)
		f.setFact("why", "its CPU profile spends "+f.fact("spin_share")+" in "+top.fn)
		var names []string
		for i, r := range s.spins {
			if i == 3 {
				break
			}
			names = append(names, fmt.Sprintf("%s %.1f%%", r.fn, r.self))
		}
		e := fmt.Sprintf("CPU profile of %s (%s): %s of the samples in spin primitives (%s)", subject, truncate(c.Command, 100), f.fact("spin_share"), strings.Join(names, ", "))
		if s.loop.fn != "" {
			e += fmt.Sprintf(", under %s", s.loop.fn)
			if v := f.fact("loop_share"); v != "" {
				e += " (" + v + " of the CPU, cumulative)"
			}
		}
		f.Evidence = append(f.Evidence, e)
		if r := limitRaised(ev.Changes, subject, f.Time); r != nil {
			f.setFact("limit_raised", fmt.Sprintf("%s -> %s at %s", r.from, r.to, hm(r.at)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("the CPU limit of %s was raised from %s to %s at %s and it went on using all of it (%s)", subject, r.from, r.to, hm(r.at), truncate(r.text, 120)))
		}
		f.Summary = fmt.Sprintf("%s spins in a busy loop: %s of its CPU profile in %s", subject, f.fact("spin_share"), top.fn)
		out = append(out, f)
	}
	return out
}

// cpuRise is when a subject's CPU throttling first reached half its peak
// over the gathered series (baseline and window), zero when none is
// known.
func cpuRise(sets []MetricSet, subject string, w Window) time.Time {
	var first time.Time
	for _, ms := range sets {
		if ms.Class != MetricCPUThrottle {
			continue
		}
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) {
				continue
			}
			peak := 0.0
			for _, p := range s.Points {
				peak = max(peak, p.V)
			}
			if peak <= 0 {
				continue
			}
			for _, p := range s.Points {
				if p.V >= peak/2 && !p.T.Before(w.BaselineStart) {
					first = earliest(first, p.T)
					break
				}
			}
		}
	}
	return first
}

// profileSubject is the workload a profile is of: the pod a port-forward
// or exec before it reached, the pod it ran in, or the binary the
// profile names, when it is a workload of the evidence or the service
// asked about.
func profileSubject(ev *Gathered, c evidence.CommandOutput, file, forwarded string) string {
	known := map[string]bool{}
	for i := range ev.K8s.Pods {
		known[strings.ToLower(WorkloadOfPod(&ev.K8s.Pods[i]))] = true
	}
	if ev.Scope.Service != "" {
		known[strings.ToLower(ev.Scope.Service)] = true
	}
	for _, pod := range []string{c.Pod, forwarded} {
		if pod != "" {
			if wl := workloadOfName(pod); known[strings.ToLower(wl)] {
				return wl
			}
		}
	}
	if file != "" && known[strings.ToLower(file)] {
		return file
	}
	if len(known) == 1 || file == "" && forwarded == "" && c.Pod == "" {
		return ev.Scope.Service
	}
	return ""
}

// raisedLimit is a change that raised a CPU limit.
type raisedLimit struct {
	from, to, text string
	at             time.Time
}

// limitRaised finds a change of subject after from that raised its CPU
// limit.
func limitRaised(changes []evidence.Change, subject string, from time.Time) *raisedLimit {
	for _, c := range changes {
		if !strings.EqualFold(c.Service, subject) || c.Timestamp.Before(from) {
			continue
		}
		m := findSubmatch(cpuChangeRE, c.Description)
		if m == nil || !strings.Contains(strings.ToLower(c.Description), "limit") {
			continue
		}
		if cpuMillis(m[2]) > cpuMillis(m[1]) {
			return &raisedLimit{from: m[1], to: m[2], text: c.Description, at: c.Timestamp}
		}
	}
	return nil
}

// cpuMillis reads a CPU quantity ("500m", "2", "1.5") in millicores.
func cpuMillis(s string) float64 {
	if v, ok := strings.CutSuffix(s, "m"); ok {
		return pct(v)
	}
	return pct(s) * 1000
}

func describeBusyLoop(h *Hypothesis, sc Scope) string {
	spin := h.fact("spin")
	d := fmt.Sprintf("%s spins in a busy loop: its CPU profile spends %s of its samples in %s (%s)", h.Subject, h.fact("spin_share"), spin, spinMeaning(spin))
	if l := h.fact("loop"); l != "" {
		d += fmt.Sprintf(", in the loop of %s", l)
		if s := h.fact("loop_share"); s != "" {
			d += fmt.Sprintf(" (%s of the CPU)", s)
		}
	}
	d += ". It burns whatever CPU it is given while doing no more work"
	if t := supportOf(h, KindCPUThrottling); t != nil {
		d += ", so it is throttled at its CPU limit"
		if lim := t.fact("cpu_limit"); lim != "" {
			d += " of " + lim
		}
		if p := t.fact("peak"); p != "" {
			d += fmt.Sprintf(" (%s of its CFS periods)", p)
		}
	}
	if r := h.fact("limit_raised"); r != "" {
		d += fmt.Sprintf("; raising the limit (%s) only raised its usage", r)
	}
	return d
}

func recommendBusyLoop(h *Hypothesis, sc Scope, r *recommender) {
	r.rollback()
	loop := orWord(h.fact("loop"), "the loop")
	r.high("Fix %s in %s: block on the receive (or wait on a ticker or with a back-off) instead of retrying at once (%s)", loop, h.Subject, spinMeaning(h.fact("spin")))
	r.med("Do not raise the CPU limit of %s further: the loop takes whatever it gets; set it back once the loop is fixed", h.Subject)
	r.low("Alert on CPU used per unit of work (per message or request) rising after a release, and keep a CPU profile endpoint reachable")
}
