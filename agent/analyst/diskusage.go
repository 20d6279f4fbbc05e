package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// What a node's disk holds, as the commands an operator ran on it show
// (`kubectl debug node/X -- chroot /host`, ssh, a host shell): `df -h`
// gives the filesystem's size and use, `du -sh` the largest directories,
// `ls -l` the files in them. The disk-fill claim reads them to say who
// fills a disk: a path under /var/lib/kubelet/pods/<uid>/ is a pod's
// volume (an emptyDir, a projected volume), /var/log/pods/<ns>_<pod>_<uid>
// the container runtime's copy of a pod's stdout, and
// /var/lib/docker/containers/<id> a container's json-file log.

// diskUse is one filesystem of a `df` row.
type diskUse struct {
	mount       string
	size, avail float64 // bytes
	usePct      int
}

// diskEntry is one `du` (or `ls -l`) row: a path and what it holds.
type diskEntry struct {
	path  string
	bytes float64
	// pod names the pod (namespace/name) whose volume or log the path
	// is, volume the emptyDir's name ("" when not a volume).
	pod, volume string
	line        string
	// mtime is when ls -l says the file was last written (month, day
	// and time; the year is not known): zero for du rows and for files
	// ls dates by their year.
	mtime time.Time
	dir   string // the directory ls listed
}

var (
	// df -h / df -k: Filesystem Size Used Avail Use% Mounted on.
	dfRowRE = regexp.MustCompile(`^\S+\s+([\d.,]+[KMGTPE]?i?)\s+([\d.,]+[KMGTPE]?i?)\s+([\d.,]+[KMGTPE]?i?)\s+(\d{1,3})%\s+(/\S*)\s*$`)
	// du -sh: SIZE<tab>PATH.
	duRowRE = regexp.MustCompile(`^([\d.,]+[KMGTPE]?i?)\s+(/\S+)\s*$`)
	// ls -l (-h): mode links owner group SIZE month day time|year NAME.
	lsRowRE        = regexp.MustCompile(`^[-l][rwxsStT-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+([\d.,]+[KMGTPE]?)\s+(\w{3}\s+\d{1,2}\s+[\d:]{4,5})\s+(.+)$`)
	kubeletPodRE   = regexp.MustCompile(`/var/lib/kubelet/pods/([0-9a-f-]{36})(?:/volumes/kubernetes\.io~([a-z-]+)/([^/\s]+))?`)
	varLogPodsRE   = regexp.MustCompile(`/var/log/pods/([a-z0-9-]+)_([a-z0-9.-]+)_([0-9a-f-]{36})`)
	dockerCtrRE    = regexp.MustCompile(`/var/lib/docker/containers/([0-9a-f]{12,64})`)
	diskPromptRE   = regexp.MustCompile(`^(?:\[[^\]]*\]|\S*)[#$]\s+(.*)$`)
	commandWordsRE = regexp.MustCompile(`^(sudo\s+)?(\S+)`)
)

// commandsRun names the commands of a command line: the first word of
// each command joined by ;, && or a pipe, inside a chroot or an
// `sh -c '...'` wrapper (kubectl debug node/X -- chroot /host sh -c 'df -h
// /; du -xsh /var/lib/*').
func commandsRun(run string) map[string]bool {
	has := map[string]bool{}
	for _, part := range cmdSplitRE.Split(run, -1) {
		part = strings.Trim(strings.TrimSpace(part), `'"`)
		for {
			m := findSubmatch(cmdWrapperRE, part)
			if m == nil {
				break
			}
			part = strings.Trim(strings.TrimSpace(m[1]), `'"`)
		}
		if m := findSubmatch(commandWordsRE, part); m != nil {
			has[m[2]] = true
		}
	}
	return has
}

var (
	cmdSplitRE   = regexp.MustCompile(`\s*(?:;|&&|\|\||\|)\s*`)
	cmdWrapperRE = regexp.MustCompile(`^(?:sudo\s+|chroot\s+\S+\s+|(?:ba)?sh\s+-c\s+|nsenter\s+(?:-\S+\s+)*)(.*)$`)
)

// sizeBytes reads a size as df, du and ls print it: "43G", "7.2G", "84M",
// "12K", "1.5Ti", or a plain number of bytes (kilobytes when kilo is
// set: df and du print 1K blocks without -h).
func sizeBytes(s string, kilo bool) (float64, bool) {
	s = strings.ReplaceAll(strings.TrimSuffix(s, "i"), ",", ".")
	if s == "" {
		return 0, false
	}
	mult := 1.0
	if i := strings.IndexByte("KMGTPE", s[len(s)-1]); i >= 0 {
		for range i + 1 {
			mult *= 1024
		}
		s = s[:len(s)-1]
	} else if kilo {
		mult = 1024
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return v * mult, true
}

// readDiskCommands reads the df, du and ls outputs of commands that ran on
// host (all commands when host is ""), with the pods their paths belong to.
func readDiskCommands(cmds []evidence.CommandOutput, host string, pods []corev1.Pod) (dfs []diskUse, entries []diskEntry) {
	for _, c := range cmds {
		if host != "" && !commandOnHost(c, host) {
			continue
		}
		run := c.Run
		for _, raw := range c.Lines {
			line := strings.TrimRight(raw, "\r")
			// A shell opened on the node: its prompt starts the next
			// command.
			if m := findSubmatch(diskPromptRE, line); m != nil && !matchLine(lsRowRE, line) {
				run = m[1]
				continue
			}
			has := commandsRun(run)
			kilo := !strings.Contains(run, "-h") && !strings.Contains(run, "-sh") && !strings.Contains(run, "-xsh")
			switch {
			case has["df"] && matchLine(dfRowRE, line):
				if m := findSubmatch(dfRowRE, line); m != nil {
					size, ok1 := sizeBytes(m[1], kilo)
					avail, ok2 := sizeBytes(m[3], kilo)
					pct, _ := strconv.Atoi(m[4])
					if ok1 && ok2 {
						dfs = append(dfs, diskUse{mount: m[5], size: size, avail: avail, usePct: pct})
					}
				}
			case has["du"] && matchLine(duRowRE, strings.TrimSpace(line)):
				if m := findSubmatch(duRowRE, strings.TrimSpace(line)); m != nil {
					if b, ok := sizeBytes(m[1], kilo); ok {
						entries = append(entries, pathEntry(m[2], b, line, pods))
					}
				}
			case has["ls"]:
				if m := findSubmatch(lsRowRE, strings.TrimSpace(line)); m != nil && strings.HasPrefix(line, "-") {
					b, _ := sizeBytes(m[1], false)
					dir := ""
					for _, f := range strings.Fields(run)[1:] {
						if f == "|" {
							break
						}
						if strings.HasPrefix(f, "/") {
							dir = strings.TrimSuffix(f, "/")
						}
					}
					p := m[3]
					if dir != "" && !strings.HasPrefix(p, "/") {
						p = dir + "/" + p
					}
					e := pathEntry(p, b, line, pods)
					e.dir = dir
					if t, err := time.Parse("Jan 2 15:04", strings.Join(strings.Fields(m[2]), " ")); err == nil {
						e.mtime = t
					}
					entries = append(entries, e)
				}
			}
		}
	}
	return dfs, entries
}

// commandOnHost reports whether c ran on host (a node name or address):
// on a node debugged with kubectl debug, over ssh, or at its prompt.
func commandOnHost(c evidence.CommandOutput, host string) bool {
	h := strings.ToLower(host)
	for _, s := range []string{c.Host, strings.TrimPrefix(c.Target, "node/")} {
		s = strings.ToLower(s)
		if s != "" && (s == h || strings.HasPrefix(s, h+".") || sameHost(s, h)) {
			return true
		}
	}
	return false
}

// pathEntry names the pod a node path belongs to.
func pathEntry(path string, b float64, line string, pods []corev1.Pod) diskEntry {
	e := diskEntry{path: path, bytes: b, line: strings.TrimSpace(line)}
	if m := findSubmatch(kubeletPodRE, path); m != nil {
		for i := range pods {
			if string(pods[i].UID) == m[1] {
				e.pod = pods[i].Namespace + "/" + pods[i].Name
			}
		}
		if m[2] == "empty-dir" {
			e.volume = m[3]
		}
	} else if m := findSubmatch(varLogPodsRE, path); m != nil {
		e.pod = m[1] + "/" + m[2]
	} else if m := findSubmatch(dockerCtrRE, path); m != nil {
		for i := range pods {
			for _, st := range pods[i].Status.ContainerStatuses {
				if strings.Contains(st.ContainerID, m[1]) {
					e.pod = pods[i].Namespace + "/" + pods[i].Name
				}
			}
		}
	}
	return e
}

var ipDashRE = regexp.MustCompile(`^ip-(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})\b`)

// sameHost reports whether two names are one host: a cloud node name
// that spells its address (ip-10-0-2-33, ip-10-0-2-33.eu-west-1.compute.internal)
// and the address 10.0.2.33.
func sameHost(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	if a == b {
		return a != ""
	}
	return ipOfNodeName(a) != "" && ipOfNodeName(a) == b || ipOfNodeName(b) != "" && ipOfNodeName(b) == a
}

// ipOfNodeName is the address a node name such as ip-10-0-2-33 spells.
func ipOfNodeName(n string) string {
	if m := findSubmatch(ipDashRE, n); m != nil {
		return m[1] + "." + m[2] + "." + m[3] + "." + m[4]
	}
	return ""
}

// lowFreeShare is the share of a filesystem's size below which its free
// space is low whatever its trend (the usual disk-almost-full alerts fire
// at 10 to 15 %).
const lowFreeShare = 0.15

var fsSizeRE = regexp.MustCompile(`(?i)filesystem_size_bytes|disk_(total|size)_bytes|LogicalDisk_size_bytes`)

// seriesHost is the host a free-space series is of (its node name when a
// label or the cluster's nodes give it, else its instance's address), and
// whether the claim's text names it, by name or address.
func seriesHost(l evidence.Labels, lowerText string, nodes []corev1.Node) (string, bool) {
	inst := strings.ToLower(DependencyName(l["instance"]))
	names := []string{l["node"], l["nodename"], l["kubernetes_node"], l["host"], l["hostname"], inst}
	host := ""
	for _, n := range names {
		if n != "" {
			host = strings.ToLower(n)
			break
		}
	}
	// The cluster's node whose address the instance is.
	for i := range nodes {
		for _, a := range nodes[i].Status.Addresses {
			if inst != "" && a.Address == inst {
				names = append(names, nodes[i].Name)
				if l["node"] == "" && l["nodename"] == "" {
					host = nodes[i].Name
				}
			}
		}
	}
	for _, n := range names {
		n = strings.ToLower(n)
		if n == "" {
			continue
		}
		if containsHost(lowerText, n) {
			return host, true
		}
		if ip := ipOfNodeName(n); ip != "" && containsHost(lowerText, ip) {
			return host, true
		}
	}
	// A node name that spells the instance's address (ip-10-0-2-33).
	if inst != "" && containsHost(lowerText, "ip-"+strings.ReplaceAll(inst, ".", "-")) {
		return host, true
	}
	return host, false
}

// containsHost reports whether text names host as a whole word (10.0.2.3
// is not named by 10.0.2.33).
func containsHost(text, host string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], host)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(host)
		before := j == 0 || !isHostChar(text[j-1])
		after := end == len(text) || !isHostChar(text[end]) || text[end] == '.' && (end+1 == len(text) || text[end+1] < '0' || text[end+1] > '9')
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isHostChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '.' || b == '_'
}

// filesystemSize is the size of the filesystem a free-space series is of:
// its size series (node_filesystem_size_bytes of the same instance and
// mountpoint), else a df run on the host.
func filesystemSize(ev *Gathered, l evidence.Labels, host, mp string) float64 {
	for _, ms := range ev.Metrics {
		if !matchLine(fsSizeRE, ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			if len(s.Points) == 0 || s.Labels["instance"] != l["instance"] || s.Labels["mountpoint"] != l["mountpoint"] || s.Labels["device"] != l["device"] {
				continue
			}
			return s.Points[len(s.Points)-1].V
		}
	}
	dfs, _ := readDiskCommands(ev.Commands, host, ev.K8s.Pods)
	for _, d := range dfs {
		if d.mount == mp {
			return d.size
		}
	}
	return 0
}

var (
	verboseLevelRE  = regexp.MustCompile(`(?i)\b(DEBUG|TRACE|VERBOSE|ALL)\b|\b-v=?[4-9]\b|verbosity\W+[4-9]`)
	logLevelWordsRE = regexp.MustCompile(`(?i)log[_. -]?level|logging[_. ]level|\bverbos|\bloglevel|\blog_?lvl\b|\b-v=?\d`)
	logPathRE       = regexp.MustCompile(`(?i)logs?\b|\.log(\.\d+)?$|/log/`)
)

// filler finds, in du and ls outputs run on host, what fills the disk:
// the largest path, the pod and workload it belongs to, its largest file,
// and, when it is a log, whether the workload logs at a debug level and
// which change set it. It reports whether it found the filler.
func filler(ev *Gathered, f *Finding, host string) bool {
	if host == "" {
		return false
	}
	_, entries := readDiskCommands(ev.Commands, host, ev.K8s.Pods)
	var top *diskEntry
	for i := range entries {
		e := &entries[i]
		if top == nil || e.bytes > top.bytes {
			top = e
		}
	}
	if top == nil || top.bytes < 1<<30 {
		return false
	}
	// What fills a disk is what grows, not what is largest: a directory
	// whose files, as ls -l dates them, are written many times faster
	// than before (a server log at a verbose setting) fills it even when
	// the data beside it is larger.
	largest := top
	g := growingDir(entries)
	if g != nil {
		top = nil
		for i := range entries {
			if entries[i].path == g.dir && entries[i].mtime.IsZero() {
				top = &entries[i]
			}
		}
		if top == nil {
			top = &diskEntry{path: g.dir, bytes: g.held, line: g.line}
		}
		f.setFact("filler_rate", humanBytes(int64(g.rate))+"/h")
		if g.before > 0 {
			f.setFact("filler_rate_before", humanBytes(int64(g.before))+"/h")
		}
		f.setFact("filler_since", g.since)
		f.Evidence = append(f.Evidence, fmt.Sprintf("ls -l on %s: the files of %s are written at %s (%s)", host, g.dir, f.fact("filler_rate"), g.detail))
		if largest.path != top.path && largest.bytes > top.bytes {
			f.setFact("largest", fmt.Sprintf("%s (%s)", largest.path, humanBytes(int64(largest.bytes))))
		}
		// The other directories du measured, for the question what it is
		// not (the WAL, a cache).
		var others []string
		for _, e := range entries {
			if e.mtime.IsZero() && e.path != top.path && e.path != largest.path && e.dir == "" && !strings.HasPrefix(e.path, top.path+"/") {
				others = append(others, fmt.Sprintf("%s holds %s", e.path, humanBytes(int64(e.bytes))))
			}
		}
		f.setFact("others", strings.Join(others, ", "))
	}
	// The largest file under it (ls -l), when listed.
	file := ""
	var fileBytes float64
	for _, e := range entries {
		if e != *top && strings.HasPrefix(e.path, top.path+"/") && e.bytes > fileBytes {
			file, fileBytes = e.path, e.bytes
		}
	}
	// A directory's size comes from du, its file's from ls: the larger
	// says what is held.
	held := max(top.bytes, fileBytes)
	f.setFact("filler_path", top.path)
	f.setFact("filler_size", humanBytes(int64(held)))
	f.setFact("filler_line", top.line)
	f.setFact("filler_volume", top.volume)
	if file != "" {
		f.setFact("filler_file", file[strings.LastIndexByte(file, '/')+1:])
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("du on %s: %s", host, quote(top.line, 200)))
	if top.pod == "" {
		if g != nil && (matchLine(logPathRE, top.path) || matchLine(logPathRE, file)) {
			f.setFact("filler_log", "true")
			serverLogging(ev, f, host)
		}
		return true
	}
	ns, pod, _ := strings.Cut(top.pod, "/")
	wl := workloadOfName(pod)
	f.setFact("filler_pod", top.pod)
	f.setFact("filler_workload", wl)
	if f.Namespace == "" {
		f.Namespace = ns
	}
	what := "the pod's own files"
	if top.volume != "" {
		what = "its emptyDir volume " + top.volume
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s is pod %s (%s) on %s: %s holds %s", top.path, top.pod, wl, host, what, humanBytes(int64(held))))
	if !matchLine(logPathRE, top.path) && !matchLine(logPathRE, file) {
		return true
	}
	f.setFact("filler_log", "true")
	// The log level: the change that set it, else the pod's environment
	// and arguments, else the level of its lines.
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if c.Service == wl && matchLine(logLevelWordsRE, c.Description) && matchLine(verboseLevelRE, c.Description) {
			f.setFact("verbose_change", fmt.Sprintf("%s change of %s at %s: %s", c.Kind, c.Service, ts(c.Timestamp), quote(c.Description, 200)))
			f.setFact("verbose", strings.ToUpper(findString(verboseLevelRE, c.Description)))
		}
	}
	if f.fact("verbose") == "" {
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if p.Namespace+"/"+p.Name != top.pod {
				continue
			}
			for _, ctr := range p.Spec.Containers {
				for _, e := range ctr.Env {
					if matchLine(logLevelWordsRE, e.Name) && matchLine(verboseLevelRE, e.Value) {
						f.setFact("verbose", strings.ToUpper(e.Value))
						f.setFact("verbose_setting", e.Name+"="+e.Value)
					}
				}
				for _, a := range append(slices.Clone(ctr.Command), ctr.Args...) {
					if matchLine(logLevelWordsRE, a) && matchLine(verboseLevelRE, a) {
						f.setFact("verbose", strings.ToUpper(findString(verboseLevelRE, a)))
						f.setFact("verbose_setting", a)
					}
				}
			}
		}
	}
	if v := f.fact("verbose"); v != "" {
		if c := f.fact("verbose_change"); c != "" {
			f.Evidence = append(f.Evidence, c)
		} else {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs at %s level (%s)", wl, v, f.fact("verbose_setting")))
		}
	}
	return true
}

// describeFiller says what fills the disk.
func describeFiller(h *Hypothesis) string {
	what := h.fact("filler_path")
	if p := h.fact("filler_pod"); p != "" {
		what = "pod " + p + " of " + h.fact("filler_workload")
		if v := h.fact("filler_volume"); v != "" {
			what += " in its emptyDir volume " + v + " (on the node's root disk)"
		}
	}
	d := fmt.Sprintf("what fills it is %s, holding %s", what, h.fact("filler_size"))
	if f := h.fact("filler_file"); f != "" && h.fact("filler_rate") == "" {
		d += " in " + f
	}
	if r := h.fact("filler_rate"); r != "" {
		d += ", written at " + r
		if b := h.fact("filler_rate_before"); b != "" {
			d += fmt.Sprintf(" (%s before; %s)", b, h.fact("filler_since"))
		} else if s := h.fact("filler_since"); s != "" {
			d += " (" + s + ")"
		}
		d += h.wrapped("; ", "largest", " is larger but is not what grows") + h.clause("; ", "others")
	}
	if h.fact("filler_log") == "" {
		return d
	}
	if h.fact("filler_pod") == "" {
		d += ": the server's own log"
		if v := h.fact("verbose"); v != "" {
			d += fmt.Sprintf(" with %s", v)
			d += h.wrapped(" (", "verbose_words", ")")
		}
		d += h.clause(", since the ", "verbose_change")
		if l := h.fact("verbose_line"); l != "" {
			d += "; its log: " + quote(ReadableLine(l), 160)
		}
		return d
	}
	d += ": a log file written inside the container, which the kubelet neither rotates nor caps"
	if v := h.fact("verbose"); v != "" {
		d += fmt.Sprintf(", at %s log level", v)
		if c := h.fact("verbose_change"); c != "" {
			d += " since the " + c
		} else if s := h.fact("verbose_setting"); s != "" {
			d += " (" + s + ")"
		}
	}
	return d
}

// recommendFiller is the playbook of a disk filled by a workload.
func recommendFiller(h *Hypothesis, r *recommender) {
	wl := orWord(h.fact("filler_workload"), h.fact("filler_path"))
	host := orWord(h.fact("host"), "the node")
	if v := h.fact("verbose"); v != "" && h.fact("filler_pod") == "" && h.fact("verbose_words") != "" {
		r.high("Turn the statement logging of %s back off (%s; revert the change that set it), e.g. ALTER SYSTEM SET log_statement = 'none'; ALTER SYSTEM SET log_min_duration_statement = '1s'; SELECT pg_reload_conf(); so that its log stops growing at %s", host, v, orWord(h.fact("filler_rate"), "this rate"))
		r.high("Free space on %s now: compress or remove the old log files in %s (not the data or WAL directories)", host, h.fact("filler_path"))
		r.low("Cap the server log (log_rotation_size with log_truncate_on_rotation, or logrotate) or keep it off the data volume, and alert on the log directory's growth")
		return
	} else if v != "" {
		r.high("Set the log level of %s back from %s (revert the change that raised it) so that it stops writing at this rate", wl, v)
	}
	if p := h.fact("filler_pod"); p != "" && h.fact("filler_volume") != "" {
		r.high("Free %s now: truncate %s in pod %s (or restart the pod, which empties its emptyDir %s)", host, orWord(h.fact("filler_file"), "the file"), p, h.fact("filler_volume"))
		r.med("Give the emptyDir %s of %s a sizeLimit (and ephemeral-storage limits), so that the kubelet evicts the pod instead of filling %s", h.fact("filler_volume"), wl, host)
	} else {
		r.high("Free space on %s: remove or move %s (%s)", host, h.fact("filler_path"), h.fact("filler_size"))
	}
	if h.fact("filler_log") != "" {
		r.low("Log to stdout (rotated and capped by the kubelet) or rotate the log file of %s", wl)
	} else {
		r.low("Alert on the growth's cause as well as on the disk's free space")
	}
}

// growth is a directory whose files are written many times faster than
// before, as ls -l dates them.
type growth struct {
	dir           string
	rate, before  float64 // bytes per hour, now and before
	held          float64 // the listed files' bytes
	since, detail string
	line          string
}

// growingDir finds the directory, among those ls -l listed with dates,
// whose files are written fastest now: each file holds what was written
// between the previous file's time and its own (rotated logs, segments),
// so its size over that span is the rate. It is growing when the recent
// rate is at least 100 MiB/h and five times the earliest one listed.
func growingDir(entries []diskEntry) *growth {
	byDir := map[string][]diskEntry{}
	var dirs []string
	for _, e := range entries {
		if e.mtime.IsZero() || e.dir == "" {
			continue
		}
		if byDir[e.dir] == nil {
			dirs = append(dirs, e.dir)
		}
		byDir[e.dir] = append(byDir[e.dir], e)
	}
	var best *growth
	for _, d := range dirs {
		fs := byDir[d]
		slices.SortFunc(fs, func(a, b diskEntry) int { return a.mtime.Compare(b.mtime) })
		type span struct {
			rate float64
			at   time.Time
			name string
		}
		var spans []span
		held := 0.0
		for i := range fs {
			held += fs[i].bytes
			if i == 0 {
				continue
			}
			gap := fs[i].mtime.Sub(fs[i-1].mtime)
			if gap <= 0 || gap > 2*time.Hour {
				continue
			}
			spans = append(spans, span{fs[i].bytes / gap.Hours(), fs[i].mtime, fs[i].path[strings.LastIndexByte(fs[i].path, '/')+1:]})
		}
		if len(spans) < 2 {
			continue
		}
		recent := spans[max(0, len(spans)-3):]
		rates := make([]float64, len(recent))
		for i, sp := range recent {
			rates[i] = sp.rate
		}
		slices.Sort(rates)
		rate := rates[len(rates)/2]
		before := 0.0
		if spans[0].rate < rate/5 {
			before = spans[0].rate
		}
		if rate < 100<<20 || before == 0 {
			continue
		}
		g := &growth{dir: d, rate: rate, before: before, held: held}
		// The first file written at the new rate.
		for i := range fs {
			if fs[i].bytes >= rate/2 && (i == 0 || fs[i-1].bytes < rate/5) {
				g.since = fmt.Sprintf("the first large file: %s, %s by %s", fs[i].path[strings.LastIndexByte(fs[i].path, '/')+1:], humanBytes(int64(fs[i].bytes)), fs[i].mtime.Format("Jan 2 15:04"))
			}
		}
		last := recent[len(recent)-1]
		g.detail = fmt.Sprintf("%s, the newest, written at %s", last.name, humanBytes(int64(last.rate))+"/h")
		if before > 0 {
			g.detail += fmt.Sprintf("; %s at %s before", spans[0].name, humanBytes(int64(before))+"/h")
		}
		g.line = fs[len(fs)-1].line
		if best == nil || g.rate > best.rate {
			best = g
		}
	}
	return best
}

var (
	// dbLogSettingRE: a database server's logging setting as SHOW,
	// pg_settings (psql -A's name|setting), my.cnf or SHOW VARIABLES
	// print it.
	dbLogSettingRE = regexp.MustCompile(`(?i)^\s*\|?\s*(log_statement|log_min_duration_statement|log_duration|log_min_messages|log_min_duration_sample|log_statement_sample_rate|general_log|slow_query_log|long_query_time|log_queries_not_using_indexes|log_connections|log_disconnections)\s*[|=:\t ]\s*'?([\w.-]+)'?`)
	// dbLogChangedRE: the server's own line that a logging parameter was
	// changed ('parameter "log_statement" changed to "all"').
	dbLogChangedRE = regexp.MustCompile(`(?i)parameter "(log_statement|log_min_duration_statement|log_duration|log_min_messages)" changed to "([^"]*)"`)
	// loggingChangeRE: a change about a server's logging.
	loggingChangeRE = regexp.MustCompile(`(?i)statement logging|query logging|log_statement|log_min_duration|general[_ ]log|slow[_ ]query[_ ]log|long_query_time|debug logging|verbose logging|log[_ .-]?level`)
)

// verboseDBSetting reports whether a logging setting makes a database
// server log every statement (or at debug level), and in which words.
func verboseDBSetting(name, value string) (string, bool) {
	n, v := strings.ToLower(name), strings.ToLower(value)
	switch n {
	case "log_statement":
		return "every statement logged", v == "all" || v == "mod"
	case "log_min_duration_statement", "log_min_duration_sample":
		ms, err := strconv.ParseFloat(strings.TrimSuffix(v, "ms"), 64)
		return "every statement's duration logged", err == nil && ms >= 0 && ms < 10
	case "long_query_time":
		s, err := strconv.ParseFloat(v, 64)
		return "every query in the slow log", err == nil && s < 0.01
	case "general_log":
		return "every query in the general log", v == "on" || v == "1"
	case "log_duration":
		return "every statement's duration logged", v == "on"
	case "log_min_messages":
		return "debug messages logged", strings.HasPrefix(v, "debug")
	}
	return "", false
}

// serverLogging finds why a host's server log grows: a logging setting
// that logs every statement, as the server's settings, its own log or a
// change say.
func serverLogging(ev *Gathered, f *Finding, host string) {
	var set, words []string
	seen := map[string]bool{}
	add := func(name, value string) {
		if w, ok := verboseDBSetting(name, value); ok && !seen[strings.ToLower(name)] {
			seen[strings.ToLower(name)] = true
			set = append(set, name+"="+value)
			if !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
	}
	for _, c := range ev.Commands {
		if host != "" && !commandOnHost(c, host) {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(dbLogSettingRE, l); m != nil {
				add(m[1], m[2])
			}
		}
	}
	for _, ls := range ev.Logs {
		if !ls.Host || host != "" && !strings.Contains(strings.ToLower(ls.Source+" "+ls.Subject), strings.ToLower(host)) {
			continue
		}
		for _, t := range ls.Templates {
			for _, l := range t.Lines() {
				if m := findSubmatch(dbLogChangedRE, l); m != nil {
					if _, ok := verboseDBSetting(m[1], m[2]); ok && f.fact("verbose_line") == "" {
						f.setFact("verbose_line", l)
						f.Evidence = append(f.Evidence, fmt.Sprintf("logs %s: %s", ls.Source, quote(ReadableLine(l), 200)))
					}
					add(m[1], m[2])
				}
			}
		}
	}
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if !strings.EqualFold(c.Service, host) && !mentionsName(c.Description, host) || !matchLine(loggingChangeRE, c.Description) {
			continue
		}
		f.setFact("verbose_change", fmt.Sprintf("%s change of %s at %s: %s", changeKindWords(c.Kind), c.Service, ts(c.Timestamp), quote(c.Description, 200)))
	}
	if len(set) == 0 {
		return
	}
	f.setFact("verbose", strings.Join(set, ", "))
	f.setFact("verbose_words", strings.Join(words, ", "))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs at %s (%s)", host, f.fact("verbose"), f.fact("verbose_words")))
	if c := f.fact("verbose_change"); c != "" {
		f.Evidence = append(f.Evidence, c)
	}
	f.setFact("why", fmt.Sprintf("its server log grows at %s with %s", orWord(f.fact("filler_rate"), "the disk's rate"), f.fact("verbose")))
}
