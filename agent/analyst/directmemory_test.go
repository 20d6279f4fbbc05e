package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDirectMemoryLines reads a JVM out of direct memory as Netty and the
// JDK print it, and leaves the heap, Metaspace and the JVM's own flags to
// their rules.
func TestDirectMemoryLines(t *testing.T) {
	testLines(t, directMemory, []lineCase{
		{`io.netty.util.internal.OutOfDirectMemoryError: failed to allocate 16777216 byte(s) of direct memory (used: 520093703, max: 536870912)`, KindDirectMemory},
		{`Caused by: java.lang.OutOfMemoryError: Direct buffer memory`, KindDirectMemory},
		{`java.lang.OutOfMemoryError: Cannot reserve 65536 bytes of direct buffer memory (allocated: 1073700000, limit: 1073741824)`, KindDirectMemory},
		{`2026-03-02 10:14:07.112 WARN 1 --- [nioEventLoopGroup-3-2] i.n.c.AbstractChannelHandlerContext : An exception 'io.netty.util.internal.OutOfDirectMemoryError: failed to allocate 4194304 byte(s) of direct memory (used: 1069547520, max: 1073741824)' [enable DEBUG level for full stacktrace] was thrown`, KindDirectMemory},
		// Near misses.
		{`java.lang.OutOfMemoryError: Java heap space`, KindHeapExhausted},
		{`java.lang.OutOfMemoryError: Metaspace`, KindMetaspace},
		// The JVM's flags are no error.
		{`-XX:MaxDirectMemorySize=536870912 -XX:MaxHeapSize=1287651328 -XX:+ExitOnOutOfMemoryError -XX:+UseG1GC`, ""},
		{`-XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath=/dumps`, ""},
	})
	for _, l := range []string{`-XX:+ExitOnOutOfMemoryError -XX:+UseG1GC`, `-XX:+CrashOnOutOfMemoryError`} {
		if k, _ := ClassifyLine(l); k == KindOOMKilled {
			t.Errorf("ClassifyLine(%q) = OOMKilled: a JVM flag is no out-of-memory", l)
		}
	}
	for _, l := range []string{`java.lang.OutOfMemoryError: unable to allocate`, `MemoryError`, `Traceback ... MemoryError: Unable to allocate 1.2 GiB`} {
		if k, _ := ClassifyLine(l); k == "" {
			t.Errorf("ClassifyLine(%q) lost its out-of-memory kind", l)
		}
	}
}

// TestDirectMemoryExplained reads the cap from the JVM's flags (jcmd, the
// container's options), the leak detector's reports and the application's
// frame under the error, and says it is neither the heap nor an OOM kill.
func TestDirectMemoryExplained(t *testing.T) {
	at := time.Date(2026, 3, 2, 10, 14, 0, 0, time.UTC)
	cases := []struct {
		name      string
		pod       corev1.Pod
		commands  []evidence.CommandOutput
		templates []string
		previous  []string
		wantCap   string
		wantFrame string
		wantLeak  bool
	}{
		{
			name:     "jcmd flags, Spring WebFlux checkpoint, leak detector in the log",
			commands: []evidence.CommandOutput{{Exec: true, Pod: "api-gw-6f7d8c9b5-x2kq7", Run: "jcmd 1 VM.flags", Lines: []string{"1:", "-XX:CICompilerCount=2 -XX:MaxDirectMemorySize=268435456 -XX:MaxHeapSize=805306368 -XX:+UseG1GC"}}},
			templates: []string{
				`io.netty.util.internal.OutOfDirectMemoryError: failed to allocate 2097152 byte(s) of direct memory (used: 266338304, max: 268435456)`,
				`	*__checkpoint ⇢ io.acme.gateway.BodyCaptureFilter [DefaultWebFilterChain]`,
				`	*__checkpoint ⇢ org.springframework.cloud.gateway.filter.WeightCalculatorWebFilter [DefaultWebFilterChain]`,
				`2026-03-02T09:11:02.000Z ERROR 1 --- [ctor-http-nio-2] io.netty.util.ResourceLeakDetector : LEAK: ByteBuf.release() was not called before it's garbage-collected. See https://netty.io/wiki/reference-counted-objects.html for more information.`,
			},
			wantCap: "MaxDirectMemorySize=268435456", wantFrame: "io.acme.gateway.BodyCaptureFilter", wantLeak: true,
		},
		{
			name: "JAVA_TOOL_OPTIONS cap, JDK's error, stack in the previous log",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-gw-6f7d8c9b5-x2kq7"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "api-gw",
				Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:MaxRAMPercentage=70 -XX:MaxDirectMemorySize=256m"}}}}}},
			templates: []string{`java.lang.OutOfMemoryError: Direct buffer memory`},
			previous: []string{"java.lang.OutOfMemoryError: Direct buffer memory",
				"	at java.base/java.nio.Bits.reserveMemory(Bits.java:175)",
				"	at java.base/java.nio.DirectByteBuffer.<init>(DirectByteBuffer.java:118)",
				"	at io.netty.buffer.UnpooledDirectByteBuf.allocateDirect(UnpooledDirectByteBuf.java:104)",
				"	at com.shop.ingest.UploadBuffering.copyBody(UploadBuffering.java:77)"},
			wantCap: "-XX:MaxDirectMemorySize=256m", wantFrame: "com.shop.ingest.UploadBuffering.copyBody",
		},
		{
			name:      "the error's own max, nothing else",
			templates: []string{`io.netty.util.internal.OutOfDirectMemoryError: failed to allocate 16777216 byte(s) of direct memory (used: 1061158912, max: 1073741824)`},
			wantCap:   "max 1024 MiB",
		},
	}
	for _, c := range cases {
		var tpls []analysis.LogTemplate
		for _, e := range c.templates {
			tpls = append(tpls, analysis.LogTemplate{Example: e, Count: 3})
		}
		var prev []evidence.LogLine
		for _, l := range c.previous {
			prev = append(prev, evidence.LogLine{Text: l})
		}
		ev := &Gathered{
			K8s:      K8sEvidence{Pods: []corev1.Pod{c.pod}, PreviousLogs: map[string][]evidence.LogLine{"edge/api-gw-6f7d8c9b5-x2kq7/api-gw": prev}},
			Logs:     []LogSet{{Source: "api-gw-6f7d8c9b5-x2kq7", Subject: "api-gw", Templates: tpls}},
			Commands: c.commands,
			Changes: []evidence.Change{
				{Timestamp: at.Add(-40 * time.Hour), Service: "api-gw", Kind: "deploy", Revision: "5.1.0", Description: "api-gw 5.1.0: capture request bodies for audit"},
				{Timestamp: at.Add(-6 * time.Hour), Service: "api-gw", Kind: "deploy", Revision: "61", Description: "kubectl rollout restart deploy/api-gw"},
			},
		}
		found := []Finding{{Kind: KindDirectMemory, Subject: "api-gw", Time: at, Weight: 0.6, Facts: map[string]string{"line": c.templates[0]}}}
		directMemory.detect(ev, found)
		f := found[0]
		if !strings.Contains(f.fact("direct_cap"), c.wantCap) {
			t.Errorf("%s: cap %q, want %q", c.name, f.fact("direct_cap"), c.wantCap)
		}
		if f.fact("app_frame") != c.wantFrame {
			t.Errorf("%s: frame %q, want %q", c.name, f.fact("app_frame"), c.wantFrame)
		}
		if (f.fact("leak_reports") != "") != c.wantLeak {
			t.Errorf("%s: leak reports %q, want %v", c.name, f.fact("leak_reports"), c.wantLeak)
		}
		if !strings.Contains(f.fact("release"), "5.1.0") {
			t.Errorf("%s: release %q, want 5.1.0 (a restart is no release)", c.name, f.fact("release"))
		}
		h := &Hypothesis{Kind: KindDirectMemory, Subject: "api-gw", Onset: at, Primary: []*Finding{&f}}
		wantDescribed(t, h, Scope{}, "runs out of direct memory", "not OOMKilled", "heap looks flat")
		restart := &Finding{Kind: KindDeploy, Subject: "api-gw", Facts: map[string]string{"description": "kubectl rollout restart deploy/api-gw"}}
		release := &Finding{Kind: KindDeploy, Subject: "api-gw", Facts: map[string]string{"description": "api-gw 5.1.0: capture request bodies for audit"}}
		if directMemory.fitsChange(h, restart) || !directMemory.fitsChange(h, release) {
			t.Errorf("%s: a release fits, a restart does not", c.name)
		}
	}
}
