package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// KindDirectMemory: a JVM out of direct (off-heap) memory, the native
// buffers NIO and Netty allocate outside the heap, capped by
// -XX:MaxDirectMemorySize (by default as large as the heap): Netty's
// "io.netty.util.internal.OutOfDirectMemoryError: failed to allocate N
// byte(s) of direct memory (used: U, max: M)", the JDK's
// "java.lang.OutOfMemoryError: Direct buffer memory" or "Cannot reserve N
// bytes of direct buffer memory". The runtime refuses the allocation
// itself: the heap graph stays flat, the container is not OOMKilled, each
// request that needs a buffer fails (500s) until the process is
// restarted, and it comes back after as long again. Direct memory fills
// when buffers are retained and never released (Netty's ResourceLeakDetector:
// "LEAK: ByteBuf.release() was not called before it's garbage-collected"),
// typically by code that joins or keeps request bodies: the frames and
// checkpoints of the stack under the error name it.
const KindDirectMemory Kind = "direct_memory"

var directMemory = &mechanism{
	kind:       KindDirectMemory,
	class:      classCause,
	label:      "JVM out of direct memory (off-heap buffers at MaxDirectMemorySize)",
	lines:      directMemoryRE,
	lineWeight: 0.9,
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if f := &found[i]; f.Kind == KindDirectMemory {
				explainDirectMemory(f, ev)
			}
		}
		return nil
	},
	// The code that retains the buffers came with a release of the
	// service; a restart of it is not a release, and other changes near
	// the onset are coincidences.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if matchLine(restartChangeRE, changeText(c)) {
			return false
		}
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange) || matchLine(directSettingRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		d := fmt.Sprintf("%s's JVM runs out of direct memory, the off-heap buffers (Netty's pooled ByteBufs, NIO direct buffers) that live outside the heap", s)
		if c := h.fact("direct_cap"); c != "" {
			d += " (capped by " + c + ")"
		}
		d += ": every request that needs a buffer fails"
		if l := h.fact("line"); l != "" {
			d += " with " + quote(ReadableLine(l), 160)
		}
		d += "; the runtime refuses the allocation itself, so the heap looks flat and the container is not OOMKilled, and a restart only empties the pool until it fills again"
		if n := h.fact("leak_reports"); n != "" {
			d += fmt.Sprintf(". Netty's leak detector reported %s times that ByteBuf.release() was not called: buffers are retained and never released, a direct buffer leak", n)
		} else {
			d += ". Direct memory fills when buffers are retained and never released (a ByteBuf leak) or when more are in flight than the cap allows"
		}
		if app := h.fact("app_frame"); app != "" {
			d += fmt.Sprintf("; the stack under the error passes through %s, the application's code that holds the buffers", app)
		}
		if r := h.fact("release"); r != "" && h.Trigger == nil {
			d += "; the code running is release " + r
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		where := orWord(h.fact("app_frame"), "the code that joins or keeps request bodies")
		r.high("Release the buffers %s retains (DataBufferUtils.release / ReferenceCountUtil.release after use, or do not keep the joined body); roll back the release that introduced it if that is faster", where)
		r.med("Run %s with -Dio.netty.leakDetection.level=paranoid in a test to find the leak's access records; raising MaxDirectMemorySize only delays the next failure", s)
		r.low("Alert on direct memory use (jvm_buffer_memory_used_bytes{id=\"direct\"}, Netty's used direct memory) near its cap, apart from the heap")
	},
}

var (
	directMemoryRE = regexp.MustCompile(`OutOfDirectMemoryError|OutOfMemoryError: Direct buffer memory|Cannot reserve \d+ bytes of direct buffer memory`)
	// Netty's leak detector: a buffer collected without release().
	byteBufLeakRE = regexp.MustCompile(`LEAK: (?:ByteBuf\.release\(\)|\w+\.release\(\)) was not called`)
	// -XX:MaxDirectMemorySize=512m, or Netty's own -Dio.netty.maxDirectMemory.
	maxDirectRE = regexp.MustCompile(`-XX:MaxDirectMemorySize=(\w+)|-Dio\.netty\.maxDirectMemory=(\w+)`)
	// "(used: 534773760, max: 536870912)" in Netty's error.
	directUsedMaxRE = regexp.MustCompile(`used: (\d+), max: (\d+)`)
	directSettingRE = regexp.MustCompile(`(?i)MaxDirectMemorySize|maxDirectMemory|direct memory|netty`)
	restartChangeRE = regexp.MustCompile(`(?i)\brollout restart\b|\brestart(?:ed)? (?:deploy|deployment|pods?)\b`)
	// A reactive stack's checkpoint: "*__checkpoint ⇢ com.acme.AuditFilter [DefaultWebFilterChain]".
	checkpointRE = regexp.MustCompile(`__checkpoint\s*\S*\s*([\w$.]+)`)
	directLibRE  = regexp.MustCompile(`^(?:reactor\.|io\.micrometer\.|io\.projectreactor\.)`)
)

// explainDirectMemory adds the cap on direct memory (the container's JVM
// options, a jcmd VM.flags output, or the error's own "max:"), the leak
// detector's reports, the application's frame under the error and the
// release the pods run.
func explainDirectMemory(f *Finding, ev *Gathered) {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if workloadOfName(p.Name) != f.Subject && !strings.HasPrefix(p.Name, f.Subject+"-") {
			continue
		}
		for _, c := range p.Spec.Containers {
			if m := findString(maxDirectRE, jvmOptions(&c)); m != "" && f.fact("direct_cap") == "" {
				f.setFact("direct_cap", m)
			}
		}
	}
	for _, c := range ev.Commands {
		if c.Pod != "" && workloadOfName(c.Pod) != f.Subject && !strings.HasPrefix(c.Pod, f.Subject+"-") {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(maxDirectRE, l); m != nil && f.fact("direct_cap") == "" {
				f.setFact("direct_cap", directCapText(m[0], m[1]+m[2]))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s in %s", m[0], truncate(c.Run, 60)))
			}
			if matchLine(byteBufLeakRE, l) {
				f.Facts["leak_count"] = strconv.Itoa(atoiOr(f.fact("leak_count")) + 1)
				if f.fact("leak_line") == "" {
					f.setFact("leak_line", l)
				}
			}
		}
	}
	leaks := atoiOr(f.fact("leak_count"))
	var frames []string
	for _, s := range ev.Logs {
		if s.Subject != f.Subject {
			continue
		}
		for _, t := range s.Templates {
			if matchLine(byteBufLeakRE, t.Example) {
				leaks = max(leaks, t.Count)
				if f.fact("leak_line") == "" {
					f.setFact("leak_line", t.Example)
				}
			}
			if m := findSubmatch(checkpointRE, t.Example); m != nil && directAppFrame(m[1]) {
				frames = append(frames, m[1])
			}
			if f.fact("direct_cap") == "" {
				if m := findSubmatch(directUsedMaxRE, t.Example); m != nil && matchLine(directMemoryRE, t.Example) {
					f.setFact("direct_cap", "max "+bytesText(m[2]))
				}
			}
		}
	}
	for key, lines := range ev.K8s.PreviousLogs {
		if !strings.Contains(key, "/"+f.Subject) {
			continue
		}
		for _, l := range lines {
			if m := findSubmatch(checkpointRE, l.Text); m != nil && directAppFrame(m[1]) {
				frames = append(frames, m[1])
			} else if m := findSubmatch(frameRE, l.Text); m != nil && directAppFrame(m[1]) {
				frames = append(frames, m[1]+"."+m[2])
			}
			if matchLine(byteBufLeakRE, l.Text) {
				leaks++
			}
		}
	}
	if leaks > 0 {
		f.setFact("leak_reports", strconv.Itoa(leaks))
		f.Evidence = append(f.Evidence, fmt.Sprintf("Netty's leak detector: %q (%d reports)", truncate(ReadableLine(f.fact("leak_line")), 140), leaks))
	}
	if len(frames) > 0 {
		f.setFact("app_frame", frames[0])
	}
	for _, c := range ev.Changes {
		if c.Service == f.Subject && c.Kind == "deploy" && !matchLine(restartChangeRE, c.Description) && (f.Time.IsZero() || c.Timestamp.Before(f.Time)) {
			f.Facts["release"] = fmt.Sprintf("%s at %s: %q", orWord(c.Revision, "its release"), c.Timestamp.UTC().Format("2006-01-02 15:04 UTC"), c.Description)
		}
	}
	if leaks > 0 || f.fact("app_frame") != "" {
		f.setFact("why", "buffers retained and never released fill the JVM's direct memory")
		f.Weight = max(f.Weight, 0.93)
	}
}

// directAppFrame reports whether a class is the application's own, not the
// JDK's or a framework's.
func directAppFrame(cls string) bool {
	if i := strings.Index(cls, "/"); i >= 0 {
		cls = cls[i+1:]
	}
	return strings.Contains(cls, ".") && !matchLine(classLibFrameRE, cls) && !matchLine(directLibRE, cls)
}

func directCapText(setting, value string) string {
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		return fmt.Sprintf("%s (%s)", setting, bytesText(strconv.FormatInt(n, 10)))
	}
	return setting
}

// bytesText writes a count of bytes in MiB.
func bytesText(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return s
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
