package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A JVM heap option that never reaches the JVM. The JVM reads its options
// from its command line and from JAVA_TOOL_OPTIONS / JDK_JAVA_OPTIONS;
// JAVA_OPTS (and CATALINA_OPTS, JVM_OPTS...) is only a convention of
// launcher scripts that expand it into java's command line. An image
// whose entrypoint runs java directly (Jib's "java -cp
// @/app/jib-classpath-file Main", a distroless exec-form ENTRYPOINT)
// ignores it: the -Xmx in the pod's JAVA_OPTS is not the heap the JVM
// runs with, which is the JVM's default (MaxRAMPercentage 25% of the
// container's memory limit). What the JVM actually runs with is what
// jcmd VM.flags / -XX:+PrintFlagsFinal / the GC log's "Heap Max
// Capacity" print: a heap below the configured one says the option was
// lost. This file reads that, for a runtime out of its heap
// (heapexhausted.go).

var (
	// effectiveMaxHeapRE is the JVM's running max heap: jcmd VM.flags and
	// -XX:+PrintCommandLineFlags ("-XX:MaxHeapSize=1073741824"),
	// -XX:+PrintFlagsFinal ("size_t MaxHeapSize = 1073741824 {product}
	// {ergonomic}"), the unified GC log ("Heap Max Capacity: 1G").
	effectiveMaxHeapRE = regexp.MustCompile(`-XX:MaxHeapSize=(\d+)|\bMaxHeapSize\s+:?=\s+(\d+)|Heap Max Capacity: (\d+)([KMG])\b`)
	// entrypointFieldRE opens an image config's entrypoint: crane config /
	// docker inspect JSON ("Entrypoint": [), skopeo/podman, or a
	// Dockerfile's exec-form ENTRYPOINT [.
	entrypointFieldRE = regexp.MustCompile(`(?i)"?entrypoint"?\s*[:=]?\s*\[(.*)$`)
	// launcherOptsRE is a shell expansion of the launcher's variable.
	launcherOptsRE = regexp.MustCompile(`\$\{?(?:JAVA_OPTS|JVM_OPTS|CATALINA_OPTS)\b`)
)

// jvmReadOptsVars are the environment variables the JVM reads itself.
var jvmReadOptsVars = map[string]bool{"JAVA_TOOL_OPTIONS": true, "JDK_JAVA_OPTIONS": true, "_JAVA_OPTIONS": true}

// heapFlagsIgnored adds to f (a JVM out of heap, whose container sets hc)
// the heap the JVM actually runs with when it is well below hc, and why:
// an options variable only a launcher expands, with an entrypoint that
// runs java directly.
func heapFlagsIgnored(f *Finding, ev *Gathered, p *corev1.Pod, c *corev1.Container, hc *heapCap) {
	if hc == nil || hc.runtime != "JVM" || hc.bytes <= 0 || f.fact("heap_effective") != "" {
		return
	}
	var eff int64
	var effLine, effCmd string
	for _, co := range ev.Commands {
		if co.Pod != "" && workloadOfName(co.Pod) != workloadOfName(p.Name) {
			continue
		}
		for _, l := range co.Lines {
			m := findSubmatch(effectiveMaxHeapRE, l)
			if m == nil {
				continue
			}
			var n int64
			switch {
			case m[1] != "":
				n, _ = strconv.ParseInt(m[1], 10, 64)
			case m[2] != "":
				n, _ = strconv.ParseInt(m[2], 10, 64)
			default:
				n, _ = strconv.ParseInt(m[3], 10, 64)
				n <<= map[string]uint{"K": 10, "M": 20, "G": 30}[m[4]]
			}
			if n > 0 {
				eff, effLine, effCmd = n, strings.TrimSpace(m[0]), co.Command
				break
			}
		}
		if eff > 0 {
			break
		}
	}
	if eff == 0 || float64(eff) > 0.9*float64(hc.bytes) {
		return
	}
	f.setFact("heap_effective", humanBytes(eff))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s: the JVM runs with a max heap of %s, not the %s of %s", truncate(effCmd, 100), effLine, humanBytes(eff), humanBytes(hc.bytes), hc.setting))
	if lim := c.Resources.Limits.Memory(); lim != nil && !lim.IsZero() {
		if pct := float64(eff) * 100 / float64(lim.Value()); pct > 24 && pct < 26 {
			f.setFact("heap_default", fmt.Sprintf("the JVM's default of 25%% (MaxRAMPercentage) of the container's %s memory limit", lim.String()))
		}
	}
	name, _, _ := strings.Cut(hc.setting, "=")
	if name == "" || jvmReadOptsVars[name] || strings.HasPrefix(hc.setting, "-") {
		return
	}
	f.setFact("heap_var", name)
	// The image's entrypoint: java run directly, no shell expanding the
	// variable. The image the pod runs, when several are inspected.
	tag := c.Image
	if i := strings.LastIndexAny(tag, ":@"); i >= 0 {
		tag = tag[i+1:]
	}
	for _, co := range ev.Commands {
		if tag != "" && !strings.Contains(co.Command, tag) {
			continue
		}
		ep := imageEntrypoint(co.Lines)
		if ep == "" {
			continue
		}
		first, _, _ := strings.Cut(ep, " ")
		if (first == "java" || strings.HasSuffix(first, "/java")) && !launcherOptsRE.MatchString(ep) {
			f.setFact("entrypoint", ep)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: entrypoint %s: java is run directly, no shell expands %s", truncate(co.Command, 100), quote(ep, 160), name))
		}
		return
	}
}

// imageEntrypoint reads an image's entrypoint from an inspect's output
// (a JSON array over one or several lines): its words joined by spaces.
func imageEntrypoint(lines []string) string {
	for i, l := range lines {
		m := findSubmatch(entrypointFieldRE, l)
		if m == nil {
			continue
		}
		text := m[1]
		for j := i + 1; !strings.Contains(text, "]") && j < len(lines); j++ {
			text += " " + strings.TrimSpace(lines[j])
		}
		text, _, _ = strings.Cut(text, "]")
		var words []string
		for _, w := range strings.Split(text, ",") {
			if w = strings.Trim(strings.TrimSpace(w), `"`); w != "" {
				words = append(words, w)
			}
		}
		return strings.Join(words, " ")
	}
	return ""
}
