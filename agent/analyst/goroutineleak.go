package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Goroutines leaking: a Go service starts a goroutine per request (a
// fan-out to its backends, a watcher, a timer) that blocks forever — a
// send on a channel whose reader gave up at its deadline, a receive no
// one sends to, a lock never released — so every request leaves one or
// more behind. Their number climbs all day (go_goroutines from a few
// hundred to a hundred thousand), their stacks and what they hold grow the
// heap and the GC's work, and latency degrades until a restart clears
// them, to creep up again. Memory growth is what shows; the goroutine
// profile says why: net/http/pprof's goroutine profile (debug=1: "goroutine
// profile: total 142318" with the count of each stack; debug=2: each
// goroutine's state and how long it waits, "[chan send, 511 minutes]"),
// nearly all in one application frame. The fix is the code that blocks
// (a buffered channel, a select on the context), usually from the release
// that added it, not the cache or database the service calls.

// KindGoroutineLeak is a Go service leaking goroutines blocked forever in
// one frame.
const KindGoroutineLeak Kind = "goroutine_leak"

var goroutineLeak = &mechanism{
	kind:    KindGoroutineLeak,
	class:   classCause,
	label:   "goroutine leak (goroutines blocked forever)",
	detect:  detectGoroutineLeak,
	related: kindsOnSubject(KindSaturation, KindLatency, KindTimeout, KindGCPressure, KindSlowOperation),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.EqualFold(c.Subject, h.Subject) && c.Kind == KindDeploy
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		d := fmt.Sprintf("%s leaks goroutines: %s", s, orWord(h.fact("held"), "its goroutines pile up"))
		if st := h.fact("state"); st != "" {
			d += fmt.Sprintf(", blocked forever [%s]", st)
		}
		if f := h.fact("frame"); f != "" {
			d += " in " + f
			if l := h.fact("file"); l != "" {
				d += " (" + l + ")"
			}
		}
		if g := h.fact("gauge"); g != "" {
			d += "; " + g
		}
		d += fmt.Sprintf(": each request leaves goroutines behind that never exit (a channel send or receive nobody completes after a deadline), so %s's memory and GC work grow and its latency creeps up until a restart clears them — the cause is the blocking code in %s, not the services it calls", s, s)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.high("Fix the goroutines of %s that never exit%s: give the channel a buffer for every sender or select on the request's context so a sender returns after the deadline", s, h.wrapped(" (", "frame", ")"))
		r.med("Restart %s's pods on a schedule until the fix ships, and add a goroutine-leak test (go.uber.org/goleak) for the code path", s)
		r.low("Alert on go_goroutines of %s growing without bound, not only on its memory", s)
	},
}

var (
	goroutineTotalRE = regexp.MustCompile(`^goroutine profile: total (\d+)`)
	// goroutineGroupRE heads one stack of a debug=1 profile: its count.
	goroutineGroupRE = regexp.MustCompile(`^(\d+) @ 0x[0-9a-f]+`)
	// goroutineFrameRE is a debug=1 frame: "#	0x9c41e4	pkg.(*T).f.func1+0xc4	/src/x.go:64".
	goroutineFrameRE = regexp.MustCompile(`^#\s+0x[0-9a-f]+\s+(\S+?)\+0x[0-9a-f]+\s+(\S+:\d+)`)
	// goroutineStateRE heads one goroutine of a debug=2 dump: its state
	// and, when it has waited a minute or more, for how long.
	goroutineStateRE = regexp.MustCompile(`^goroutine \d+ \[([a-zA-Z. ]+?)(?:, (\d+) minutes)?(?:, locked to thread)?\]:`)
	// portForwardRE is a port-forward to a pod, through which a profile
	// is fetched from localhost.
	portForwardRE = regexp.MustCompile(`port-forward\s+(?:-n\s+\S+\s+)?(?:pod/)?([a-z0-9][a-z0-9.-]*)`)
	// grepCountStateRE is a count of the goroutines in one state.
	grepCountStateRE = regexp.MustCompile(`grep -c '(chan send|chan receive|select|semacquire|sync\.Mutex\.Lock|IO wait)'`)
	// goRuntimeFrameRE is a frame of Go's runtime or standard library.
	goRuntimeFrameRE = regexp.MustCompile(`^(?:runtime|internal|net|net/http|sync|syscall|os|io|bufio|time|context|crypto|reflect)[./]|^golang\.org/|^google\.golang\.org/|^github\.com/(?:redis|jackc|lib|go-sql-driver|grpc-ecosystem)/`)
)

// goroutineState is what a service's goroutine profiles say.
type goroutineState struct {
	total, top         int
	frame, file, state string
	waited             int // minutes, the longest
	stateCount         int // goroutines counted in that state by grep -c
}

func detectGoroutineLeak(ev *Gathered, found []Finding) []Finding {
	var states keyed[goroutineState]
	forwarded := ""
	for _, c := range ev.Commands {
		run := orWord(c.Run, c.Command)
		if m := findSubmatch(portForwardRE, run); m != nil {
			forwarded = workloadOfPodName(m[1])
			continue
		}
		if !strings.Contains(run, "pprof/goroutine") {
			continue
		}
		subj := forwarded
		if c.Pod != "" {
			subj = workloadOfPodName(c.Pod)
		}
		if subj == "" {
			continue
		}
		st := states.get(subj)
		if strings.Contains(run, "grep -c") && len(c.Lines) == 1 {
			if n, err := strconv.Atoi(strings.TrimSpace(c.Lines[0])); err == nil {
				if m := findSubmatch(grepCountStateRE, run); m != nil {
					st.stateCount = n
					st.state = orWord(st.state, m[1])
				}
			}
			continue
		}
		group := 0
		for _, l := range c.Lines {
			if m := findSubmatch(goroutineTotalRE, l); m != nil {
				st.total, _ = strconv.Atoi(m[1])
				continue
			}
			if m := findSubmatch(goroutineGroupRE, l); m != nil {
				group, _ = strconv.Atoi(m[1])
				continue
			}
			if m := findSubmatch(goroutineFrameRE, l); m != nil && group > 0 {
				switch {
				case strings.HasPrefix(m[1], "runtime.chansend"):
					if group > st.top {
						st.state = "chan send"
					}
				case strings.HasPrefix(m[1], "runtime.chanrecv"):
					if group > st.top {
						st.state = "chan receive"
					}
				case matchLine(goRuntimeFrameRE, m[1]):
				default:
					if group > st.top {
						st.top, st.frame, st.file = group, shortGoFrame(m[1]), m[2]
					}
					group = 0
				}
				continue
			}
			if m := findSubmatch(goroutineStateRE, l); m != nil {
				st.state = orWord(st.state, m[1])
				if n, err := strconv.Atoi(m[2]); err == nil && n > st.waited {
					st.waited = n
				}
			}
		}
	}
	var out []Finding
	for _, subj := range states.order {
		st := states.m[subj]
		held := max(st.top, st.stateCount)
		// Tens of thousands of goroutines, most of them in one frame of
		// the application.
		if st.total < 10000 || held*2 < st.total || st.frame == "" {
			continue
		}
		f := Finding{Kind: KindGoroutineLeak, Subject: subj, Object: "service " + subj, Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9, Time: ev.Window.Start}
		f.setFact("held", fmt.Sprintf("%d of its %d goroutines sit in one frame", st.top, st.total))
		f.setFact("frame", st.frame)
		f.setFact("file", st.file)
		state := st.state
		if st.waited > 0 {
			state += fmt.Sprintf(", up to %d minutes", st.waited)
		}
		f.setFact("state", state)
		f.Evidence = append(f.Evidence, fmt.Sprintf("goroutine profile of %s: total %d, %d in %s (%s)", subj, st.total, st.top, st.frame, st.file))
		if st.stateCount > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("goroutine dump of %s: %d goroutines in [%s]", subj, st.stateCount, st.state))
		}
		// The goroutine gauge: since when it climbs.
		for _, ms := range ev.Metrics {
			if ms.Name != "go_goroutines" {
				continue
			}
			lo, hi := -1.0, 0.0
			for _, s := range ms.Series {
				if !strings.EqualFold(SubjectOfLabels(s.Labels), subj) {
					continue
				}
				for _, p := range s.Points {
					if p.T.After(ev.Window.End) {
						continue
					}
					if lo < 0 || p.V < lo {
						lo = p.V
					}
					hi = max(hi, p.V)
				}
			}
			if hi > 0 && hi >= 10*max(lo, 1) {
				f.setFact("gauge", fmt.Sprintf("go_goroutines climbed from %.0f to %.0f", lo, hi))
				f.Evidence = append(f.Evidence, f.fact("gauge"))
			}
		}
		f.Summary = fmt.Sprintf("%s: %d goroutines blocked in %s", subj, st.top, st.frame)
		out = append(out, f)
	}
	return out
}

// shortGoFrame drops a Go frame's module path: "reserve.(*Service).queryWarehouses.func1".
func shortGoFrame(fn string) string {
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		return fn[i+1:]
	}
	return fn
}
