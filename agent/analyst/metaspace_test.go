package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMetaspaceLines reads a JVM out of Metaspace as the JVM and the
// frameworks print it, and leaves a full heap, a thread limit and a GC
// log's Metaspace figures to their own rules.
func TestMetaspaceLines(t *testing.T) {
	testLines(t, metaspace, []lineCase{
		{`java.lang.OutOfMemoryError: Metaspace`, KindMetaspace},
		{`Terminating due to java.lang.OutOfMemoryError: Metaspace`, KindMetaspace},
		{`Exception in thread "http-nio-8080-exec-4" java.lang.OutOfMemoryError: Compressed class space`, KindMetaspace},
		{`2026-11-25 16:16:44.907 ERROR 1 --- [render-3] o.s.b.SpringApplication : Application run failed java.lang.OutOfMemoryError: Metaspace`, KindMetaspace},
		// Near misses.
		{`java.lang.OutOfMemoryError: Java heap space`, KindHeapExhausted},
		{`java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory or process/resource limits reached`, KindPIDExhaustion},
		{`[Full GC (Metadata GC Threshold) [PSYoungGen: 0K->0K(699392K)] [Metaspace: 98000K->98000K(1140736K)], 0.3 secs]`, ""},
	})
}

// TestMetaspaceStack reads who defines the classes from the stack under
// the error: the first frame above the JDK's class loading and the first
// frame of the application.
func TestMetaspaceStack(t *testing.T) {
	cases := []struct {
		name        string
		stack       string
		by, caller  string
		wantDefiner bool
	}{
		{"Groovy templates compiled per call", `java.lang.OutOfMemoryError: Metaspace
	at java.base/java.lang.ClassLoader.defineClass1(Native Method)
	at java.base/java.lang.ClassLoader.defineClass(ClassLoader.java:1027)
	at java.base/java.security.SecureClassLoader.defineClass(SecureClassLoader.java:150)
	at groovy.lang.GroovyClassLoader$ClassCollector.createClass(GroovyClassLoader.java:570)
	at org.codehaus.groovy.control.CompilationUnit.compile(CompilationUnit.java:666)
	at groovy.text.GStringTemplateEngine.createTemplate(GStringTemplateEngine.java:91)
	at com.acme.billing.invoice.template.GroovyInvoiceTemplates.render(GroovyInvoiceTemplates.java:58)
	at com.acme.billing.invoice.RenderJob.renderOne(RenderJob.java:112)`,
			"groovy.lang.GroovyClassLoader$ClassCollector.createClass", "com.acme.billing.invoice.template.GroovyInvoiceTemplates.render", true},
		{"ByteBuddy proxies per request", `Caused by: java.lang.OutOfMemoryError: Metaspace
	at java.base/java.lang.ClassLoader.defineClass1(Native Method)
	at java.base/java.lang.invoke.MethodHandles$Lookup.defineClass(MethodHandles.java:1011)
	at net.bytebuddy.dynamic.loading.ClassInjector$UsingLookup.injectRaw(ClassInjector.java:1638)
	at net.bytebuddy.dynamic.DynamicType$Default$Unloaded.load(DynamicType.java:6154)
	at org.springframework.aop.framework.ProxyFactory.getProxy(ProxyFactory.java:110)
	at io.shop.orders.OrderAuditAspect.wrap(OrderAuditAspect.java:41)`,
			"net.bytebuddy.dynamic.loading.ClassInjector$UsingLookup.injectRaw", "io.shop.orders.OrderAuditAspect.wrap", true},
		{"the JVM's last line alone", `Terminating due to java.lang.OutOfMemoryError: Metaspace`, "", "", false},
	}
	for _, c := range cases {
		by, caller := classDefiner(strings.Split(c.stack, "\n"))
		if by != c.by || caller != c.caller {
			t.Errorf("%s: classDefiner = %q, %q; want %q, %q", c.name, by, caller, c.by, c.caller)
		}
	}
}

// TestMetaspaceExplained reads the cap and the exit from the pod and the
// stack from its previous log, and says it is not the container's limit.
func TestMetaspaceExplained(t *testing.T) {
	at := time.Date(2026, 11, 25, 16, 16, 44, 0, time.UTC)
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-worker-7b5d4c9f8-kx2mv", Namespace: "billing"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "invoice-worker",
			Env:       []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:MaxRAMPercentage=60 -XX:MaxMetaspaceSize=256m -XX:+ExitOnOutOfMemoryError"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1536Mi")}}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "invoice-worker", RestartCount: 14,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 3}}}}},
	}
	var lines []evidence.LogLine
	for _, l := range strings.Split(`2026-11-25T16:16:44.907Z ERROR 1 --- [render-3] c.a.billing.invoice.RenderJob : render failed for INV-2026-0481223
java.lang.OutOfMemoryError: Metaspace
	at java.base/java.lang.ClassLoader.defineClass1(Native Method)
	at groovy.lang.GroovyClassLoader$ClassCollector.createClass(GroovyClassLoader.java:570)
	at com.acme.billing.invoice.template.GroovyInvoiceTemplates.render(GroovyInvoiceTemplates.java:58)
Terminating due to java.lang.OutOfMemoryError: Metaspace`, "\n") {
		lines = append(lines, evidence.LogLine{Text: l})
	}
	ev := &Gathered{
		K8s:     K8sEvidence{Pods: []corev1.Pod{pod}, PreviousLogs: map[string][]evidence.LogLine{"billing/invoice-worker-7b5d4c9f8-kx2mv/invoice-worker": lines}},
		Changes: []evidence.Change{{Timestamp: at.Add(-3 * time.Hour), Service: "invoice-worker", Kind: "deploy", Revision: "3.7.0", Description: "invoice-worker 3.7.0: invoice templates in Groovy"}},
	}
	found := []Finding{{Kind: KindMetaspace, Subject: "invoice-worker", Time: at, Weight: 0.6, Facts: map[string]string{"line": "java.lang.OutOfMemoryError: Metaspace"}}}
	metaspace.detect(ev, found)
	f := found[0]
	for k, want := range map[string]string{"metaspace_cap": "-XX:MaxMetaspaceSize=256m", "exit_code": "3", "exit_on_oom": "true",
		"class_definer": "groovy.lang.GroovyClassLoader$ClassCollector.createClass", "release": "3.7.0"} {
		if !strings.Contains(f.fact(k), want) {
			t.Errorf("fact %s = %q, want %q", k, f.fact(k), want)
		}
	}
	if f.fact("why") == "" || f.Weight < 0.9 {
		t.Errorf("the cap and the definer seen: why %q weight %.2f", f.fact("why"), f.Weight)
	}
	h := &Hypothesis{Kind: KindMetaspace, Subject: "invoice-worker", Onset: at, Primary: []*Finding{&f}}
	d := describe(h, Scope{})
	for _, want := range []string{"runs out of Metaspace", "MaxMetaspaceSize=256m", "exits with code 3", "not the container's memory limit", "GroovyClassLoader", "template compiled into a new class"} {
		if !strings.Contains(d, want) {
			t.Errorf("description %q lacks %q", d, want)
		}
	}
	if strings.Contains(d, "137") {
		t.Errorf("description %q claims an OOM kill", d)
	}
	kafka := &Finding{Kind: KindInfraChange, Subject: "billing-kafka", Facts: map[string]string{"description": "billing-kafka: broker rolling restart for 3.8.1 patch"}}
	deploy := &Finding{Kind: KindDeploy, Subject: "invoice-worker", Facts: map[string]string{"description": "invoice-worker 3.7.0"}}
	if metaspace.fitsChange(h, kafka) || !metaspace.fitsChange(h, deploy) {
		t.Errorf("the release of the service fits, a broker restart does not")
	}
}
