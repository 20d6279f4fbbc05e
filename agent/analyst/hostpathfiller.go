package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A node's disk filled through a hostPath volume: a workload writes into a
// directory of the host (a dataset cache, a scratch directory, a local
// mirror), which the kubelet counts as no pod's ephemeral storage. Under
// DiskPressure it evicts the pods whose own use is largest among the pods
// (a few hundred MiB), not the writer, and evicts them again on every node
// the writer shares. The writer is found from the node's `du` (the largest
// directory, outside the kubelet's, the runtime's and the log
// directories) and who mounts that directory: a pod or workload spec with
// that hostPath, a printed spec (kubectl get -o json/jsonpath/yaml,
// describe's "Path:" line) of a named workload, or a change that says it
// writes there.

// hostPathMin is the least a directory must hold to be what fills a
// node's disk.
const hostPathMin = 5 << 30

// podManagedDirRE is a directory the kubelet or the runtime accounts to
// pods (their volumes, logs and layers): not a hostPath's.
var podManagedDirRE = regexp.MustCompile(`^/var/(?:lib/(?:kubelet|containerd|docker|containers)|log)(?:/|$)`)

// hostPathFiller names, for a node under disk pressure, the workload whose
// hostPath directory holds most of the disk.
func hostPathFiller(ev *Gathered, f *Finding) {
	if f.fact("resource") != "disk" || f.fact("hostpath_workload") != "" {
		return
	}
	host := f.Subject
	if n := f.fact("node"); n != "" {
		host = n
	}
	_, entries := readDiskCommands(ev.Commands, host, ev.K8s.Pods)
	var top *diskEntry
	for i := range entries {
		e := &entries[i]
		if e.pod != "" || e.dir != "" || podManagedDirRE.MatchString(e.path) || e.path == "/" {
			continue
		}
		if top == nil || e.bytes > top.bytes {
			top = e
		}
	}
	if top == nil || top.bytes < hostPathMin {
		return
	}
	wl, ns, how := hostPathUser(ev, top.path)
	if wl == "" {
		return
	}
	f.setFact("hostpath_path", top.path)
	f.setFact("hostpath_size", humanBytes(int64(top.bytes)))
	f.setFact("hostpath_workload", wl)
	f.setFact("hostpath_namespace", ns)
	f.Evidence = append(f.Evidence, fmt.Sprintf("du on %s: %s", host, quote(top.line, 200)), fmt.Sprintf("%s is a hostPath volume of %s: %s", top.path, wl, how))
	if !slices.Contains(f.Related, wl) {
		f.Related = append(f.Related, wl)
	}
}

// hostPathUser names the workload that mounts dir as a hostPath volume (or
// a directory above or below it), its namespace and where that was read.
func hostPathUser(ev *Gathered, dir string) (wl, ns, how string) {
	covers := func(p string) bool {
		p = strings.TrimRight(p, "/")
		return p != "" && p != "/" && (p == dir || strings.HasPrefix(dir, p+"/") || strings.HasPrefix(p, dir+"/"))
	}
	spec := func(s *corev1.PodSpec) bool {
		for _, v := range s.Volumes {
			if v.HostPath != nil && covers(v.HostPath.Path) {
				return true
			}
		}
		return false
	}
	for _, p := range ev.K8s.Pods {
		if spec(&p.Spec) {
			return workloadOfName(p.Name), p.Namespace, "the spec of pod " + p.Namespace + "/" + p.Name
		}
	}
	for _, d := range ev.K8s.Deployments {
		if spec(&d.Spec.Template.Spec) {
			return d.Name, d.Namespace, "the pod template of Deployment " + d.Namespace + "/" + d.Name
		}
	}
	for _, d := range ev.K8s.DaemonSets {
		if spec(&d.Spec.Template.Spec) {
			return d.Name, d.Namespace, "the pod template of DaemonSet " + d.Namespace + "/" + d.Name
		}
	}
	for _, d := range ev.K8s.StatefulSets {
		if spec(&d.Spec.Template.Spec) {
			return d.Name, d.Namespace, "the pod template of StatefulSet " + d.Namespace + "/" + d.Name
		}
	}
	// A spec printed in a transcript: the command names the object.
	for _, c := range ev.Commands {
		if !strings.Contains(strings.ToLower(c.Command), "hostpath") && !slices.ContainsFunc(c.Lines, func(l string) bool { return strings.Contains(strings.ToLower(l), "hostpath") }) {
			continue
		}
		if !slices.ContainsFunc(c.Lines, func(l string) bool { return hostPathLineCovers(l, covers) }) {
			continue
		}
		if m := findSubmatch(hostPathObjectRE, c.Command); m != nil {
			name := m[2]
			if strings.HasPrefix(strings.ToLower(m[1]), "po") {
				name = workloadOfName(name)
			}
			ns := ""
			if m := findSubmatch(hostPathNamespaceRE, c.Command); m != nil {
				ns = m[1]
			}
			return name, ns, quote(c.Command, 160)
		}
	}
	// A change that says the workload writes there.
	for _, c := range ev.Changes {
		if c.Service != "" && strings.Contains(strings.ToLower(c.Description), "hostpath") && strings.Contains(c.Description, dir) {
			return c.Service, "", fmt.Sprintf("the %s change of %s at %s: %s", c.Kind, c.Service, ts(c.Timestamp), quote(c.Description, 200))
		}
	}
	return "", "", ""
}

var (
	// kubectl get|describe KIND NAME, or KIND/NAME.
	hostPathObjectRE    = regexp.MustCompile(`(?i)kubectl\b.*?\b(?:get|describe)\s+(deploy(?:ments?)?|daemonsets?|ds|statefulsets?|sts|po(?:ds?)?|jobs?|cronjobs?|cj)(?:\s+(?:-n|--namespace)[= ]\S+)?(?:/|\s+)([a-z0-9][a-z0-9.-]*)`)
	hostPathNamespaceRE = regexp.MustCompile(`(?:-n\s+|--namespace[= ])([a-z0-9-]+)`)
	// A hostPath's path as a spec prints it: JSON ("path":"/x"), YAML
	// (path: /x) or describe (Path: /x).
	specPathRE = regexp.MustCompile(`(?i)"?path"?\s*[:=]\s*"?(/[^"\s,}]+)`)
)

// hostPathLineCovers reports whether a printed spec line names a path
// covers accepts.
func hostPathLineCovers(line string, covers func(string) bool) bool {
	for _, m := range specPathRE.FindAllStringSubmatch(line, -1) {
		if covers(m[1]) {
			return true
		}
	}
	return false
}

// describeHostPathFiller says what fills a node's disk through a hostPath.
func describeHostPathFiller(h *Hypothesis) string {
	wl := h.fact("hostpath_workload")
	if wl == "" {
		return ""
	}
	if ns := h.fact("hostpath_namespace"); ns != "" {
		wl += " (namespace " + ns + ")"
	}
	return fmt.Sprintf("what fills the node's disk is %s, holding %s, a hostPath volume of %s on the node's root disk: the kubelet counts a hostPath as no pod's ephemeral storage, so it evicts the other pods on the node instead of its writer",
		h.fact("hostpath_path"), h.fact("hostpath_size"), wl)
}

// recommendHostPathFiller is the playbook of a node filled through a
// hostPath.
func recommendHostPathFiller(h *Hypothesis, r *recommender) bool {
	wl := h.fact("hostpath_workload")
	if wl == "" {
		return false
	}
	node := orWord(h.fact("node"), h.Subject)
	r.high("Stop %s writing into %s on %s (scale it down or pause it) and free that directory, so that the node leaves DiskPressure", wl, h.fact("hostpath_path"), node)
	r.med("Move the data of %s off the node's root disk: a PersistentVolume or a dedicated volume, or an emptyDir with a sizeLimit that the kubelet accounts for", wl)
	r.low("Give the evicted workloads an ephemeral-storage request, and alert on a node's disk use together with its largest directories")
	return true
}
