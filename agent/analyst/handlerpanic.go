package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// KindHandlerPanic: a server's request handler crashes on some requests
// (a Go panic) and the server survives it: Go's net/http recovers the
// panic, logs "http: panic serving ADDR: MESSAGE" with the goroutine's
// stack and closes the connection; Gin's and gRPC's recovery middleware
// log it and answer 500 or Internal. The pod keeps
// running (no restart, no crash loop) while the requests that reach the
// faulty code path fail: its callers see resets ("socket hang up",
// ECONNRESET, EOF) or 500s for those requests only. The bug is in the
// code the stack names, usually shipped by the service's latest release.
const KindHandlerPanic Kind = "handler_panic"

var handlerPanic = &mechanism{
	kind:  KindHandlerPanic,
	class: classCause,
	label: "requests crash in the handler (a panic or exception the server recovers)",
	// Go's net/http and gRPC/Gin recovery middleware.
	lines:      handlerPanicRE,
	lineWeight: 0.85,
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if f := &found[i]; f.Kind == KindHandlerPanic {
				explainPanic(f, ev)
			}
		}
		return nil
	},
	// The faulty code came with a release of the service (or a flag that
	// turned its path on); a change elsewhere is a coincidence.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange || c.Kind == KindFeatureFlag)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		what := "panics"
		if h.fact("panic_kind") == "exception" {
			what = "throws an unhandled exception"
		}
		d := fmt.Sprintf("%s %s on some requests", s, what)
		if m := h.fact("panic_message"); m != "" {
			d += ": " + quote(m, 160)
		}
		if fr := h.fact("panic_frame"); fr != "" {
			d += " in " + fr
			if at := h.fact("panic_at"); at != "" {
				d += " (" + at + ")"
			}
		} else if st := h.fact("panic_stack"); st != "" {
			d += "; its stack runs through " + st
		}
		if strings.Contains(h.fact("panic_message"), "nil map") {
			d += " — the code writes to a map it never initialised (a nil map)"
		} else if strings.Contains(h.fact("panic_message"), "nil pointer") {
			d += " — the code dereferences a nil pointer"
		}
		d += fmt.Sprintf(". The server recovers each one and %s, so the pod keeps running while every request that takes that code path fails", orWord(h.fact("panic_effect"), "answers 500"))
		if callers := callersOf(h); callers != "" {
			d += fmt.Sprintf(": its callers (%s) see it as connection resets or errors and fail those requests in turn", callers)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		where := orWord(h.fact("panic_frame"), orWord(h.fact("panic_stack"), "the handler the stack names"))
		r.high("Fix %s in %s (%s) and add a test with the input that reaches it", orWord(h.fact("panic_message"), "the crash"), s, where)
		r.med("Until then, keep %s's callers from failing the whole page on it: a fallback for this call, or serve without it", s)
		r.low("Alert on recovered panics and unhandled exceptions in %s's logs, not only on restarts", s)
	},
}

var (
	// Only a panic says the code is at fault: a servlet container's or
	// a framework's "threw exception" wraps any failure (a database out
	// of connections as well as a bug) and is read by the rules of what
	// it wraps.
	handlerPanicRE = regexp.MustCompile(`(?i)\bhttp: panic serving \S+: |\[Recovery\][^\n]{0,80}panic recovered|grpc[^\n]{0,40}(?:recovered from panic|panic recovered)`)
	// The message Go's net/http logs with the panic.
	goPanicMsgRE = regexp.MustCompile(`http: panic serving \S+: (.+)$`)
	// A Go stack frame's function line: "github.com/acme/x/internal/discount.(*Engine).applyTier(0xc..., ...)".
	panicGoFrameRE = regexp.MustCompile(`^\s*([\w.-]+(?:/[\w.-]+)+\.(?:\(\*?\w+\)\.)?\w+)\(`)
	// A Go stack frame's file line: "/src/internal/discount/tier.go:88 +0x2b4".
	goFileRE = regexp.MustCompile(`^\s*(\S+\.go:\d+)(?: \+0x[0-9a-f]+)?\s*$`)
	// A Java frame of the application (not the JDK's, the container's or
	// a framework's).
	javaAppFrameRE = regexp.MustCompile(`^\s*at ((?:[a-z]\w*\.)+[A-Z][\w$]*\.[\w$<>]+)\(([\w$]+\.java:\d+)\)`)
	javaLibFrameRE = regexp.MustCompile(`^(?:java\.|javax\.|jakarta\.|jdk\.|sun\.|org\.apache\.|org\.springframework\.|com\.fasterxml\.|io\.netty\.|org\.hibernate\.)`)
)

// explainPanic adds to a recovered panic its message, the application's
// frame that crashed and what the server does with the request.
func explainPanic(f *Finding, ev *Gathered) {
	line := f.fact("line")
	if m := findSubmatch(goPanicMsgRE, line); m != nil {
		f.setFact("panic_message", strings.TrimSpace(m[1]))
		f.setFact("panic_effect", "closes the connection without an answer")
	} else {
		f.setFact("panic_kind", "exception")
	}
	// The lines of the subject's logs, in the order they were mined:
	// the stack's first frame of the application's own code.
	// Raw lines (a crashed container's log, in order) say which frame
	// crashed; mined templates lose the order and only say which frames
	// of the application the stacks run through.
	var raw, mined []string
	for _, key := range slices.Sorted(maps.Keys(ev.K8s.PreviousLogs)) {
		if strings.Contains(key, "/"+f.Subject) {
			for _, l := range ev.K8s.PreviousLogs[key] {
				raw = append(raw, l.Text)
			}
		}
	}
	for _, s := range ev.Logs {
		if s.Subject != f.Subject {
			continue
		}
		for _, t := range s.Templates {
			mined = append(mined, t.Example)
		}
	}
	if frame, at := appFrame(raw); frame != "" {
		f.setFact("panic_frame", frame)
		f.setFact("panic_at", at)
	} else if fs := appFrames(mined); len(fs) > 0 {
		f.setFact("panic_stack", strings.Join(fs, ", "))
	}
	lines := append(raw, mined...)
	frame := orWord(f.fact("panic_frame"), f.fact("panic_stack"))
	if f.fact("panic_kind") == "exception" && f.fact("panic_message") == "" {
		for _, l := range lines {
			if matchLine(exceptionRE, l) && !matchLine(handlerPanicRE, l) {
				f.setFact("panic_message", strings.TrimSpace(ReadableLine(l)))
				break
			}
		}
	}
	if frame != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the stack of the crash in %s's log names %s", f.Subject, frame))
	}
	// The message and the frame say what fails and where: seen directly.
	if f.fact("panic_message") != "" && frame != "" {
		f.setFact("why", "its handler crashes on "+f.fact("panic_message"))
		f.Weight = max(f.Weight, 0.9)
	}
}

// appFrame is the first frame of a stack that is the application's own
// code (not Go's runtime and standard library, not the JDK or a
// framework), with its file and line when the stack gives them.
func appFrame(lines []string) (frame, at string) {
	for i, l := range lines {
		if m := findSubmatch(panicGoFrameRE, l); m != nil {
			fn := m[1]
			// The standard library's import paths have no dot in their
			// first element (net/http, runtime).
			first, _, _ := strings.Cut(fn, "/")
			if !strings.Contains(first, ".") {
				continue
			}
			if i+1 < len(lines) {
				if fm := findSubmatch(goFileRE, lines[i+1]); fm != nil {
					at = fm[1]
				}
			}
			return fn, at
		}
		if m := findSubmatch(javaAppFrameRE, l); m != nil && !matchLine(javaLibFrameRE, m[1]) {
			return m[1], m[2]
		}
	}
	return "", ""
}

// appFrames are the application's own frames among lines whose order is
// lost (mined templates), sorted.
func appFrames(lines []string) []string {
	var out []string
	for _, l := range lines {
		if fr, _ := appFrame([]string{l}); fr != "" && !slices.Contains(out, fr) {
			out = append(out, fr)
		}
	}
	slices.Sort(out)
	return out
}

// callersOf names the callers a hypothesis's findings relate (those that
// report its failure), for the description.
func callersOf(h *Hypothesis) string {
	var out []string
	for _, f := range append(append([]*Finding{}, h.Primary...), h.Support...) {
		c := f.fact("caller")
		if c != "" && c != h.Subject && !containsStr(out, c) {
			out = append(out, c)
		}
	}
	return strings.Join(out, ", ")
}
