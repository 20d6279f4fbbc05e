package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Helm release left in a pending state: helm upgrade (install,
// rollback) marks the release's new revision pending-upgrade before it
// applies anything and marks it deployed or failed when it is done. When
// the helm process dies in between (the CI runner pod evicted by a node
// scale-down, the job killed or cancelled, the runner's node lost) nothing
// ever marks it again: the revision stays pending-upgrade, and Helm takes
// a pending revision for an operation still running, so every later
// upgrade, install or rollback through the same release is refused with
// "another operation (install/upgrade/rollback) is in progress". The
// workloads themselves may run fine (the new ReplicaSet rolled out): only
// deploys are stuck. The state is read as it is printed: helm history,
// helm list and helm status, and the release's storage Secret (or
// ConfigMap) whose labels say owner=helm,status=pending-upgrade; what
// interrupted it from the log of the job that ran helm (its pod disrupted
// or evicted, killed, cancelled) and the cluster autoscaler's log of the
// node it scaled down with the runner's pod on it. Argo CD's "another
// operation is already in progress" and Flux's refused upgrades are the
// same refusal seen from a controller that runs helm.

// KindReleasePending is a Helm release stuck in a pending state after the
// operation that set it was interrupted.
const KindReleasePending Kind = "release_pending"

var (
	// releaseRefusedRE is a deploy refused because the release is locked
	// by an operation in progress (Helm 3, Argo CD, Flux's helm-controller).
	releaseRefusedRE = regexp.MustCompile(`(?i)another operation \(install/upgrade/rollback\) is in progress|another operation is already in progress|upgrade retries exhausted`)
	// pendingStatusRE is a pending release state as Helm prints it, and as
	// its storage labels (and Helm 2's) carry it.
	pendingStatusRE = regexp.MustCompile(`(?i)\bpending[-_](install|upgrade|rollback)\b`)
	// helmRowRE is a row of helm history (REVISION UPDATED STATUS CHART
	// APP VERSION DESCRIPTION); helmListRowRE one of helm list (NAME
	// NAMESPACE REVISION UPDATED STATUS CHART APP VERSION).
	helmRowRE     = regexp.MustCompile(`^\s*(\d+)\s+(\w{3} \w{3}\s+\d+ [\d:]+ \d{4})\s+([\w-]+)\s+(\S+)\s+(\S+)\s*(.*)$`)
	helmListRowRE = regexp.MustCompile(`^\s*([\w.-]+)\s+([\w.-]+)\s+(\d+)\s+(\d{4}-\d\d-\d\d [\d:.]+ [+-]\d{4} \w+)\s+([\w-]+)\s+(\S+)`)
	// helmStatusFieldRE is a field of helm status.
	helmStatusFieldRE = regexp.MustCompile(`^(NAME|NAMESPACE|STATUS|REVISION|LAST DEPLOYED):\s+(.+?)\s*$`)
	// releaseSecretRE is a release's storage object as kubectl lists it:
	// sh.helm.release.v1.NAME.vN (Helm 3), NAME.vN with OWNER=TILLER
	// (Helm 2).
	releaseSecretRE = regexp.MustCompile(`\bsh\.helm\.release\.v1\.([\w.-]+)\.v(\d+)\b|^([\w.-]+)\.v(\d+)\s.*OWNER=TILLER`)
	// helmRunRE is a helm command that changes a release, as a job logs
	// it (the release is read from its words, helmRunRelease).
	helmRunRE = regexp.MustCompile(`\bhelm3?\s+(?:upgrade|install|rollback)\s+(.*)`)
	// helmValueFlags are the helm flags that take a value.
	helmValueFlags = []string{"-n", "--namespace", "-f", "--values", "--set", "--set-string", "--set-file", "--version", "--timeout",
		"--kube-context", "--kubeconfig", "--repo", "--description", "--post-renderer", "--history-max", "--max"}
	// interruptedRE is the job that ran helm being cut short: its pod
	// disrupted or evicted, killed, cancelled, its node scaled down.
	interruptedRE = regexp.MustCompile(`(?i)is disrupted: reason|EvictionByEvictionAPI|DisruptionTarget|Deleting pod for node scale down|\bevicted\b|\bpreempted\b|signal: killed|received signal|SIGTERM|SIGKILL|Job failed \(system failure\)|\bjob (?:was )?cancell?ed|pipeline (?:was )?cancell?ed|operation was canceled|context canceled|OOMKilled|The runner has been (?:killed|stopped)|node (?:is )?(?:shutting down|lost)`)
	// runnerPodRE is the runner's pod a job log names.
	runnerPodRE = regexp.MustCompile(`(?:Running on |pod "?)(?:[\w-]+/)?([a-z0-9][a-z0-9.-]*[a-z0-9])(?: via|"| )`)
	// scaleDownRE is the cluster autoscaler removing a node with the pods
	// it evicts to do so.
	autoscalerScaleDownRE = regexp.MustCompile(`Scale-down: removing (?:empty )?node ([\w.-]+)(?:.*pods to reschedule: (.*))?`)
	// safeToEvictRE is the annotation that lets the autoscaler evict a
	// pod to remove its node.
	safeToEvictRE = regexp.MustCompile(`cluster-autoscaler\.kubernetes\.io/safe-to-evict"?\s*[:=]\s*"?true`)
)

var releasePending = &mechanism{
	kind:   KindReleasePending,
	class:  classCause,
	label:  "a Helm release stuck in a pending state (its operation interrupted)",
	detect: detectReleasePending,
	// The refused deploys (their jobs' errors) and the interrupted job
	// are what it explains.
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		text := f.Summary + " " + f.fact("line") + " " + strings.Join(f.Evidence, " ")
		return matchLine(releaseRefusedRE, text) || matchLine(interruptedRE, text) && slices.Contains(h.top().Related, f.Subject)
	}),
	// The deploy that began the pending revision.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy && strings.EqualFold(c.Subject, h.Subject)
	},
	describe:  describeReleasePending,
	recommend: recommendReleasePending,
}

func describeReleasePending(h *Hypothesis, sc Scope) string {
	state := orWord(h.fact("state"), "pending-upgrade")
	d := "the Helm release " + h.Subject + h.wrapped(" (namespace ", "release_namespace", ")") + " is stuck in " + state
	d += h.clause(" at revision ", "revision") + h.wrapped(" (chart ", "chart", ")") + h.clause(" since ", "since")
	op := strings.TrimPrefix(state, "pending-")
	if i := h.fact("interrupted"); i != "" {
		d += fmt.Sprintf(": the helm %s that set it was interrupted before it could record an outcome — %s", op, i)
	} else {
		d += fmt.Sprintf(": the helm %s that set it never recorded an outcome (its process ended before it finished: a killed or cancelled job, a lost runner; what ended it was not read)", op)
	}
	d += ", so Helm still takes the release for locked by an operation in progress and refuses every later deploy"
	d += h.quoteClause(": ", "refusal", 200)
	d += h.clause("; ", "storage") + h.clause("; the last deployed revision is ", "last_deployed")
	if h.fact("safe_to_evict") != "" {
		d += "; the runner's pods are marked safe to evict (cluster-autoscaler.kubernetes.io/safe-to-evict: \"true\"), so the autoscaler may remove their node mid-job"
	}
	return d
}

func recommendReleasePending(h *Hypothesis, sc Scope, r *recommender) {
	name, ns := h.Subject, h.fact("release_namespace")
	nsArg := ""
	if ns != "" {
		nsArg = " -n " + ns
	}
	if last := h.fact("last_deployed"); last != "" {
		r.high("Clear the stuck release: helm rollback %s %s%s (back to the last deployed revision), then run the deploy again", name, last, nsArg)
	} else {
		r.high("Clear the stuck release: helm rollback %s to its last deployed revision%s, then run the deploy again", name, nsArg)
	}
	if rev := h.fact("revision"); rev != "" {
		r.high("If the rollback is refused too, delete the pending revision's record: kubectl delete secret sh.helm.release.v1.%s.v%s%s (Helm then sees the last deployed revision again)", name, rev, nsArg)
	}
	if h.fact("scaled_down") != "" || h.fact("safe_to_evict") != "" {
		r.med("Keep the autoscaler from evicting deploy jobs: annotate the runner's job pods cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\" (the runner's pod_annotations), or run them on nodes it does not scale down")
	} else {
		r.med("Keep deploy jobs from being cut short (evicted, cancelled, killed): protect the runner's pods from eviction (safe-to-evict \"false\", a PodDisruptionBudget) and do not cancel a pipeline mid-deploy")
	}
	r.med("Let the deploy job check for a pending release before it upgrades (helm status %s%s) and roll it back when no job owns it", name, nsArg)
	r.low("Alert on Helm releases left in a pending state longer than the deploy timeout (helm list --pending)")
}

// pendingRelease is what the evidence says of one release's pending
// revision.
type pendingRelease struct {
	name, namespace, state, revision, chart, lastDeployed, storage string
	at                                                             time.Time
	sources                                                        []string
}

// detectReleasePending finds a Helm release whose latest revision is
// pending, with the deploys it refuses and what interrupted the operation
// that set it.
func detectReleasePending(ev *Gathered, found []Finding) []Finding {
	rels := readPendingReleases(ev)
	if len(rels) == 0 {
		return nil
	}
	var out []Finding
	for _, rel := range rels {
		f := Finding{Kind: KindReleasePending, Subject: rel.name, Object: "helm release " + rel.name, Namespace: rel.namespace,
			Source: SrcKubernetes, Time: rel.at, Severity: SevCritical, Weight: 0.75}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		f.setFact("release_namespace", rel.namespace)
		f.setFact("state", rel.state)
		f.setFact("revision", rel.revision)
		f.setFact("chart", rel.chart)
		f.setFact("last_deployed", rel.lastDeployed)
		f.setFact("storage", rel.storage)
		if !rel.at.IsZero() {
			f.setFact("since", hm(rel.at))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("release %s revision %s is %s (%s)", rel.name, orWord(rel.revision, "latest"), rel.state, strings.Join(rel.sources, ", ")))
		refusal, refusedIn := releaseRefusal(ev, rel, len(rels) == 1)
		if refusal != "" {
			f.setFact("refusal", refusal)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", refusedIn, quote(ReadableLine(refusal), 240)))
		}
		intr := releaseInterruption(ev, rel)
		// Pending for less than a deploy's usual timeout, with nothing
		// read of an interruption: the operation may still be running.
		if intr.what == "" && !rel.at.IsZero() && !ev.Window.End.IsZero() && ev.Window.End.Sub(rel.at) < 15*time.Minute {
			continue
		}
		if intr.what == "" {
			f.Weight = 0.6
		}
		if intr.what != "" {
			f.setFact("interrupted", intr.what)
			f.setFact("scaled_down", intr.node)
			f.setFact("why", "the helm operation that set "+rel.state+" was interrupted: "+intr.short)
			f.Weight = 0.9
			f.Evidence = append(f.Evidence, intr.evidence...)
			if intr.job != "" {
				f.Related = appendNew(f.Related, intr.job)
			}
		}
		for _, c := range ev.Commands {
			if slices.ContainsFunc(c.Lines, safeToEvictRE.MatchString) {
				f.setFact("safe_to_evict", "true")
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: the runner's pods are annotated cluster-autoscaler.kubernetes.io/safe-to-evict \"true\"", c.Command))
				break
			}
		}
		for _, s := range ev.Scope.Subjects() {
			if s != rel.name {
				f.Related = appendNew(f.Related, s)
			}
		}
		f.Summary = fmt.Sprintf("helm release %s stuck in %s (revision %s)", rel.name, rel.state, orWord(rel.revision, "latest"))
		out = append(out, f)
	}
	return out
}

// readPendingReleases reads the releases whose latest revision is pending
// from helm history, list and status outputs and the releases' storage
// labels, and from the release changes read of them.
func readPendingReleases(ev *Gathered) []*pendingRelease {
	var rels keyed[pendingRelease]
	latest := map[string]int{} // the highest revision seen of each release, pending or not
	get := func(name string) *pendingRelease {
		r := rels.get(name)
		r.name = name
		return r
	}
	seen := func(name string, rev int) {
		latest[name] = max(latest[name], rev)
	}
	for _, c := range ev.Commands {
		verb, release, ns := helmVerb(c.Run)
		switch verb {
		case "history":
			var lastDeployed string
			for _, l := range c.Lines {
				m := findSubmatch(helmRowRE, l)
				if m == nil {
					continue
				}
				rev, _ := strconv.Atoi(m[1])
				seen(release, rev)
				if m[3] == "deployed" || m[3] == "superseded" {
					lastDeployed = m[1]
				}
				if st := findString(pendingStatusRE, m[3]); st != "" {
					r := get(release)
					r.state, r.revision, r.chart = normalState(st), m[1], m[4]
					r.namespace = orWord(r.namespace, ns)
					if t, err := time.Parse("Mon Jan _2 15:04:05 2006", strings.Join(strings.Fields(m[2]), " ")); err == nil {
						r.at = t
					} else if t, err := time.Parse("Mon Jan 2 15:04:05 2006", strings.Join(strings.Fields(m[2]), " ")); err == nil {
						r.at = t
					}
					r.sources = appendNew(r.sources, "helm history")
				}
			}
			if r := rels.m[release]; r != nil && lastDeployed != "" && lastDeployed != r.revision {
				r.lastDeployed = lastDeployed
			}
		case "list":
			for _, l := range c.Lines {
				m := findSubmatch(helmListRowRE, l)
				if m == nil {
					continue
				}
				rev, _ := strconv.Atoi(m[3])
				seen(m[1], rev)
				if st := findString(pendingStatusRE, m[5]); st != "" {
					r := get(m[1])
					r.state, r.revision, r.chart, r.namespace = normalState(st), m[3], m[6], m[2]
					if t, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", m[4]); err == nil && r.at.IsZero() {
						r.at = t.UTC()
					}
					r.sources = appendNew(r.sources, "helm list")
				}
			}
		case "status":
			fields := map[string]string{}
			for _, l := range c.Lines {
				if m := findSubmatch(helmStatusFieldRE, l); m != nil && fields[m[1]] == "" {
					fields[m[1]] = m[2]
				}
			}
			if st := findString(pendingStatusRE, fields["STATUS"]); st != "" {
				name := orWord(fields["NAME"], release)
				r := get(name)
				r.state, r.revision = normalState(st), orWord(r.revision, fields["REVISION"])
				r.namespace = orWord(r.namespace, orWord(fields["NAMESPACE"], ns))
				if t, err := time.Parse("Mon Jan _2 15:04:05 2006", fields["LAST DEPLOYED"]); err == nil && r.at.IsZero() {
					r.at = t
				}
				r.sources = appendNew(r.sources, "helm status")
			}
		default:
			// The release's storage objects with their labels.
			for _, l := range c.Lines {
				m := findSubmatch(releaseSecretRE, l)
				if m == nil {
					continue
				}
				name, revText := orWord(m[1], m[3]), orWord(m[2], m[4])
				rev, _ := strconv.Atoi(revText)
				seen(name, rev)
				st := findString(pendingStatusRE, l)
				if st == "" {
					continue
				}
				r := get(name)
				r.state, r.revision = normalState(st), orWord(r.revision, revText)
				r.storage = fmt.Sprintf("its release record %s is labelled status=%s", strings.Fields(l)[0], normalState(st))
				r.sources = appendNew(r.sources, "the release's storage labels")
				if c.Namespace != "" {
					r.namespace = orWord(r.namespace, c.Namespace)
				}
			}
		}
	}
	// A release change read of a pending revision (helm history read into
	// the release's changes).
	for _, c := range ev.Changes {
		st := findString(pendingStatusRE, c.Description)
		if st == "" || c.Service == "" || !strings.Contains(strings.ToLower(c.Description), "helm release") {
			continue
		}
		r := get(c.Service)
		r.state = orWord(r.state, normalState(st))
		r.revision = orWord(r.revision, c.Revision)
		if r.at.IsZero() || !c.Timestamp.IsZero() && c.Timestamp.Before(r.at) {
			r.at = c.Timestamp
		}
		rev, _ := strconv.Atoi(c.Revision)
		seen(c.Service, rev)
		r.sources = appendNew(r.sources, "the release's history")
	}
	var out []*pendingRelease
	for _, n := range rels.order {
		r := rels.m[n]
		// A pending revision superseded by a later one is over.
		if rev, err := strconv.Atoi(r.revision); err == nil && latest[n] > rev {
			continue
		}
		out = append(out, r)
	}
	return out
}

// helmRunRelease is the release a helm upgrade, install or rollback
// command line names ("" for none): its first word that is not a flag or
// a flag's value.
func helmRunRelease(line string) string {
	m := findSubmatch(helmRunRE, line)
	if m == nil {
		return ""
	}
	words := strings.Fields(m[1])
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case slices.Contains(helmValueFlags, w):
			i++
		case strings.HasPrefix(w, "-"):
		default:
			return strings.Trim(w, `"'`)
		}
	}
	return ""
}

// normalState writes a pending state as Helm 3 prints it.
func normalState(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "_", "-"))
}

// helmVerb reads a helm command: history, list or status, the release it
// names and its namespace.
func helmVerb(run string) (verb, release, ns string) {
	words := strings.Fields(run)
	if len(words) < 2 || strings.TrimPrefix(words[0], "/usr/local/bin/") != "helm" && words[0] != "helm3" {
		return "", "", ""
	}
	var args []string
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "|":
			i = len(words)
		case w == "-n" || w == "--namespace":
			if i+1 < len(words) {
				ns = words[i+1]
				i++
			}
		case strings.HasPrefix(w, "--namespace="):
			ns = strings.TrimPrefix(w, "--namespace=")
		case w == "--max" || w == "-o" || w == "--output" || w == "--kube-context" || w == "--revision":
			i++
		case strings.HasPrefix(w, "-"):
		default:
			args = append(args, w)
		}
	}
	if len(args) == 0 {
		return "", "", ""
	}
	switch args[0] {
	case "history", "hist":
		verb = "history"
	case "list", "ls":
		return "list", "", ns
	case "status":
		verb = "status"
	default:
		return "", "", ""
	}
	if len(args) < 2 {
		return "", "", ""
	}
	return verb, args[1], ns
}

// releaseRefusal is a deploy refused for the release being locked, with
// where it was read: a line of a log or a command's output that names the
// release, or any when it is the only release pending.
func releaseRefusal(ev *Gathered, rel *pendingRelease, only bool) (string, string) {
	for _, set := range ev.Logs {
		names := only
		var hit string
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if namesWord(l, rel.name) {
					names = true
				}
				if hit == "" && matchLine(releaseRefusedRE, l) {
					hit = l
				}
			}
		}
		if hit != "" && names {
			return hit, orWord(set.Source, set.Subject) + " logs"
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if matchLine(releaseRefusedRE, l) && (only || namesWord(c.Run+" "+l, rel.name)) {
				return l, c.Command
			}
		}
	}
	return "", ""
}

// interruption is what cut short the operation that set a pending
// revision.
type interruption struct {
	what, short, job, node string
	evidence               []string
}

// releaseInterruption reads the log of the job that ran helm on the
// release around the pending revision's time: the lines that say it was
// cut short, the runner's pod, and the autoscaler's removal of that pod's
// node.
func releaseInterruption(ev *Gathered, rel *pendingRelease) interruption {
	var in interruption
	for _, set := range ev.Logs {
		var ran time.Time
		var lines []string
		var pods []string
		for _, t := range set.Templates {
			for _, l := range []string{t.Example, t.Last} {
				if helmRunRelease(l) == rel.name {
					at := firstOf(t.FirstSeen, t.FirstIncident)
					if rel.at.IsZero() || !at.IsZero() && !at.After(rel.at.Add(2*time.Minute)) && rel.at.Sub(at) < 30*time.Minute {
						ran = firstOf(at, rel.at)
					}
				}
			}
		}
		if ran.IsZero() {
			continue
		}
		for _, t := range set.Templates {
			at := firstOf(t.FirstSeen, t.FirstIncident)
			if !at.IsZero() && (at.Before(ran) || at.Sub(ran) > 30*time.Minute) {
				continue
			}
			if m := findSubmatch(runnerPodRE, t.Example); m != nil {
				pods = appendNew(pods, m[1])
			}
			if matchLine(interruptedRE, t.Example) && !matchLine(releaseRefusedRE, t.Example) {
				lines = append(lines, t.Example)
			}
		}
		if len(lines) == 0 {
			continue
		}
		in.job = set.Subject
		src := orWord(set.Source, set.Subject)
		for _, l := range lines {
			in.evidence = append(in.evidence, fmt.Sprintf("%s logs: %s", src, quote(ReadableLine(l), 240)))
		}
		node, evicted := autoscalerRemoved(ev, pods)
		switch {
		case node != "":
			in.node = node
			in.short = fmt.Sprintf("cluster-autoscaler scaled down node %s and evicted its runner pod %s", node, evicted)
			in.what = fmt.Sprintf("the job that ran it (%s) lost its runner pod %s when cluster-autoscaler scaled down node %s (%s)", src, evicted, node, quote(ReadableLine(lines[len(lines)-1]), 200))
			for _, c := range ev.Commands {
				for _, l := range c.Lines {
					if strings.Contains(l, node) && matchLine(autoscalerScaleDownRE, l) {
						in.evidence = append(in.evidence, fmt.Sprintf("cluster-autoscaler: %s", quote(l, 240)))
						break
					}
				}
			}
		default:
			in.short = "its job was cut short: " + truncate(ReadableLine(lines[0]), 120)
			in.what = fmt.Sprintf("the job that ran it (%s) was cut short: %s", src, quote(ReadableLine(strings.Join(lines, " / ")), 240))
		}
		return in
	}
	return in
}

// autoscalerRemoved is the node the cluster autoscaler removed with one
// of pods on it, and that pod, from its log (a log read or a command's
// output).
func autoscalerRemoved(ev *Gathered, pods []string) (node, pod string) {
	check := func(l string) bool {
		m := findSubmatch(autoscalerScaleDownRE, l)
		if m == nil {
			return false
		}
		for _, p := range pods {
			if strings.Contains(m[2], p) {
				node, pod = m[1], p
				return true
			}
		}
		return false
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if check(l) {
				return node, pod
			}
		}
	}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			if check(t.Example) || check(t.Last) {
				return node, pod
			}
		}
	}
	return "", ""
}
