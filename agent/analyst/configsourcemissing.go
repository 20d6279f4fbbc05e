package analyst

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A process that started without the configuration it was meant to load
// and runs on its defaults. The team's configuration exists (a ConfigMap,
// a values file, a branch of the config repository) but never reached
// the process: the file is mounted where the process does not look (a
// chart that moved the config volume while the container still reads
// --config=/config/app.yaml), a deploy script looks for a values file
// under another name than the one the repository keeps, the config
// server's label (branch) the client asks for was renamed. Nothing fails:
// the process says so once, at its start, and falls back to its built-in
// or the chart's defaults ("config file not found, using built-in
// defaults"; Spring Cloud Config's "Could not locate PropertySource
// (... optional = true ...): None of labels [master] found"; a deploy
// job's "no deploy/values-prod.yaml, using chart defaults"; node-config's
// "No configurations found in configuration directory"). The answer names
// what was not found and where the configuration really is: the path the
// process was given against the path the volume is mounted at (a pod's
// describe, its spec), a listing that shows the file elsewhere or the
// names its directory does hold, the change that renamed what the process
// asks for, and what the process runs with instead (its next line that
// reports a feature enabled or disabled).

// KindConfigSourceMissing is a process running on its defaults because
// the configuration it was meant to load was not found at its start.
const KindConfigSourceMissing Kind = "config_source_missing"

var configSourceMissing = &mechanism{
	kind:   KindConfigSourceMissing,
	class:  classCause,
	label:  "configuration not found at start, the process runs on its defaults",
	detect: func(ev *Gathered, _ []Finding) []Finding { return detectConfigSourceMissing(ev) },
	// A change that names what was not found (its file, directory or
	// label), or a release of the process (a chart that moved its volume).
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		for _, k := range []string{"label", "file", "dir"} {
			if v := h.fact(k); v != "" && containsToken(t, strings.ToLower(v)) {
				return true
			}
		}
		return c.Kind == KindDeploy && c.Subject == h.Subject
	},
	describe:  describeConfigSourceMissing,
	recommend: recommendConfigSourceMissing,
}

var (
	// cfgNotFoundRE is a process saying a configuration source was not
	// found or not loaded.
	cfgNotFoundRE = regexp.MustCompile(`(?i)(?:\bconfig(?:uration)?\b[ _-]?(?:file|source|data|dir(?:ectory)?|location|path)?|property ?source|properties file|settings file|values file)\b.{0,120}?(?:not found|does not exist|no such file|could not be (?:found|loaded|located|read)|cannot be found|not loaded)` +
		`|could not locate property ?source|no configurations? (?:files? )?found|\bno (?:such )?[\w./-]+\.(?:ya?ml|json|toml|ini|conf|properties|env)\b[,;:]? (?:found[,;]? )?(?:using|falling back|fall back)`)
	// cfgFallbackRE says the process went on without it.
	cfgFallbackRE = regexp.MustCompile(`(?i)default|optional\s*[=:]\s*true|none of labels|no such label|no configurations? (?:files? )?found in`)
	// cfgPathRE is a configuration file's path in the line.
	cfgPathRE = regexp.MustCompile(`(?:^|[\s"'=:(\[])((?:/[\w.@-]+)+\.(?:ya?ml|json|toml|ini|conf|properties|env|hcl)|(?:/[\w.@-]+){2,}/?|[\w.-]+(?:/[\w.-]+)*\.(?:ya?ml|json|toml|ini|conf|properties|env|hcl))\b`)
	// cfgLabelRE is the label (branch) a config server has not got.
	cfgLabelRE = regexp.MustCompile(`(?i)none of labels \[([^\]\s,]+)|no such label:?\s*'?([\w./-]+)`)
	// mountLineRE is a mount in kubectl describe pod ("/etc/app from
	// config (ro)").
	mountLineRE = regexp.MustCompile(`^\s*(/\S*) from (\S+) \((?:ro|rw)\)`)
	// cfgEffectRE is what a process reports it runs with: a feature
	// enabled or disabled, a list of what it enabled.
	cfgEffectRE = regexp.MustCompile(`(?i)\b(?:disabled|enabled)\b|[":=]\s*false\b`)
)

// cfgMiss is one process's report of configuration not found.
type cfgMiss struct {
	set  *LogSet
	line string
	at   time.Time
	n    int
}

func detectConfigSourceMissing(ev *Gathered) []Finding {
	known := knownServiceNames(ev)
	misses := map[string]*cfgMiss{}
	var order []string
	for set, t := range allTemplates(ev) {
		line := ""
		for _, l := range t.Lines() {
			if matchLine(cfgNotFoundRE, l) && matchLine(cfgFallbackRE, l) {
				line = l
				break
			}
		}
		if line == "" {
			continue
		}
		subj := configSubject(set, known)
		if subj == "" {
			continue
		}
		m := misses[subj]
		if m == nil {
			m = &cfgMiss{set: set, line: line, at: orTime(t.FirstSeen, t.FirstIncident)}
			misses[subj] = m
			order = append(order, subj)
		}
		m.n += max(t.Count, 1)
		if !t.FirstSeen.IsZero() && t.FirstSeen.Before(m.at) {
			m.at = t.FirstSeen
		}
	}
	var out []Finding
	for _, subj := range order {
		m := misses[subj]
		f := Finding{Kind: KindConfigSourceMissing, Subject: subj, Namespace: m.set.Namespace, Time: m.at, Severity: SevWarning, Weight: 0.8,
			Source: SrcLogs, Object: "workload " + subj}
		f.addCount(m.n)
		line := ReadableLine(m.line)
		f.setFact("line", line)
		f.setFact("since", ts(m.at))
		if m.set.Host {
			f.setFact("reporter", m.set.Source)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged at its start (%s, %d times) that its configuration was not found and it went on without it: %s", m.set.Source, ts(m.at), m.n, quote(line, 260)))
		p := ""
		if x := findSubmatch(cfgPathRE, m.line); x != nil {
			p = strings.TrimSuffix(x[1], "/")
			f.setFact("path", p)
			if ext := path.Ext(p); ext != "" {
				f.setFact("file", path.Base(p))
			}
			if d := path.Dir(p); d != "." && d != "/" && path.Ext(p) != "" {
				f.setFact("dir", d)
			}
		}
		if x := findSubmatch(cfgLabelRE, m.line); x != nil {
			f.setFact("label", orWord(x[1], x[2]))
		}
		configWhereItIs(&f, ev, p)
		configRenamedBy(&f, ev)
		configEffect(&f, m)
		f.Summary = fmt.Sprintf("%s: its configuration was not found at start, it runs on defaults", subj)
		out = append(out, f)
	}
	return out
}

// knownServiceNames are the workloads and services the evidence names:
// deployments, pods' workloads, the services of changes, the workloads
// whose own logs were read.
func knownServiceNames(ev *Gathered) []string {
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, d := range ev.K8s.Deployments {
		add(d.Name)
	}
	for _, p := range ev.K8s.Pods {
		add(workloadOfName(p.Name))
	}
	for _, c := range append(append([]evidence.Change(nil), ev.Changes...), ev.Earlier...) {
		add(c.Service)
	}
	for _, s := range ev.Logs {
		if !s.Host {
			add(s.Subject)
		}
	}
	return names
}

// configSubject is the workload whose configuration a log's line speaks
// of: the log's own subject when it is a workload the evidence knows, or
// the longest known name its source carries (a deploy job's log named
// after the release it deploys).
func configSubject(set *LogSet, known []string) string {
	if slices.Contains(known, set.Subject) || !set.Host {
		return set.Subject
	}
	best := ""
	src := strings.ToLower(set.Source + " " + set.Subject)
	for _, n := range known {
		if len(n) > len(best) && containsToken(src, strings.ToLower(n)) {
			best = n
		}
	}
	return best
}

// configWhereItIs adds where the configuration really is: the mounts of
// the subject's pods (none of them holding the path looked at), the
// argument that names the path, a listing that shows the file in another
// directory, or the names the path's directory does hold.
func configWhereItIs(f *Finding, ev *Gathered, p string) {
	if p == "" {
		return
	}
	dir, base := path.Dir(p), path.Base(p)
	if path.Ext(p) == "" {
		dir, base = p, ""
	}
	// Mounts: of the pods' spec, or a describe's Mounts section.
	var mounts []string
	for _, pod := range podsOfWorkload(ev.K8s.Pods, f.Namespace, f.Subject) {
		for _, c := range pod.Spec.Containers {
			for _, vm := range c.VolumeMounts {
				if !strings.HasPrefix(vm.MountPath, "/var/run/secrets") && !slices.Contains(mounts, vm.MountPath) {
					mounts = append(mounts, vm.MountPath)
				}
			}
			for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
				if strings.Contains(a, p) && f.fact("arg") == "" {
					f.setFact("arg", a)
				}
			}
		}
	}
	for _, cmd := range ev.Commands {
		if cmd.Pod != "" && workloadOfName(cmd.Pod) != f.Subject && !strings.Contains(cmd.Command, f.Subject) {
			continue
		}
		for _, l := range cmd.Lines {
			if m := findSubmatch(mountLineRE, l); m != nil && !strings.HasPrefix(m[1], "/var/run/secrets") && !slices.Contains(mounts, m[1]) {
				mounts = append(mounts, m[1])
			}
			if t := strings.TrimSpace(l); strings.HasPrefix(t, "-") && strings.Contains(t, p) && f.fact("arg") == "" {
				f.setFact("arg", t)
			}
		}
	}
	if len(mounts) > 0 {
		covered := false
		for _, mp := range mounts {
			if p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/") {
				covered = true
			}
		}
		if !covered && strings.HasPrefix(p, "/") {
			f.setFact("mounts", strings.Join(mounts, ", "))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s's container mounts its volumes at %s; none of them holds %s", f.Subject, strings.Join(mounts, ", "), p))
		}
	}
	if a := f.fact("arg"); a != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's container is started with %s", f.Subject, a))
	}
	// Listings: the file in another directory, or what the directory
	// holds instead.
	for _, cmd := range ev.Commands {
		run := strings.TrimSpace(orWord(cmd.Run, cmd.Command))
		if !strings.HasPrefix(run, "ls") && !strings.Contains(run, " ls ") {
			continue
		}
		lsDir := ""
		for _, w := range strings.Fields(run) {
			if strings.Contains(w, "/") && !strings.HasPrefix(w, "-") {
				lsDir = strings.TrimSuffix(strings.Trim(w, `'"`), "/")
			}
		}
		if lsDir == "" {
			continue
		}
		text := strings.Join(cmd.Lines, "\n")
		switch {
		case base != "" && lsDir != dir && strings.Contains(text, base) && f.fact("found_at") == "":
			f.setFact("found_at", lsDir+"/"+base)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s is in %s, not in %s", truncate(run, 100), base, lsDir+"/", dir+"/"))
		case lsDir == dir && strings.Contains(strings.ToLower(text), "no such file or directory") && f.fact("dir_missing") == "":
			f.setFact("dir_missing", dir)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: the directory %s does not exist in the container", truncate(run, 100), dir))
		case base != "" && (lsDir == dir || strings.HasSuffix(lsDir, "/"+dir) || strings.HasSuffix(dir, "/"+lsDir)) && f.fact("instead") == "":
			var alike []string
			for _, w := range strings.Fields(text) {
				if w != base && path.Ext(w) == path.Ext(base) && !slices.Contains(alike, w) {
					alike = append(alike, w)
				}
			}
			if len(alike) > 0 {
				f.setFact("instead", strings.Join(alike, ", "))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s holds %s, no %s", truncate(run, 100), dir+"/", strings.Join(alike, ", "), base))
			}
		}
	}
}

// configRenamedBy adds the change that names what was not found (the
// label, the file, its directory): the rename or move that left the
// process asking for what no longer exists.
func configRenamedBy(f *Finding, ev *Gathered) {
	var names []string
	for _, k := range []string{"label", "file"} {
		if v := f.fact(k); v != "" {
			names = append(names, strings.ToLower(v))
		}
	}
	if len(names) == 0 {
		return
	}
	cs := append(append([]evidence.Change(nil), ev.Earlier...), ev.Changes...)
	for _, c := range cs {
		t := strings.ToLower(c.Description)
		for _, n := range names {
			if containsToken(t, n) && c.Timestamp.Before(f.Time.Add(time.Minute)) {
				f.setFact("renamed_by", fmt.Sprintf("%q (%s, %s)", c.Description, orWord(c.Service, c.Kind), ts(c.Timestamp)))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s change of %s at %s: %s", c.Kind, orWord(c.Service, "the platform"), ts(c.Timestamp), quote(c.Description, 200)))
				return
			}
		}
	}
}

// configEffect adds what the process reports it runs with, in the lines
// it logged just after (a feature disabled, the carriers it enabled).
func configEffect(f *Finding, m *cfgMiss) {
	if m.set.Host {
		return
	}
	for _, t := range m.set.Templates {
		if t.FirstSeen.Before(m.at) || t.FirstSeen.Sub(m.at) > time.Minute {
			continue
		}
		for _, l := range t.Lines() {
			if l != m.line && matchLine(cfgEffectRE, l) && !matchLine(cfgNotFoundRE, l) {
				f.setFact("effect", ReadableLine(l))
				f.Evidence = append(f.Evidence, fmt.Sprintf("what %s runs with instead: %s", f.Subject, quote(ReadableLine(l), 200)))
				return
			}
		}
	}
}

func describeConfigSourceMissing(h *Hypothesis, sc Scope) string {
	d := fmt.Sprintf("%s runs on its defaults, not on the configuration the team maintains: at its start (%s) it did not find its configuration and went on without it (%s)",
		h.Subject, h.fact("since"), quote(h.fact("line"), 220))
	if r := h.fact("reporter"); r != "" {
		d = fmt.Sprintf("%s runs on defaults, not on the configuration the team maintains: %s, which deploys it, did not find its configuration at %s and went on without it (%s)",
			h.Subject, r, h.fact("since"), quote(h.fact("line"), 220))
	}
	if p := h.fact("path"); p != "" {
		d += fmt.Sprintf("; it looks for %s", p)
		if a := h.fact("arg"); a != "" && a != p {
			d += fmt.Sprintf(" (started with %s)", a)
		}
		switch {
		case h.fact("mounts") != "":
			d += fmt.Sprintf(", but its config volume is mounted at %s", h.fact("mounts"))
			if fa := h.fact("found_at"); fa != "" {
				d += fmt.Sprintf(" (the file is at %s)", fa)
			}
			d += ": the path it is given and the mount path differ"
		case h.fact("found_at") != "":
			d += fmt.Sprintf(", but the file is at %s", h.fact("found_at"))
		case h.fact("instead") != "":
			d += fmt.Sprintf(", but %s holds %s under other names", orWord(h.fact("dir"), "its directory"), h.fact("instead"))
		}
		if dm := h.fact("dir_missing"); dm != "" && h.fact("mounts") == "" {
			d += fmt.Sprintf("; %s does not exist in the container", dm)
		}
	}
	if l := h.fact("label"); l != "" {
		d += fmt.Sprintf("; it asks its config server for label %s, which the server does not have", l)
	}
	if r := h.fact("renamed_by"); r != "" {
		d += fmt.Sprintf("; the change %s renamed or moved it", r)
	}
	if e := h.fact("effect"); e != "" {
		d += fmt.Sprintf(". What it runs with instead: %s", quote(e, 180))
	}
	d += ". Nothing fails: the configuration exists but never reached the process, so the defaults are in force"
	return d
}

func recommendConfigSourceMissing(h *Hypothesis, sc Scope, r *recommender) {
	s := h.Subject
	switch {
	case h.fact("mounts") != "":
		r.high("Make the path %s is given (%s) and the config volume's mount path (%s) agree (mount the volume where the process looks, or change the argument), then restart it and check its start log no longer reports the configuration missing", s, h.fact("path"), h.fact("mounts"))
	case h.fact("label") != "":
		r.high("Point %s at a label its config server has (spring.cloud.config.label or the server's default label) and restart it; check its start log shows the located environment", s)
	case h.fact("instead") != "":
		r.high("Give the deploy of %s the values file it keeps (%s) or rename the file to what the deploy looks for (%s), then redeploy and compare the rendered values with the last good release", s, h.fact("instead"), h.fact("file"))
	default:
		r.high("Give %s the configuration where it looks for it (%s) and restart it; check its start log no longer reports the configuration missing", s, orWord(h.fact("path"), "its configured source"))
	}
	r.med("Make the configuration required where it is not optional (fail the start, optional: false / fail-fast) so a missing source stops a rollout instead of running on defaults")
	r.low("Alert on a start that reports its configuration not found, and log the configuration sources loaded at start")
}
