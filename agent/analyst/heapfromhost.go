package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A managed runtime that sizes its heap from the host's memory because it
// cannot read the container's limit on cgroup v2. Node.js, the JVM and
// .NET size their default heap from the memory they see: the container's
// limit when they can read it from the cgroup, the whole machine's when
// they cannot. Runtimes older than their cgroup v2 support (Node.js 16's
// libuv, JDK 8u before 372 and 11 before 11.0.16, .NET Core 3.1) read only
// the cgroup v1 files (/sys/fs/cgroup/memory/memory.limit_in_bytes). When
// their pods move to nodes whose OS mounts the unified hierarchy (cgroup
// v2: COS 105+, Ubuntu 22.04, Bottlerocket, RHEL 9; a node pool or image
// migration), the same image sizes its heap from the host (4 GB of a 32 GB
// machine instead of 528 MB of a 1Gi limit), lets the heap grow past the
// limit and is OOMKilled at it. The pods still on cgroup v1 nodes run
// fine; the latest deploy is innocent. The operator's exec outputs show
// it: `stat -fc %T /sys/fs/cgroup` (cgroup2fs against tmpfs), the heap
// limit the runtime took (V8's heap_size_limit, the JVM's MaxHeapSize or
// "Max. Heap Size (Estimated)") against the container's limit.

// KindHeapFromHost is a runtime sizing its heap from the host's memory on
// cgroup v2 nodes.
const KindHeapFromHost Kind = "heap_from_host"

var (
	// cgroup2LineRE is an output that says the cgroup v2 unified
	// hierarchy is mounted; cgroup1LineRE that cgroup v1 is.
	cgroup2LineRE = regexp.MustCompile(`^\s*cgroup2fs\s*$|\btype cgroup2\b|^cgroup2 on /sys/fs/cgroup`)
	cgroup1LineRE = regexp.MustCompile(`^\s*tmpfs\s*$|\btype cgroup \(.*\bmemory\b`)
	// heapQueryRE is a statement that prints a runtime's heap limit.
	heapQueryRE = regexp.MustCompile(`(?i)heap_size_limit|getHeapStatistics|MaxHeapSize|XshowSettings|GCHeapHardLimit|GetGCMemoryInfo`)
	// heapLabeledRE is an output line that states the heap limit with its
	// name: V8's heap statistics, the JVM's PrintFlagsFinal and
	// -XshowSettings:vm.
	heapLabeledRE = regexp.MustCompile(`(?i)heap_size_limit["']?\s*[:=]\s*(\d+)|MaxHeapSize\s*:?=\s*(\d+)|Max\. Heap Size \(Estimated\):\s*(\d+(?:\.\d+)?)([KMG])`)
	// hostMemQueryRE prints the memory the runtime sees as the machine's.
	hostMemQueryRE = regexp.MustCompile(`(?i)totalmem|MemTotal|physical_memory|OperatingSystemMXBean|TotalAvailableMemoryBytes`)
	// runtimeVersionLineRE is a runtime's version line in an output.
	runtimeVersionLineRE = regexp.MustCompile(`^v(\d+)\.\d+\.\d+$|(?:openjdk|java) version "[\d._]+"|^\d+\.\d+\.\d+ \[/usr/share/dotnet`)
	// nodeMigrationRE is what a change says when it moves pods to other
	// nodes or another node OS.
	nodeMigrationRE = regexp.MustCompile(`(?i)cgroup|node ?pool|node ?group|node image|nodepool|\bami\b|\bcos\b|ubuntu|bottlerocket|kernel|os image|worker (?:pool|image)|node upgrade|nodes? (?:migrat|replac|rotat)`)
)

// heapProbe is what one exec in a pod printed.
type heapProbe struct {
	pod, workload string
	cgroup        string // "v2", "v1", ""
	heap          int64  // the runtime's heap limit, bytes
	limit         int64  // the container's memory limit as the cgroup file says, bytes
	host          int64  // the memory the runtime sees as the machine's, bytes
	version       string // the runtime's version line
}

var heapFromHost = &mechanism{
	kind:    KindHeapFromHost,
	class:   classCause,
	label:   "a runtime sizing its heap from the host's memory on cgroup v2 nodes",
	detect:  detectHeapFromHost,
	related: exceptOwnAndChanges(KindHeapFromHost, kindsOnSubject(KindOOMKilled, KindCrashLoop, KindRestarts, KindSaturation, KindMemcgOOM)),
	refines: []Kind{KindOOMKilled, KindRestarts, KindSaturation, KindCrashLoop},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(nodeMigrationRE, changeText(c))
	},
	strictTriggers: true,
	describe:       describeHeapFromHost,
	recommend:      recommendHeapFromHost,
}

// probeHeap reads one command's output: the cgroup version, the heap
// limit, the cgroup's memory limit and the host's memory, each from the
// statement that printed it when the command ran several (sh -c 'a; b').
func probeHeap(c *evidence.CommandOutput) heapProbe {
	p := heapProbe{pod: c.Pod, workload: commandWorkload(c)}
	stmts := commandStatements(c.Run)
	var lines []string
	for _, l := range c.Lines {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	paired := len(stmts) == len(lines)
	for i, l := range lines {
		stmt := ""
		if paired {
			stmt = stmts[i]
		}
		switch {
		case matchLine(cgroup2LineRE, l):
			p.cgroup = "v2"
		case matchLine(cgroup1LineRE, l) && (stmt == "" || strings.Contains(stmt, "cgroup")):
			p.cgroup = "v1"
		case matchLine(runtimeVersionLineRE, l):
			p.version = l
		}
		if m := findSubmatch(heapLabeledRE, l); m != nil {
			p.heap = heapBytes(m)
			continue
		}
		if stmt == "" {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(l)[0], 64)
		if err != nil {
			continue
		}
		n := scaledBytes(stmt, v)
		switch {
		case matchLine(heapQueryRE, stmt):
			p.heap = n
		case strings.Contains(stmt, "memory.max") || strings.Contains(stmt, "memory.limit_in_bytes"):
			p.limit = n
			if strings.Contains(stmt, "memory.max") && p.cgroup == "" {
				p.cgroup = "v2"
			}
		case matchLine(hostMemQueryRE, stmt):
			p.host = n
		}
	}
	return p
}

// commandStatements splits a shell command run in a container (sh -c
// 'a; b && c') into its statements.
func commandStatements(run string) []string {
	s := run
	if i := strings.Index(s, " -c "); i >= 0 {
		s = strings.TrimSpace(s[i+4:])
		s = strings.Trim(s, `'"`)
	}
	var out []string
	for _, part := range regexp.MustCompile(`;|&&`).Split(s, -1) {
		if strings.TrimSpace(part) != "" {
			out = append(out, strings.TrimSpace(part))
		}
	}
	return out
}

// scaledBytes is a printed number in bytes, by the division its
// statement applied (/1048576: MiB).
func scaledBytes(stmt string, v float64) int64 {
	switch {
	case strings.Contains(stmt, "/1073741824") || strings.Contains(stmt, "/1024/1024/1024"):
		return int64(v * (1 << 30))
	case strings.Contains(stmt, "/1048576") || strings.Contains(stmt, "/1024/1024") || strings.Contains(stmt, "/ 1048576"):
		return int64(v * (1 << 20))
	case strings.Contains(stmt, "/1024"):
		return int64(v * (1 << 10))
	case strings.Contains(stmt, "MemTotal"):
		return int64(v * (1 << 10)) // /proc/meminfo counts kB
	}
	return int64(v)
}

func heapBytes(m []string) int64 {
	for _, g := range m[1:3] {
		if g != "" {
			n, _ := strconv.ParseInt(g, 10, 64)
			return n
		}
	}
	v, _ := strconv.ParseFloat(m[3], 64)
	return int64(v * float64(int64(1)<<map[string]uint{"K": 10, "M": 20, "G": 30}[strings.ToUpper(m[4])]))
}

// detectHeapFromHost finds a workload whose pod on a cgroup v2 node runs
// a heap limit at or above its container's memory limit, the evidence of
// exec outputs; a pod of it on a cgroup v1 node with a heap limit below
// the limit, and the change that moved the nodes, complete the chain.
func detectHeapFromHost(ev *Gathered, _ []Finding) []Finding {
	byWorkload := map[string][]heapProbe{}
	var order []string
	for i := range ev.Commands {
		c := &ev.Commands[i]
		if !c.Exec && !c.Debug {
			continue
		}
		p := probeHeap(c)
		if p.workload == "" || p.cgroup == "" && p.heap == 0 {
			continue
		}
		if _, ok := byWorkload[p.workload]; !ok {
			order = append(order, p.workload)
		}
		byWorkload[p.workload] = append(byWorkload[p.workload], p)
	}
	var out []Finding
	for _, w := range order {
		var v2, v1 *heapProbe
		for i, p := range byWorkload[w] {
			if p.cgroup == "v2" && p.heap > 0 && v2 == nil {
				v2 = &byWorkload[w][i]
			}
			if p.cgroup == "v1" && v1 == nil {
				v1 = &byWorkload[w][i]
			}
		}
		if v2 == nil {
			continue
		}
		limit := v2.limit
		limitText := ""
		for _, pod := range ev.K8s.Pods {
			if !strings.EqualFold(WorkloadOfPod(&pod), w) {
				continue
			}
			for i := range pod.Spec.Containers {
				if l := memLimit(&pod.Spec.Containers[i]); l != "" && limitText == "" {
					limitText = l
					if q, err := resource.ParseQuantity(l); err == nil && limit == 0 {
						limit = q.Value()
					}
				}
			}
		}
		if limit <= 0 || float64(v2.heap) < 0.9*float64(limit) {
			continue
		}
		if limitText == "" {
			limitText = mib(limit)
		}
		f := Finding{Kind: KindHeapFromHost, Subject: w, Namespace: ev.Scope.Namespace, Time: ev.Window.Start, Severity: SevCritical, Weight: 0.85, Source: "kubectl exec"}
		f.setFact("pod_v2", v2.pod)
		f.setFact("heap_v2", mib(v2.heap))
		f.setFact("limit", limitText)
		f.setFact("version", v2.version)
		if v2.host > 0 {
			f.setFact("host", mib(v2.host))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s runs on a cgroup v2 node (cgroup2fs): its runtime's heap limit is %s against the container's memory limit of %s%s",
			orWord(v2.pod, w), mib(v2.heap), limitText, map[bool]string{true: fmt.Sprintf(", the host's memory it sees %s", mib(v2.host)), false: ""}[v2.host > 0]))
		if v1 != nil && v1.heap > 0 && v1.heap < v2.heap {
			f.setFact("pod_v1", v1.pod)
			f.setFact("heap_v1", mib(v1.heap))
			f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s of the same image on a cgroup v1 node (tmpfs): heap limit %s, sized from the limit", orWord(v1.pod, w), mib(v1.heap)))
			f.Weight = 0.93
		}
		for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
			if matchLine(nodeMigrationRE, c.Description) && !strings.EqualFold(c.Service, w) {
				f.setFact("moved_by", fmt.Sprintf("%s's change at %s (%s)", c.Service, c.Timestamp.UTC().Format("2006-01-02T15:04:05Z"), quote(c.Description, 200)))
			}
		}
		if m := f.fact("moved_by"); m != "" {
			f.Evidence = append(f.Evidence, "the pods moved to cgroup v2 nodes with "+m)
		}
		f.setFact("why", fmt.Sprintf("the runtime of %s does not read the cgroup v2 memory limit and sizes its heap from the host's memory", w))
		f.Summary = fmt.Sprintf("%s: heap limit %s on a cgroup v2 node, above its memory limit %s", w, mib(v2.heap), limitText)
		out = append(out, f)
	}
	return out
}

func describeHeapFromHost(h *Hypothesis, sc Scope) string {
	rt := "its runtime"
	if v := h.fact("version"); v != "" {
		rt = fmt.Sprintf("its runtime (%s)", v)
	}
	d := fmt.Sprintf("%s is OOMKilled on the cgroup v2 nodes: %s does not read the cgroup v2 memory limit and sizes its heap from the host's memory instead of the container's, a heap limit of %s against the memory limit of %s",
		h.Subject, rt, h.fact("heap_v2"), h.fact("limit"))
	if x := h.fact("host"); x != "" {
		d += fmt.Sprintf(" (it sees %s of host memory)", x)
	}
	d += ", so the heap grows past the limit before the runtime collects it and the kernel kills the container"
	if v1 := h.fact("heap_v1"); v1 != "" {
		d += fmt.Sprintf("; on a cgroup v1 node the same image sizes its heap at %s (pod %s) and is not killed", v1, h.fact("pod_v1"))
	}
	if m := h.fact("moved_by"); m != "" {
		d += "; the pods reached cgroup v2 nodes with " + m
	}
	d += "; memory that grows to the kill here is the heap the runtime allows, not by itself a leak, and rolling back the application's latest deploy does not change it"
	return d
}

func recommendHeapFromHost(h *Hypothesis, sc Scope, r *recommender) {
	s := h.Subject
	r.high("Set %s's heap cap explicitly below its memory limit (%s): NODE_OPTIONS=--max-old-space-size at ~75%% of it, -XX:MaxRAMPercentage=75 or -Xmx for the JVM, DOTNET_GCHeapHardLimit for .NET; do not roll back its deploy for this", s, orWord(h.fact("limit"), "the limit"))
	r.high("Upgrade %s's runtime to a version that reads cgroup v2 (Node.js 20+, JDK 8u372+/11.0.16+/17, .NET 5+)", s)
	r.med("Before the remaining node pools move to cgroup v2, list the workloads on runtimes without cgroup v2 support and set their heap caps")
	r.low("Alert on a heap limit above the container's memory limit (V8 heap_size_limit, JVM MaxHeapSize exported as metrics)")
}
