package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// A pod's own memory limit behind a node's OOM kills: the kernel's
// OOM report (dmesg, journalctl -k) says constraint=CONSTRAINT_MEMCG and
// "Memory cgroup out of memory" when a container's cgroup reached its
// memory limit, not when the node ran out of memory; oom_memcg names the
// pod by its UID (/kubepods/burstable/pod<UID>/<container>, or
// kubepods-burstable-pod<UID with underscores>.slice with the systemd
// driver). An alert on the node's OOM kills (HostOomKillDetected,
// node_vmstat_oom_kill) then concerns that pod alone: the others on the
// node are unaffected. A child process killed (a prefork worker, a
// subprocess) leaves the main process and the container running, so no
// restart or OOMKilled status shows.
var memcgOOM = &mechanism{
	kind:   KindMemcgOOM,
	class:  classCause,
	label:  "container memory limit (memory cgroup OOM kills)",
	detect: detectMemcgOOM,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the node's OOM kills are memory-cgroup OOM kills inside %s (constraint=CONSTRAINT_MEMCG, \"Memory cgroup out of memory\"): %s", h.Subject, h.fact("kills"))
		if l := h.fact("limit"); l != "" {
			d += fmt.Sprintf(" reach the container's memory limit of %s", l)
		} else {
			d += " reach the container's memory limit"
		}
		d += fmt.Sprintf(" (pod %s, cgroup %s), so the kernel kills them inside that cgroup; the node itself is not out of memory", h.fact("pod"), h.fact("memcg"))
		if r := h.fact("rss"); r != "" {
			d += fmt.Sprintf(" (the killed process held %s resident)", r)
		}
		d += ". The other pods on the node are not affected by them"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Raise the memory limit of %s above what its largest work needs%s, or cut the work's memory (fewer concurrent workers, streaming instead of building in memory)", h.Subject, map[bool]string{true: " (now " + h.fact("limit") + ")"}[h.fact("limit") != ""])
		r.med("Leave the other pods on the node where they are: the kills are confined to %s's memory cgroup", h.Subject)
		r.low("Scope node OOM alerts by memory cgroup (container_oom_events_total per container) so a container's own limit does not page as a host OOM")
	},
}

// KindMemcgOOM is a container's memory cgroup at its limit, read from
// the kernel's OOM reports.
const KindMemcgOOM Kind = "memcg_oom"

var (
	// memcgOOMRE is the kernel's oom-kill summary line with its
	// constraint and cgroups.
	memcgOOMRE = regexp.MustCompile(`oom-kill:constraint=CONSTRAINT_MEMCG\b.*?oom_memcg=(\S+?)(?:,|\s|$).*?task=([^,\s]+)`)
	// memcgPodUIDRE reads the pod UID from a kubepods cgroup path, with
	// the cgroupfs or the systemd driver.
	memcgPodUIDRE = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)
	// memcgKilledRE is the kill line with the victim's resident memory.
	memcgKilledRE = regexp.MustCompile(`Memory cgroup out of memory: Kill(?:ed)? process \d+ \(([^)]+)\).*?anon-rss:(\d+)kB`)
	// memQuantityRE is a memory quantity in a table row.
	memQuantityRE = regexp.MustCompile(`^\d+(?:\.\d+)?(?:Ki|Mi|Gi|Ti|K|M|G)$`)
)

// detectMemcgOOM reads the kernel's memory-cgroup OOM kills from command
// output handed over and names the pod whose cgroup they hit, by its UID.
func detectMemcgOOM(ev *Gathered, found []Finding) []Finding {
	type kill struct {
		uid, memcg, task, rss string
		at                    time.Time
	}
	var kills []kill
	for _, c := range ev.Commands {
		for i, l := range c.Lines {
			m := findSubmatch(memcgOOMRE, l)
			if m == nil {
				continue
			}
			u := findSubmatch(memcgPodUIDRE, m[1])
			if u == nil {
				continue
			}
			k := kill{uid: strings.ReplaceAll(u[1], "_", "-"), memcg: m[1], task: m[2]}
			if t := findSubmatch(dmesgTimeRE, l); t != nil {
				k.at, _ = time.Parse("Mon Jan _2 15:04:05 2006", strings.Join(strings.Fields(t[1]), " "))
			}
			for _, n := range c.Lines[i:min(i+3, len(c.Lines))] {
				if km := findSubmatch(memcgKilledRE, n); km != nil {
					k.rss = humanBytes(int64(atoiLoose(km[2])) * 1024)
					break
				}
			}
			kills = append(kills, k)
		}
	}
	if len(kills) == 0 {
		return nil
	}
	// The pod: one UID most kills name.
	uid := kills[0].uid
	n := 0
	for _, k := range kills {
		if k.uid == uid {
			n++
		}
	}
	pod, ns, limit := "", "", ""
	for _, p := range ev.K8s.Pods {
		if string(p.UID) == uid {
			pod, ns = p.Name, p.Namespace
			for _, c := range p.Spec.Containers {
				if q, ok := c.Resources.Limits["memory"]; ok && limit == "" {
					limit = q.String()
				}
			}
		}
	}
	// A listing of pods with their UIDs (kubectl get pods -o
	// custom-columns=...UID...): the row names the pod and may carry its
	// limit.
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if !strings.Contains(l, uid) {
				continue
			}
			for j, tok := range strings.Fields(l) {
				if tok == uid {
					continue
				}
				if pod == "" && j > 0 && workloadOfName(tok) != "" && workloadOfName(tok) != tok {
					pod = tok
					if fs := strings.Fields(l); j > 0 && ns == "" && len(fs) > 2 {
						ns = fs[j-1]
					}
				}
				if limit == "" && matchLine(memQuantityRE, tok) {
					if _, err := resource.ParseQuantity(tok); err == nil {
						limit = tok
					}
				}
			}
		}
	}
	if pod == "" {
		return nil
	}
	first := kills[0]
	task := first.task
	f := Finding{Kind: KindMemcgOOM, Subject: workloadOfName(pod), Object: "pod " + ns + "/" + pod, Namespace: ns, Source: SrcLogs, Severity: SevCritical, Weight: 0.95, Time: first.at}
	f.setFact("pod", pod)
	f.setFact("memcg", first.memcg)
	f.setFact("limit", limit)
	f.setFact("rss", first.rss)
	f.setFact("kills", fmt.Sprintf("its %s processes (%d kills)", task, n))
	if n == 1 {
		f.setFact("kills", fmt.Sprintf("its %s process", task))
	}
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("kernel: %d OOM kills with constraint=CONSTRAINT_MEMCG in oom_memcg %s (task %s)", n, first.memcg, task),
		fmt.Sprintf("pod UID %s is %s/%s%s", uid, ns, pod, map[bool]string{true: ", memory limit " + limit}[limit != ""]))
	f.Summary = fmt.Sprintf("%s: %d memory-cgroup OOM kills at its container's memory limit %s", f.Subject, n, limit)
	return []Finding{f}
}
