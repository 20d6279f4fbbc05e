package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A mechanism is one cause the analyst knows, in one home: its kind, class
// and label, the log lines that show it, what it detects over the gathered
// evidence, which other findings and changes belong to it, how it is
// explained and what to do about it. Each lives in its own file with its
// table tests (fdexhaustion.go and fdexhaustion_test.go, clockskew.go...);
// mechanisms.go lists them. The engine iterates over the list and never
// learns their names: gathering, the object graph, onset and scoring,
// choosing the root and calibration stay general (reason.go, gather.go).
//
// Adding a cause means adding a file that declares a mechanism and one
// line in the list (and its prior in the kinds table, where priors are
// tuned against each other). Every hook but kind, class, label, describe
// and recommend is optional.
type mechanism struct {
	kind  Kind
	class string // classCause, classSymptom, classDependency
	label string // human label of the kind

	// lines classifies log lines into this kind, with the weight of a
	// finding from them; its place among the other log rules is set by
	// logRules (precedence matters: the first matching rule wins).
	lines      *regexp.Regexp
	lineWeight float64

	// detect derives findings from the gathered evidence, after the
	// general detectors ran (found holds their findings). It reads what
	// was gathered and never calls a tool.
	detect func(ev *Gathered, found []Finding) []Finding

	// pod judges a pod as a whole (evicted, unschedulable); whole means
	// its findings explain the pod and its containers are not judged.
	pod func(p *corev1.Pod, base Finding) (fs []Finding, whole bool)
	// container judges one container: its state, its termination and its
	// last log lines. Exactly one mechanism judges a given state.
	container func(c *containerState) []Finding
	// fromCrash reads the cause of a crash finding (the crash's own
	// mechanism asks, crashCauses) from the container's termination and
	// last lines.
	fromCrash func(crash Finding, c *containerState) (Finding, bool)

	// metrics derives findings from metric series beyond a shift from
	// their baseline (an autoscaler at its maximum, a backlog growing, a
	// certificate near its expiry), within DetectMetrics.
	metrics func(sets []MetricSet, w Window) []Finding
	// objects judges cluster objects other than pods and events (a
	// deployment's rollout, a service's endpoints).
	objects func(ev *K8sEvidence, w Window) []Finding
	// nodeCondition judges one condition of a node (nil: not this
	// mechanism's); the engine fills in the node.
	nodeCondition func(n *corev1.Node, c corev1.NodeCondition) *Finding
	// enrich adds what the spec of a finding's workload's main container
	// says to a finding of this kind (EnrichFromPods).
	enrich func(f *Finding, c *corev1.Container)
	// victims reports whether a finding shows a victim of this
	// mechanism's findings (a caller failing to resolve names, of the
	// cluster DNS): the victim is related to them (linkVictims).
	victims func(f *Finding) bool

	// event classifies a Kubernetes event as showing this mechanism, with
	// the weight of the finding it gives. No two mechanisms claim the same
	// event (TestEventRulesExclusive); the engine merges the events of one
	// object and kind into one finding (DetectEvents, k8s.go).
	event func(e *corev1.Event) (weight float64, ok bool)
	// eventCritical makes the findings of this mechanism's events
	// critical rather than warnings.
	eventCritical bool
	// eventOutlivesPod keeps this mechanism's events current after their
	// pod is gone (its node failed, it was evicted).
	eventOutlivesPod bool
	// eventTarget re-targets an event's finding when the cause is about
	// something else than the event's object (the workload a node's OOM
	// killer killed, the node of a pod that reports it NotReady).
	eventTarget func(e *corev1.Event, t *eventTarget)
	// eventFacts adds what an event says to its finding.
	eventFacts func(f *Finding, e *corev1.Event)

	// related reports whether f, a finding outside h, concerns h even
	// though it names another subject (the database's own log behind a
	// client's slow statements; a clock off on another node).
	related func(h *Hypothesis, f *Finding) bool

	// unrelated reports whether f, a finding about h's subject, cannot
	// follow from h's cause (a server's own pod probes when the cause is
	// in the client's network): it is neither evidence nor a consequence
	// of h, whatever subject it names.
	unrelated func(h *Hypothesis, f *Finding) bool

	// fitsChange reports whether a change is of the kind that produces
	// this mechanism (a config change for a config error): such a change
	// is preferred as the trigger.
	fitsChange func(h *Hypothesis, c *Finding) bool
	// strictTriggers: only a change that fits triggers this mechanism (a
	// CPU limit cut for throttling); any other change near its onset is a
	// coincidence, neither its trigger nor a rival explanation of the
	// symptoms it explains.
	strictTriggers bool
	// strictFor is strictTriggers decided per hypothesis (waits on one hot
	// row are triggered by load, waits behind a long transaction by any
	// change to its client).
	strictFor func(h *Hypothesis) bool
	// contentTriggers: only a change whose text names what the chain of
	// the cause reached (its port, label, image, key: triggers.go)
	// triggers this mechanism; a change to its subject that says nothing
	// of it is a coincidence (a flag flipped before a pod went Pending).
	contentTriggers bool

	// refines names the kinds whose findings this mechanism's findings
	// explain one hop further on the same subject (the script whose line
	// endings make its start fail): with those findings among its
	// evidence, it ranks above their own hypothesis (yieldRefined).
	refines []Kind
	// refinesAcross lets the findings it refines name another subject
	// (the pods that mount the Secret a certificate never got): every one
	// of them must then be among its evidence (its related hook).
	refinesAcross bool

	// describe explains the root cause in one paragraph; recommend adds
	// actions, high priority first.
	describe  func(h *Hypothesis, sc Scope) string
	recommend func(h *Hypothesis, sc Scope, r *recommender)
}

// Gathered is the evidence an investigation gathered, as mechanisms see
// it.
type Gathered struct {
	K8s     K8sEvidence
	Logs    []LogSet
	Metrics []MetricSet
	Changes []evidence.Change
	// Earlier are the changes of the month before the window: never
	// triggers, but what they say of how things are wired and set (a
	// client's reads moved to a replica, a database setting relaxed).
	Earlier []evidence.Change
	// Commands are the outputs of commands handed over in terminal
	// transcripts that are not read into objects (kubectl drain, exec
	// output, auth can-i, gets of kinds not read): read as they are by the
	// mechanisms that know a command.
	Commands []evidence.CommandOutput
	// JobDeletes are the deletes of Jobs an API server's audit log
	// recorded: who deleted which Job, when (jobdeleted.go).
	JobDeletes []jobDelete
	// WAFBlocks are the lines of a firewall's log that record a blocked
	// request (wafblocked.go).
	WAFBlocks []evidence.LogLine
	// RejectedReloads are the lines of pod logs from before the window in
	// which a server rejected a new configuration and kept its old one
	// (rejectedconfig.go): the rejection may be days older than what it
	// leaves unapplied.
	RejectedReloads []evidence.LogLine
	// HostCommands are the commands changing cluster objects (kubectl
	// patch, cordon, label, ...) that host logs record, from the month
	// before the window to its end (hostcommands.go).
	HostCommands []evidence.LogLine
	Window       Window
	Scope        Scope
}

// recommender collects recommendations.
type recommender struct {
	h    *Hypothesis
	recs []finding.Recommendation
}

func (r *recommender) add(priority, action string) {
	r.recs = append(r.recs, finding.Recommendation{Priority: priority, Action: action})
}

func (r *recommender) high(format string, a ...any) {
	r.add(finding.PriorityHigh, fmt.Sprintf(format, a...))
}
func (r *recommender) med(format string, a ...any) {
	r.add(finding.PriorityMedium, fmt.Sprintf(format, a...))
}
func (r *recommender) low(format string, a ...any) {
	r.add(finding.PriorityLow, fmt.Sprintf(format, a...))
}

// rollback recommends rolling back the deploy that triggered the cause,
// if one did.
func (r *recommender) rollback() {
	if c := r.h.Trigger; c != nil && c.Kind == KindDeploy {
		r.add(finding.PriorityHigh, rollbackAction(c))
	}
}

// recommendGeneric is the playbook of a cause with no actions of its own:
// roll back the deploy that triggered it, mitigate, investigate, alert.
func recommendGeneric(h *Hypothesis, r *recommender) {
	s := h.Subject
	r.rollback()
	r.high("Mitigate %s: restart or roll back %s", infoOf(h.Kind).label, orWord(s, "the service"))
	if h.Kind == KindCrashLoop || h.Kind == KindAppCrash {
		r.med("Fix the crash of %s from its last log lines and exit code", s)
	} else {
		r.add(finding.PriorityMedium, "Investigate "+h.top().Summary)
	}
	r.add(finding.PriorityLow, "Alert on this failure mode")
}

// strictTrigger reports whether only a change that fits h's mechanism
// triggers h (strictTriggers, or strictFor of h).
func strictTrigger(h *Hypothesis) bool {
	m := mechanismOf(h.Kind)
	return m != nil && (m.strictTriggers || m.strictFor != nil && m.strictFor(h))
}

// mechanismIndex maps a kind to its mechanism.
// (Filled in init: mechanisms' functions refer back to the index.)
var mechanismIndex = map[Kind]*mechanism{}

// crashReaders are the mechanisms with a fromCrash hook, in list order.
var crashReaders []*mechanism

func init() {
	for _, x := range mechanisms {
		if mechanismIndex[x.kind] != nil {
			panic("analyst: two mechanisms for kind " + string(x.kind))
		}
		mechanismIndex[x.kind] = x
		if x.fromCrash != nil {
			crashReaders = append(crashReaders, x)
		}
	}
}

// mechanismOf returns the mechanism of kind k, nil when k is still
// described by the playbook's switches.
func mechanismOf(k Kind) *mechanism { return mechanismIndex[k] }

// lineRule is a mechanism's log rule, for the ordered logRules list.
func lineRule(m *mechanism) logRule {
	return logRule{kind: m.kind, re: m.lines, weight: m.lineWeight, label: m.label}
}

// detectMechanisms runs every mechanism's detector over the evidence.
func detectMechanisms(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, m := range mechanisms {
		if m.detect != nil {
			out = append(out, m.detect(ev, found)...)
		}
	}
	return out
}

// crashLogCauses finds, in the log of each crashed container (a crash
// loop or a container that exited with an error), the first of the last
// lines that m's log rule matches, and turns it into a finding of m's kind
// on the crash's subject: the crash is the symptom, the line its cause.
// facts adds what the line (and the lines after it) say.
func crashLogCauses(ev *Gathered, found []Finding, kind Kind, facts func(f *Finding, lines []evidence.LogLine, i int)) []Finding {
	m := mechanismOf(kind)
	var out []Finding
	crashLines(ev, found, func(c Finding, pod string, lines []evidence.LogLine, i int) bool {
		if !matchLine(m.lines, lines[i].Text) {
			return false
		}
		f := crashLineFinding(c, pod, m.kind, m.lineWeight, lines[i].Text, ReadableLine(lines[i].Text))
		f.setFact("init_container", c.fact("init_container"))
		if facts != nil {
			facts(&f, lines, i)
		}
		f.Summary = fmt.Sprintf("%s exits: %s", crashedObject(c, pod), truncate(ReadableLine(lines[i].Text), 160))
		out = append(out, f)
		return true
	})
	return out
}

// crashLines calls match on each of the last 50 lines of each crashed
// container's log (once per container), with the crash loop's finding
// and its pod, until match takes one.
func crashLines(ev *Gathered, found []Finding, match func(c Finding, pod string, lines []evidence.LogLine, i int) bool) {
	seen := map[string]bool{}
	for _, c := range found {
		if c.Kind != KindCrashLoop {
			continue
		}
		// A container a kubectl get pods row showed has no name: its
		// log is the pod's (key "ns/pod/").
		pod, _, _ := strings.Cut(strings.TrimPrefix(c.Object, "pod "), " ")
		key := pod + "/" + c.fact("container")
		lines := ev.K8s.PreviousLogs[key]
		if seen[key] || len(lines) == 0 {
			continue
		}
		seen[key] = true
		for i := max(0, len(lines)-50); i < len(lines); i++ {
			if match(c, pod, lines, i) {
				break
			}
		}
	}
}

// crashLineFinding is a finding of kind, on crash c's subject, read from
// line of pod's crashed container (shown in its evidence as shown).
func crashLineFinding(c Finding, pod string, kind Kind, weight float64, line, shown string) Finding {
	f := Finding{Kind: kind, Subject: c.Subject, Object: c.Object, Namespace: c.Namespace, Time: c.Time, Severity: SevCritical,
		Weight: weight, Source: SrcKubernetes, Related: c.Related}
	f.Evidence = append([]string{fmt.Sprintf("%s logs before exiting: %s", crashedObject(c, pod), quote(shown, 240))}, c.Evidence...)
	f.setFact("line", line)
	f.setFact("container", c.fact("container"))
	f.setFact("exit_code", c.fact("exit_code"))
	if strings.Contains(c.Summary, "CrashLoopBackOff") || c.fact("restarts") != "" {
		f.setFact("crashloop", "true")
	}
	return f
}

// crashedObject names crash c's pod and container: "pod NS/NAME
// container C".
func crashedObject(c Finding, pod string) string {
	return "pod " + pod + containerWord(c.fact("container"))
}

// containerWord is " container NAME", or nothing when the name is not
// known (a kubectl get pods row).
func containerWord(name string) string {
	if name == "" {
		return ""
	}
	return " container " + name
}

// eventTarget is what an event's finding is about: its subject, object
// and related names, with the event's pod (nil when unknown or not a pod)
// and all pods for mechanisms that look further.
type eventTarget struct {
	Subject, Object string
	Related         []string
	Pod             *corev1.Pod
	Pods            []corev1.Pod
}

// classifyEvent asks the mechanisms, in the order of the list, which one
// an event shows, with the weight of its finding (nil when none does).
func classifyEvent(e *corev1.Event) (*mechanism, float64) {
	for _, m := range mechanisms {
		if m.event == nil {
			continue
		}
		if w, ok := m.event(e); ok {
			return m, w
		}
	}
	return nil, 0
}

// eventKind is the kind of the mechanism an event shows ("" for none).
func eventKind(e *corev1.Event) (Kind, float64) {
	m, w := classifyEvent(e)
	if m == nil {
		return "", 0
	}
	return m.kind, w
}

// linkVictims relates the findings that show a victim of a mechanism's
// findings to them.
func linkVictims(fs []Finding) {
	for i := range fs {
		m := mechanismOf(fs[i].Kind)
		if m == nil || m.victims == nil {
			continue
		}
		for j := range fs {
			if j != i && m.victims(&fs[j]) && !slices.Contains(fs[j].Related, fs[i].Subject) {
				fs[j].Related = append(fs[j].Related, fs[i].Subject)
			}
		}
	}
}
