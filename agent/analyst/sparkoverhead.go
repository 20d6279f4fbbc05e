package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rootcause/rootcause/finding"
)

// A Spark executor killed at its pod's memory limit while its JVM heap
// had room. Spark sizes an executor pod as spark.executor.memory (the JVM
// heap, SPARK_EXECUTOR_MEMORY in the pod) plus spark.executor.memoryOverhead
// (by default 10% of it, at least 384 MiB). Everything the executor
// uses outside the JVM heap counts only against that overhead: the Python
// worker processes of PySpark and of pandas_udf/applyInPandas (one per
// task slot, each holding its batch and its libraries' models), Arrow
// buffers, off-heap and native memory. When those grow (a job that moved
// work into a Python UDF), the container passes the limit and the kernel
// kills it (exit code 137, "possible container OOM" in the driver's log)
// with no Java OutOfMemoryError; bigger nodes do not help, the overhead
// does. This is an explanation of an OOMKilled finding (oomkilled.go):
// the enrich hook reads the executor's heap and limit from its spec.

var (
	// Spark's memory strings: 6g, 6144m, 6144 (MiB).
	sparkMemRE = regexp.MustCompile(`(?i)^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*$`)
	// A change that moves work outside the JVM.
	sparkOffHeapChangeRE = regexp.MustCompile(`(?i)udf|pyspark|pandas|python|arrow|off-?heap|native|memoryoverhead`)
)

// sparkMem reads a Spark memory string into bytes (0: not one).
func sparkMem(s string) int64 {
	m := findSubmatch(sparkMemRE, s)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	shift := map[string]uint{"k": 10, "": 20, "m": 20, "g": 30, "t": 40}[strings.ToLower(m[2])]
	return int64(v * float64(int64(1)<<shift))
}

// sparkExecutorOverhead marks an OOMKilled Spark executor whose limit is
// its heap plus a small overhead: what it used outside the heap killed it.
func sparkExecutorOverhead(f *Finding, c *corev1.Container) {
	if c == nil || f.fact("spark_overhead") != "" {
		return
	}
	heap := int64(0)
	for _, e := range c.Env {
		if e.Name == "SPARK_EXECUTOR_MEMORY" {
			heap = sparkMem(e.Value)
		}
	}
	lim := orWord(f.fact("memory_limit"), memLimit(c))
	q, err := resource.ParseQuantity(lim)
	if heap <= 0 || lim == "" || err != nil || q.Value() <= heap {
		return
	}
	over := q.Value() - heap
	// Overhead raised well above the default is a choice already made:
	// the heap or the data is then the question, not the overhead.
	if float64(over) > 0.25*float64(heap) && over > 1<<30 {
		return
	}
	f.setFact("spark_heap", mib(heap))
	f.setFact("spark_overhead", fmt.Sprintf("%s (%.0f%% of the heap)", mib(over), float64(over)*100/float64(heap)))
	f.Evidence = append(f.Evidence, fmt.Sprintf("Spark executor: JVM heap (SPARK_EXECUTOR_MEMORY) %s, pod memory limit %s: %s of memoryOverhead for everything outside the heap", mib(heap), lim, mib(over)))
}

// describeSparkOverhead explains the kill.
func describeSparkOverhead(h *Hypothesis) string {
	d := fmt.Sprintf("%s Spark executors are OOMKilled (exit code 137) by the kernel at their pod memory limit of %s: the limit is the %s heap (spark.executor.memory) plus only %s of spark.executor.memoryOverhead, and what the executor uses outside the JVM heap — the Python worker processes of PySpark and pandas_udf tasks, Arrow buffers, off-heap and native memory — counts only against that overhead",
		h.Subject, orWord(h.fact("memory_limit"), "?"), h.fact("spark_heap"), h.fact("spark_overhead"))
	if t := h.Trigger; t != nil && matchLine(sparkOffHeapChangeRE, changeText(t)) {
		d += fmt.Sprintf("; %s moved work outside the JVM (%s)", orWord(t.fact("revision"), "its release"), truncate(t.fact("description"), 160))
	}
	d += "; the nodes are not short: each executor outgrows its own pod"
	return d
}

func recommendSparkOverhead(h *Hypothesis, r *recommender) {
	r.add(finding.PriorityHigh, fmt.Sprintf("Raise spark.executor.memoryOverhead of %s (now %s) to cover the Python workers and off-heap memory, e.g. 2-3 GiB, or set spark.executor.pyspark.memory to bound the Python workers; keep the heap (%s) or lower it to stay within the node", h.Subject, h.fact("spark_overhead"), h.fact("spark_heap")))
	r.add(finding.PriorityMedium, "Reduce what each Python worker holds: fewer cores per executor (fewer concurrent workers), a smaller spark.sql.execution.arrow.maxRecordsPerBatch, load the model once per worker")
	r.add(finding.PriorityLow, "Alert on executor working set against the pod limit and on executor losses with exit code 137")
}
