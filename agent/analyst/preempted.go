package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindPreempted is a workload whose running pods the scheduler evicted to
// make room for pods of a higher priority.
const KindPreempted Kind = "preempted"

// Preemption by a higher PriorityClass: when a pending pod's priority is
// above running pods' and no node has room, the scheduler evicts the lower
// ones (event Preempted: "Preempted by pod <uid> on node <node>", older
// schedulers "Preempted by <namespace>/<pod> on node <node>"). A Job's
// preempted pods count as failed pods: preempted often enough, it reaches
// its backoff limit with nothing wrong in its own code or log. The
// preemptors are named from their UIDs (pods listed with their UID and
// priority class), the priorities from the PriorityClasses listed, and the
// change that added the higher class from the month's changes.
var preemptionM = &mechanism{
	kind:   KindPreempted,
	class:  classCause,
	label:  "pods preempted by higher-priority pods",
	detect: detectPreemptions,
	// Replacements of preempted pods left Pending (no room, no node to
	// add) are the same cause seen one step later.
	refines: []Kind{KindNodeLimit, KindUnschedulable},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.Contains(strings.ToLower(changeText(c)), "priorityclass") || strings.Contains(strings.ToLower(changeText(c)), "priority class")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the pods of %s were preempted %s: the scheduler evicted them to make room for pods of a higher priority", h.Subject, timesWord(h.fact("count")))
		d += h.wrapped(" (", "preemptors", ")")
		if v := h.fact("victim_class"); v != "" {
			d += fmt.Sprintf(", above %s's own PriorityClass %s", h.Subject, v)
		}
		if j := h.fact("job_failed"); j != "" {
			d += fmt.Sprintf("; each preempted pod counts as a failed pod, so the Job %s reached its backoff limit (BackoffLimitExceeded) and stopped", j)
		}
		if g := h.fact("global_default"); g != "" {
			d += fmt.Sprintf("; %s is the cluster's globalDefault PriorityClass, so every pod created without a priorityClassName ranks above %s", g, h.Subject)
		}
		d += h.clause("; the higher class is new: ", "class_change")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		cls := orWord(h.fact("preemptor_class"), "the preempting pods'")
		r.high("Stop %s's pods from being preempted: give them a PriorityClass at or above %s, or keep the higher-priority pods off the nodes %s needs (taints, node affinity, a quota on the class); then re-run it", h.Subject, cls, h.Subject)
		r.med("Give Jobs a podFailurePolicy that ignores disruptions (onPodConditions DisruptionTarget: Ignore) so preemptions do not count against backoffLimit")
		r.low("Review new PriorityClasses with preemptionPolicy PreemptLowerPriority before adding them, and alert on Preempted events")
	},
}

// timesWord says how many times ("3 times").
// generatedSuffix is the random suffix a controller without a template
// hash in its pods' names (a DaemonSet, a Job) gives them: five characters
// of the alphabet Kubernetes generates names from (no vowels, no 0, 1 or 3).
var generatedSuffix = regexp.MustCompile(`^(.+)-[bcdfghjklmnpqrstvwxz2456789]{5}$`)

// preemptorWorkload is the workload a preempting pod's name belongs to.
func preemptorWorkload(pod string) string {
	if w := workloadOfName(pod); w != pod {
		return w
	}
	if m := generatedSuffix.FindStringSubmatch(pod); m != nil {
		return m[1]
	}
	return pod
}

func timesWord(n string) string {
	switch n {
	case "", "1":
		return "once"
	}
	return n + " times"
}

// preemptedRE reads the scheduler's Preempted event: the preemptor by UID
// or by namespace/name, and the node.
var preemptedRE = regexp.MustCompile(`^Preempted by (?:pod )?(\S+?)(?: on node (\S+?))?\.?$`)

// podRef is a pod named in listings: name, namespace, priority class.
type podRef struct {
	namespace, name, class string
}

// podsByUID indexes the pods the evidence names by UID: pod objects, and
// tables handed over as text whose columns hold a UID and a priority class
// (kubectl get pods -o custom-columns=NAME:...,UID:.metadata.uid,PRIORITY:.spec.priorityClassName).
// A custom-columns table is read by the fields its columns print, whatever
// their headers say, and without its header line when a grep kept only the
// rows.
func podsByUID(pods []corev1.Pod, outs []evidence.CommandOutput) map[string]podRef {
	m := map[string]podRef{}
	// A pod's class may come from another listing than its UID (one
	// table of classes, a grep of UIDs).
	classOf := map[string]string{}
	defer func() {
		for uid, r := range m {
			if r.class == "" && classOf[r.namespace+"/"+r.name] != "" {
				r.class = classOf[r.namespace+"/"+r.name]
				m[uid] = r
			}
		}
	}()
	for i := range pods {
		p := &pods[i]
		if p.UID != "" {
			m[string(p.UID)] = podRef{p.Namespace, p.Name, p.Spec.PriorityClassName}
		}
	}
	for _, o := range outs {
		spec := customColumns(o.Run)
		var cols []string
		var rows [][]string
		if spec != nil {
			cols = make([]string, len(spec))
			for i, c := range spec {
				cols[i] = c.field
			}
			for _, l := range o.Lines {
				f := strings.Fields(l)
				if len(f) == len(spec) && f[0] == spec[0].header {
					continue // the header line
				}
				rows = append(rows, f)
			}
		} else {
			cols, rows = kubectlTable(o.Lines, "UID", "NAME")
		}
		for _, f := range rows {
			if len(f) != len(cols) {
				continue
			}
			row := map[string]string{}
			for i, c := range cols {
				row[c] = f[i]
				if spec == nil && strings.Contains(c, "PRIORITY") && !strings.Contains(c, "VALUE") {
					row["PRIORITY"] = f[i]
				}
			}
			ns := orWord(row["NAMESPACE"], flagValue(o.Run, "-n", "--namespace"))
			cls := row["PRIORITY"]
			if cls == "<none>" {
				cls = ""
			}
			if cls != "" && row["NAME"] != "" {
				classOf[ns+"/"+row["NAME"]] = cls
			}
			if row["UID"] == "" {
				continue
			}
			if _, ok := m[row["UID"]]; !ok {
				m[row["UID"]] = podRef{ns, row["NAME"], cls}
			}
		}
	}
	return m
}

// customColumn is one column of kubectl's -o custom-columns: its header
// and what it prints (UID, NAME, NAMESPACE, PRIORITY for the priority
// class; the header itself for other fields).
type customColumn struct {
	header, field string
}

// customColumnFields names the fields of a pod custom-columns reads.
var customColumnFields = map[string]string{
	".metadata.uid":                     "UID",
	".metadata.name":                    "NAME",
	".metadata.namespace":               "NAMESPACE",
	".spec.priorityClassName":           "PRIORITY",
	".spec.priority":                    "PRIORITY_VALUE",
	".spec.nodeName":                    "NODE",
	".spec.preemptionPolicy":            "PREEMPTION_POLICY",
	".metadata.ownerReferences[0].name": "OWNER",
}

// customColumnsRE is the -o custom-columns=SPEC of a command.
var customColumnsRE = regexp.MustCompile(`(?:-o|--output)[= ]custom-columns=['"]?([^\s'"|]+)`)

// customColumns reads the columns of a command's -o custom-columns spec
// (HEADER:.json.path,...); nil when it has none.
func customColumns(run string) []customColumn {
	m := findSubmatch(customColumnsRE, run)
	if m == nil {
		return nil
	}
	var out []customColumn
	for _, part := range strings.Split(m[1], ",") {
		h, path, ok := strings.Cut(part, ":")
		if !ok {
			return nil
		}
		f := customColumnFields[strings.TrimSpace(path)]
		if f == "" {
			f = h
		}
		out = append(out, customColumn{header: h, field: f})
	}
	return out
}

// kubectlTable splits a kubectl table's lines into fields: cols is the
// first line holding every column of need, rows the lines after it (each
// caller decides which field counts it accepts). Both are nil when no
// line holds the columns.
func kubectlTable(lines []string, need ...string) (cols []string, rows [][]string) {
	for _, l := range lines {
		f := strings.Fields(l)
		if cols == nil {
			if !slices.ContainsFunc(need, func(c string) bool { return !slices.Contains(f, c) }) {
				cols = f
			}
			continue
		}
		rows = append(rows, f)
	}
	return cols, rows
}

// getPCRE is a get of PriorityClasses by their short name.
var getPCRE = regexp.MustCompile(`\bget\s+pc\b`)

// priorityValues reads PriorityClasses and their values from `kubectl get
// priorityclass` tables (NAME, VALUE, GLOBAL-DEFAULT, AGE...) and from
// their YAML (metadata.name, value, globalDefault: true); global is the
// class marked globalDefault, the one every pod created without a
// priorityClassName gets.
func priorityValues(outs []evidence.CommandOutput) (m map[string]string, global string) {
	m = map[string]string{}
	for _, o := range outs {
		run := strings.ToLower(o.Run)
		if !strings.Contains(run, "priorityclass") && !matchLine(getPCRE, run) {
			continue
		}
		// YAML: name, value and globalDefault of each document.
		var name, value string
		isGlobal := false
		flush := func() {
			if name != "" && value != "" {
				m[name] = value
				if isGlobal {
					global = name
				}
			}
			name, value, isGlobal = "", "", false
		}
		for _, l := range o.Lines {
			t := strings.TrimSpace(l)
			switch {
			case t == "---" || strings.HasPrefix(t, "- apiVersion:") || t == "apiVersion: scheduling.k8s.io/v1":
				flush()
			case strings.HasPrefix(t, "name:") && name == "":
				name = strings.TrimSpace(strings.TrimPrefix(t, "name:"))
			case strings.HasPrefix(t, "value:"):
				value = strings.TrimSpace(strings.TrimPrefix(t, "value:"))
			case t == "globalDefault: true":
				isGlobal = true
			}
		}
		flush()
		cols, rows := kubectlTable(o.Lines, "VALUE", "NAME")
		for _, f := range rows {
			if len(f) < len(cols) {
				continue
			}
			var name, value string
			isGlobal := false
			for i, c := range cols {
				switch c {
				case "NAME":
					name = f[i]
				case "VALUE":
					value = f[i]
				case "GLOBAL-DEFAULT":
					isGlobal = f[i] == "true"
				}
			}
			if name != "" && value != "" {
				m[name] = value
				if isGlobal {
					global = name
				}
			}
		}
	}
	return m, global
}

// victimClass is the PriorityClass of a workload's pods: from its CronJob's
// or Job's pod template, else from a jsonpath query of it handed over as
// text.
func victimClass(k K8sEvidence, outs []evidence.CommandOutput, subject string) string {
	for i := range k.CronJobs {
		if c := &k.CronJobs[i]; c.Name == subject {
			if p := c.Spec.JobTemplate.Spec.Template.Spec.PriorityClassName; p != "" {
				return p
			}
		}
	}
	for i := range k.Jobs {
		if j := &k.Jobs[i]; cronJobOf(j.Name) == subject || j.Name == subject {
			if p := j.Spec.Template.Spec.PriorityClassName; p != "" {
				return p
			}
		}
	}
	for _, o := range outs {
		if !strings.Contains(o.Run, "priorityClassName") || !strings.Contains(o.Run, subject) || len(o.Lines) != 1 {
			continue
		}
		if v := strings.TrimSpace(o.Lines[0]); v != "" && !strings.ContainsAny(v, " \t") {
			return v
		}
	}
	return ""
}

// detectPreemptions reads the Preempted events of the pods under
// investigation, one finding per workload.
func detectPreemptions(ev *Gathered, _ []Finding) []Finding {
	type group struct {
		events []*corev1.Event
		first  time.Time
	}
	groups := map[string]*group{}
	var order []string
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if e.Reason != "Preempted" || e.InvolvedObject.Kind != "Pod" || !matchLine(preemptedRE, strings.TrimSpace(e.Message)) {
			continue
		}
		if ev.Scope.Namespace != "" && e.InvolvedObject.Namespace != "" && e.InvolvedObject.Namespace != ev.Scope.Namespace {
			continue
		}
		wl := workloadOfName(e.InvolvedObject.Name)
		if cj := cronJobOf(wl); cj != "" {
			wl = cj
		}
		g := groups[wl]
		if g == nil {
			g = &group{}
			groups[wl] = g
			order = append(order, wl)
		}
		g.events = append(g.events, e)
		if t, _ := eventTime(e); !t.IsZero() {
			g.first = earliest(g.first, t)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	byUID := podsByUID(ev.K8s.Pods, ev.Commands)
	values, global := priorityValues(ev.Commands)
	var out []Finding
	for _, wl := range order {
		g := groups[wl]
		sort.SliceStable(g.events, func(i, j int) bool {
			a, _ := eventTime(g.events[i])
			b, _ := eventTime(g.events[j])
			return a.Before(b)
		})
		e0 := g.events[0]
		f := Finding{Kind: KindPreempted, Subject: wl, Object: "pod " + e0.InvolvedObject.Namespace + "/" + e0.InvolvedObject.Name,
			Namespace: e0.InvolvedObject.Namespace, Time: g.first, Severity: SevCritical, Weight: 0.9, Source: SrcEvents}
		f.setFact("count", fmt.Sprint(len(g.events)))
		var names []string
		classes := map[string]bool{}
		var preemptorClass string
		for _, e := range g.events {
			m := findSubmatch(preemptedRE, strings.TrimSpace(e.Message))
			who := m[1]
			desc := who
			if r, ok := byUID[who]; ok {
				desc = r.name
				if r.namespace != "" {
					desc = r.namespace + "/" + r.name
				}
				if r.class != "" {
					classes[r.class] = true
					preemptorClass = orWord(preemptorClass, r.class)
				}
				f.Related = append(f.Related, preemptorWorkload(r.name))
			} else if _, name, ok := strings.Cut(who, "/"); ok {
				f.Related = append(f.Related, preemptorWorkload(name))
			}
			if !slices.Contains(names, desc) {
				names = append(names, desc)
			}
			t, _ := eventTime(e)
			if len(f.Evidence) < 3 {
				ev := fmt.Sprintf("event Preempted on pod %s/%s at %s: %q", e.InvolvedObject.Namespace, e.InvolvedObject.Name, ts(t), strings.TrimSpace(e.Message))
				if desc != who {
					ev += fmt.Sprintf(" (pod %s", desc)
					if r := byUID[who]; r.class != "" {
						ev += ", PriorityClass " + r.class
					}
					ev += ")"
				}
				f.Evidence = append(f.Evidence, ev)
			}
		}
		pre := "by " + strings.Join(names, ", ")
		if len(classes) > 0 {
			var cs []string
			for _, c := range slices.Sorted(maps.Keys(classes)) {
				if v := values[c]; v != "" {
					cs = append(cs, fmt.Sprintf("PriorityClass %s, value %s", c, v))
				} else {
					cs = append(cs, "PriorityClass "+c)
				}
			}
			pre += " of " + strings.Join(cs, "; ")
		}
		f.setFact("preemptors", pre)
		// The workloads whose pods took the room suffer nothing, but
		// they are where the fix lies.
		var by []string
		for _, r := range f.Related {
			if r != "" && r != wl && !slices.Contains(by, r) {
				by = append(by, r)
			}
		}
		f.setFact("affected", strings.Join(by, ","))
		f.setFact("preemptor_class", preemptorClass)
		if v := victimClass(ev.K8s, ev.Commands, wl); v != "" {
			if val := values[v]; val != "" {
				v = fmt.Sprintf("%s (value %s)", v, val)
			}
			f.setFact("victim_class", v)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s's pods run with PriorityClass %s; the preempting pods' is %s", wl, v, orWord(preemptorClass, "higher")))
		}
		for i := range ev.K8s.Events {
			e := &ev.K8s.Events[i]
			if e.InvolvedObject.Kind == "Job" && e.Reason == "BackoffLimitExceeded" && (cronJobOf(e.InvolvedObject.Name) == wl || e.InvolvedObject.Name == wl) {
				f.setFact("job_failed", e.InvolvedObject.Name)
			}
		}
		for i := range ev.K8s.Jobs {
			j := &ev.K8s.Jobs[i]
			if cronJobOf(j.Name) != wl && j.Name != wl {
				continue
			}
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason == "BackoffLimitExceeded" {
					f.setFact("job_failed", j.Name)
				}
			}
		}
		if preemptorClass != "" {
			for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
				if strings.Contains(strings.ToLower(c.Description), strings.ToLower(preemptorClass)) && strings.Contains(strings.ToLower(c.Description), "priorityclass") {
					f.setFact("class_change", fmt.Sprintf("%s at %s: %q", orWord(c.Service, "a change"), ts(c.Timestamp), c.Description))
					f.Evidence = append(f.Evidence, fmt.Sprintf("change of %s at %s: %q", orWord(c.Service, "the cluster"), ts(c.Timestamp), c.Description))
					break
				}
			}
		}
		f.Summary = fmt.Sprintf("%s pods preempted %s %s", wl, timesWord(f.fact("count")), pre)
		// The classes as the cluster holds them: the preemptors' above
		// the victim's, and whether it is the default every pod without
		// a class of its own gets.
		var state *Finding
		if vc, pv := victimClass(ev.K8s, ev.Commands, wl), values[preemptorClass]; preemptorClass != "" && pv != "" && vc != "" && values[vc] != "" {
			why := fmt.Sprintf("pods of PriorityClass %s (value %s) outrank %s's %s (value %s)", preemptorClass, pv, wl, vc, values[vc])
			if preemptorClass == global {
				why += fmt.Sprintf("; %s is the globalDefault, the class of every pod created without a priorityClassName", global)
				f.setFact("global_default", global)
			}
			f.setFact("why", why)
			state = &Finding{Kind: KindPreempted, Subject: wl, Object: "PriorityClass " + preemptorClass, Namespace: f.Namespace, Time: g.first,
				Severity: SevWarning, Weight: 0.6, Source: SrcKubernetes, Summary: "PriorityClasses: " + why}
			state.Evidence = append(state.Evidence, fmt.Sprintf("PriorityClass %s has value %s%s; %s's pods run with %s (value %s)", preemptorClass, pv,
				map[bool]string{true: ", globalDefault: true"}[preemptorClass == global], wl, vc, values[vc]))
		}
		out = append(out, f)
		if state != nil {
			out = append(out, *state)
		}
	}
	return out
}
