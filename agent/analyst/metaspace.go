package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// KindMetaspace: a JVM whose Metaspace (the native memory that holds the
// classes it loaded) reached its cap, -XX:MaxMetaspaceSize or the
// compressed class space: "java.lang.OutOfMemoryError: Metaspace". It is
// the runtime's own limit, not the container's: the kernel does not kill
// the process (no OOMKilled, no exit code 137) and the pod's memory can
// look well below its limit; the JVM throws, and with
// -XX:+ExitOnOutOfMemoryError exits (code 3) and is restarted. Metaspace
// fills when code keeps defining classes it never unloads: a template or
// script engine compiling a class per call with its cache off (Groovy,
// Nashorn, JasperReports), generated proxies (cglib, ByteBuddy, javassist)
// created per request, class loaders leaked across redeploys. The stack
// under the error names who defines them.
const KindMetaspace Kind = "metaspace"

var metaspace = &mechanism{
	kind:  KindMetaspace,
	class: classCause,
	label: "JVM Metaspace exhausted (classes defined until MaxMetaspaceSize)",
	// HotSpot's and OpenJ9's words, in an application's log and in the
	// JVM's own last line.
	lines:      metaspaceRE,
	lineWeight: 0.9,
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if f := &found[i]; f.Kind == KindMetaspace {
				explainMetaspace(f, ev)
			}
		}
		return nil
	},
	// The code that defines the classes came with a release of the
	// service; other changes near the onset are coincidences.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange) {
			return true
		}
		return matchLine(metaspaceChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		d := fmt.Sprintf("%s's JVM runs out of Metaspace, the memory that holds the classes it loads", s)
		if c := h.fact("metaspace_cap"); c != "" {
			d += fmt.Sprintf(" (capped by %s)", c)
		}
		d += ", and "
		if code := h.fact("exit_code"); code != "" && code != "137" {
			d += fmt.Sprintf("exits with code %s", code)
			if h.fact("exit_on_oom") != "" {
				d += " (-XX:+ExitOnOutOfMemoryError)"
			}
		} else {
			d += "fails with java.lang.OutOfMemoryError: Metaspace"
		}
		d += ": the runtime's own limit, not the container's memory limit"
		if u := h.fact("memory_use"); u != "" {
			d += " (" + u + ")"
		}
		d += ". Metaspace fills when code keeps defining new classes it never unloads"
		if by := h.fact("class_definer"); by != "" {
			d += fmt.Sprintf(": the stack shows them defined by %s", by)
			if app := h.fact("class_caller"); app != "" {
				d += fmt.Sprintf(" for %s", app)
			}
			if strings.Contains(strings.ToLower(by+h.fact("class_caller")), "template") {
				d += " — a template compiled into a new class on every call instead of once"
			}
		}
		if r := h.fact("release"); r != "" && h.Trigger == nil {
			d += "; the code running is release " + r
		}
		if n := h.fact("engine_line"); n != "" {
			d += "; its log at start: " + quote(ReadableLine(n), 160)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		what := orWord(h.fact("class_definer"), "the code that defines classes at run time")
		r.high("Stop %s defining a class per call: cache what %s compiles (turn the template or script cache on) so that each is compiled once", s, what)
		r.med("Raising MaxMetaspaceSize only delays the next exit while classes keep piling up; watch jvm_memory_used_bytes{id=\"Metaspace\"} and the loaded class count after the fix")
		r.low("Alert on Metaspace use near its cap and on a loaded class count that only grows")
	},
}

var (
	metaspaceRE = regexp.MustCompile(`(?i)OutOfMemoryError: (?:Metaspace|Compressed class space)\b|Metaspace size limit reached|reached MaxMetaspaceSize`)
	// A change that touches what defines classes at run time.
	metaspaceChangeRE = regexp.MustCompile(`(?i)metaspace|class ?loader|template|groovy|script|proxy|bytebuddy|cglib|javassist`)
	maxMetaspaceRE    = regexp.MustCompile(`-XX:(MaxMetaspaceSize|CompressedClassSpaceSize)=(\w+)`)
	// A stack frame: "at groovy.lang.GroovyClassLoader$ClassCollector.createClass(GroovyClassLoader.java:570)".
	frameRE = regexp.MustCompile(`^\s*at ([\w$.]+)\.([\w$<>]+)\(`)
	// Frames of the JVM's own class loading, below whoever asked for it.
	jdkFrameRE = regexp.MustCompile(`^(?:java\.|javax\.|jdk\.|sun\.|com\.sun\.)`)
	// Libraries that define classes at run time, and their callers'
	// frameworks: the application's own frame is the first that is none.
	classLibFrameRE   = regexp.MustCompile(`^(?:java\.|javax\.|jdk\.|sun\.|com\.sun\.|groovy\.|org\.codehaus\.groovy\.|org\.apache\.|org\.springframework\.|net\.bytebuddy\.|javassist\.|net\.sf\.cglib\.|org\.hibernate\.|org\.mvel2\.|org\.graalvm\.|kotlin\.|scala\.|io\.netty\.|com\.fasterxml\.)`)
	engineLineRE      = regexp.MustCompile(`(?i)template engine|script engine|cache\s*[=:]\s*(?:off|false|disabled)`)
	metaspaceSeriesRE = regexp.MustCompile(`(?i)metaspace`)
)

// explainMetaspace adds to a Metaspace finding the cap the container
// sets, how the container last ended, what its memory use was, and who
// defined the classes (the stack under the error).
func explainMetaspace(f *Finding, ev *Gathered) {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if workloadOfName(p.Name) != f.Subject && !strings.HasPrefix(p.Name, f.Subject+"-") {
			continue
		}
		for _, c := range p.Spec.Containers {
			if opts := jvmOptions(&c); opts != "" {
				if m := findSubmatch(maxMetaspaceRE, opts); m != nil {
					f.setFact("metaspace_cap", m[0])
				}
				if strings.Contains(opts, "ExitOnOutOfMemoryError") || strings.Contains(opts, "CrashOnOutOfMemoryError") {
					f.setFact("exit_on_oom", "true")
				}
			}
			if l := c.Resources.Limits.Memory(); l != nil && !l.IsZero() {
				f.setFact("memory_limit", l.String())
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 {
				f.setFact("exit_code", strconv.Itoa(int(t.ExitCode)))
				f.setFact("termination_reason", t.Reason)
			}
		}
	}
	if lim := f.fact("memory_limit"); lim != "" {
		if f.fact("exit_code") != "" && f.fact("exit_code") != "137" {
			f.setFact("memory_use", fmt.Sprintf("the container ended with exit code %s, not OOMKilled at its %s limit", f.fact("exit_code"), lim))
		} else {
			f.setFact("memory_use", "its container's limit is "+lim)
		}
	}
	// The stack under the error, in the crashed container's last lines
	// or in the log lines read.
	var stacks [][]string
	for key, lines := range ev.K8s.PreviousLogs {
		if !strings.Contains(key, "/"+f.Subject) {
			continue
		}
		var ls []string
		for _, l := range lines {
			ls = append(ls, l.Text)
		}
		stacks = append(stacks, ls)
	}
	slices.SortFunc(stacks, func(a, b []string) int { return len(b) - len(a) })
	for _, ls := range stacks {
		if by, caller := classDefiner(ls); by != "" {
			f.setFact("class_definer", by)
			f.setFact("class_caller", caller)
			f.Evidence = append(f.Evidence, fmt.Sprintf("the stack under the error defines classes in %s, called from %s", by, orWord(caller, "the application")))
			break
		}
	}
	for _, s := range ev.Logs {
		if s.Subject != f.Subject {
			continue
		}
		for _, t := range s.Templates {
			if matchLine(engineLineRE, t.Example) && f.fact("engine_line") == "" {
				f.setFact("engine_line", t.Example)
			}
		}
	}
	if f.fact("engine_line") == "" {
		for key, lines := range ev.K8s.PreviousLogs {
			if !strings.Contains(key, "/"+f.Subject) {
				continue
			}
			for _, l := range lines {
				if matchLine(engineLineRE, l.Text) {
					f.setFact("engine_line", l.Text)
					break
				}
			}
		}
	}
	// The release the pods run: the code that defines the classes came
	// with it.
	for _, c := range ev.Changes {
		if c.Service == f.Subject && c.Kind == "deploy" && (f.Time.IsZero() || c.Timestamp.Before(f.Time)) {
			f.Facts["release"] = fmt.Sprintf("%s at %s: %q", orWord(c.Revision, "its release"), hm(c.Timestamp), c.Description)
		}
	}
	if m := metaspaceMax(ev.Metrics, f.Subject); m != "" {
		f.Evidence = append(f.Evidence, m)
	}
	// The error names the pool; the cap and the definer say why it fills.
	if f.fact("class_definer") != "" || f.fact("metaspace_cap") != "" {
		f.setFact("why", "the JVM's Metaspace fills with classes defined at run time")
		f.Weight = max(f.Weight, 0.92)
	}
}

// jvmOptions is what a container passes the JVM: its command and
// arguments and the variables the JVM and its launchers read.
func jvmOptions(c *corev1.Container) string {
	parts := append(append([]string{}, c.Command...), c.Args...)
	for _, e := range c.Env {
		switch e.Name {
		case "JAVA_TOOL_OPTIONS", "JAVA_OPTS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS", "JVM_OPTS", "CATALINA_OPTS", "JAVA_OPTIONS":
			parts = append(parts, e.Value)
		}
	}
	return strings.Join(parts, " ")
}

// classDefiner reads, from the stack under an OutOfMemoryError:
// Metaspace, the first frame above the JDK's own class loading (who
// defines the classes) and the first frame of the application (who asks).
func classDefiner(lines []string) (by, caller string) {
	at := slices.IndexFunc(lines, metaspaceRE.MatchString)
	if at < 0 {
		return "", ""
	}
	for _, l := range lines[at+1 : min(len(lines), at+60)] {
		m := findSubmatch(frameRE, l)
		if m == nil {
			if by != "" && !strings.HasPrefix(strings.TrimSpace(l), "...") && strings.TrimSpace(l) != "" {
				break
			}
			continue
		}
		cls := m[1]
		if i := strings.Index(cls, "/"); i >= 0 {
			cls = cls[i+1:] // "java.base/java.lang.ClassLoader"
		}
		if by == "" && !matchLine(jdkFrameRE, cls) {
			by = cls + "." + m[2]
		}
		if by != "" && !matchLine(classLibFrameRE, cls) {
			return by, cls + "." + m[2]
		}
	}
	return by, ""
}

// metaspaceMax says how high the subject's Metaspace series rose, when a
// metric of the JVM's memory pools was read.
func metaspaceMax(sets []MetricSet, subject string) string {
	best := 0.0
	for _, s := range sets {
		for _, ser := range s.Series {
			id := ser.Labels["id"] + " " + ser.Labels["pool"] + " " + s.Name
			if !matchLine(metaspaceSeriesRE, id) {
				continue
			}
			if !strings.Contains(ser.Labels["pod"]+ser.Labels["app"]+ser.Labels["service"]+ser.Labels["job"]+ser.Labels["container"], subject) {
				continue
			}
			for _, p := range ser.Points {
				best = max(best, p.V)
			}
		}
	}
	if best <= 0 {
		return ""
	}
	return fmt.Sprintf("the JVM's Metaspace reached %.0f MiB", best/(1<<20))
}
