package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestHeapCapOverLimit reads the heap cap of the runtimes a container may
// run (V8, the JVM, Go, .NET) from its environment and command, and the
// cap its log states, and explains an OOM kill by a cap at or above the
// container's memory limit; a cap below the limit, or a runtime with no
// cap, explains nothing.
func TestHeapCapOverLimit(t *testing.T) {
	cases := []struct {
		name    string
		limit   string
		command []string
		env     []corev1.EnvVar
		log     []string
		want    []string // words of the description; nil: no heap cap finding
	}{
		{"NODE_OPTIONS above the limit", "1Gi", nil,
			[]corev1.EnvVar{{Name: "NODE_ENV", Value: "production"}, {Name: "NODE_OPTIONS", Value: "--enable-source-maps --max-old-space-size=2048"}}, nil,
			[]string{"V8 (Node.js) heap cap NODE_OPTIONS=--max-old-space-size=2048 (2048 MiB) is above the container's memory limit of 1Gi", "whether or not the code leaks"}},
		{"node's command line, pino heap stats", "1536Mi", []string{"node", "--max_old_space_size=1536", "dist/server.js"}, nil,
			[]string{`{"level":30,"time":1795019213245,"pid":1,"msg":"heap stats","heapUsedMB":1210,"heapTotalMB":1302,"heapLimitMB":1584,"rssMB":1490}`},
			[]string{"--max_old_space_size=1536 (1536 MiB) reaches the container's memory limit of 1536Mi", "its log states a heap limit of 1584 MiB"}},
		{"JVM sized at all of the container", "2Gi", nil,
			[]corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:+UseG1GC -XX:MaxRAMPercentage=100.0"}}, nil,
			[]string{"JAVA_TOOL_OPTIONS=-XX:MaxRAMPercentage=100.0 sizes the JVM heap at 100% of the container's memory limit of 2Gi", "outside its heap"}},
		{"GOMEMLIMIT above the limit", "512Mi", nil,
			[]corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "768MiB"}}, nil,
			[]string{"Go heap cap GOMEMLIMIT=768MiB (768 MiB) is above the container's memory limit of 512Mi"}},
		{".NET hard limit in hex", "1Gi", nil,
			[]corev1.EnvVar{{Name: "DOTNET_GCHeapHardLimit", Value: "0x60000000"}}, nil,
			[]string{".NET heap cap DOTNET_GCHeapHardLimit=0x60000000 (1536 MiB) is above"}},
		{"only the JVM's GC log says it", "2Gi", []string{"java", "-jar", "/app/app.jar"}, nil,
			[]string{"[0.011s][info][gc,init] Heap Max Capacity: 2G", "[0.011s][info][gc,init] Heap Region Size: 1M"},
			[]string{"the heap limit the runtime states in its log (2048 MiB) reaches or exceeds the container's memory limit of 2Gi"}},
		{"V8's heap_size_limit in bytes", "1Gi", nil, nil,
			[]string{`level=info msg="v8 heap" heap_size_limit=1660944384 used_heap_size=934281216`},
			[]string{"(1584 MiB) reaches or exceeds"}},
		{"a cap well below the limit explains nothing", "1Gi", nil,
			[]corev1.EnvVar{{Name: "NODE_OPTIONS", Value: "--max-old-space-size=768"}}, nil, nil},
		{"JVM at 75 percent explains nothing", "4Gi", nil,
			[]corev1.EnvVar{{Name: "JAVA_OPTS", Value: "-XX:MaxRAMPercentage=75"}}, nil, nil},
		{"uWSGI workers recycled only past the limit together", "2Gi", []string{"uwsgi", "--ini", "/app/uwsgi.ini", "--processes=8", "--reload-on-rss=384"}, nil, nil,
			[]string{"Python workers' heap cap --reload-on-rss=384 × 8 workers (3072 MiB) is above the container's memory limit of 2Gi", "a worker is recycled only past a size"}},
		{"Celery children, concurrency from the environment", "1Gi", []string{"celery", "-A", "tasks", "worker", "--max-memory-per-child=262144"},
			[]corev1.EnvVar{{Name: "CELERY_WORKER_CONCURRENCY", Value: "4"}}, nil,
			[]string{"--max-memory-per-child=262144 × 4 workers (1024 MiB) reaches the container's memory limit of 1Gi"}},
		{"a Python worker has no cap to compare", "1Gi", []string{"gunicorn", "--workers", "4", "app:app"},
			[]corev1.EnvVar{{Name: "PYTHONUNBUFFERED", Value: "1"}}, []string{"[2026-11-18 16:20:01 +0000] [1] [INFO] Booting worker with pid: 17"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := &corev1.Container{Name: "app", Command: c.command, Env: c.env, Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(c.limit)}}}
			f := Finding{Kind: KindOOMKilled, Subject: "renderer", Facts: map[string]string{"memory_limit": c.limit}}
			followHeapCap(&f, spec, c.log)
			if (f.fact("heap_over_limit") != "") != (c.want != nil) {
				t.Fatalf("heap over limit %q", f.fact("heap_over_limit"))
			}
			if c.want == nil {
				return
			}
			if f.fact("why") == "" {
				t.Error("no why: the kill's driver is not stated")
			}
			h := &Hypothesis{Kind: KindOOMKilled, Subject: "renderer", Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := explain(t, c.name, oomKilled, h, nil)
			if len(recs) == 0 || !strings.Contains(recs[0].Action, "below its container memory limit") {
				t.Errorf("first action: %+v", recs)
			}
			for _, r := range recs {
				if strings.Contains(r.Action, "twice the current limit") {
					t.Errorf("doubles the limit blindly: %s", r.Action)
				}
			}
		})
	}
}

// TestHeapCapChangeFits: a change that sets a runtime's heap cap is the
// kind of change that produces an OOM kill.
func TestHeapCapChangeFits(t *testing.T) {
	for _, desc := range []string{"values: NODE_OPTIONS=--max-old-space-size=3072", "set GOMEMLIMIT=2GiB on the ingester", "JAVA_OPTS: -XX:MaxRAMPercentage=95"} {
		if !heapSettingRE.MatchString(strings.ToLower(desc)) {
			t.Errorf("%q not read as a heap setting", desc)
		}
	}
}
