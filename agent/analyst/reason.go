package analyst

import (
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/finding"
)

// Scope is what the investigation is about.
type Scope struct {
	Message     string
	Service     string
	Namespace   string
	Environment string
	Hint        string
	// Alert is the alert the question comes from (its name or text).
	Alert  string
	Window Window
	// Known holds the names of the objects the evidence shows (workloads,
	// services, nodes, log sources, change and metric subjects); when set,
	// affected_systems holds only these and host-like names.
	Known map[string]bool
	// Nodes holds the names of the cluster's nodes.
	Nodes map[string]bool
	// Components maps a workload named after its Helm release
	// ("kube-prometheus-stack-kube-state-metrics") to the component it
	// runs, its app.kubernetes.io/name ("kube-state-metrics"): the name
	// people know the system by (componentNames).
	Components map[string]string
	// Releases maps a workload named after its Helm release
	// ("superset-postgresql") to that release, its
	// app.kubernetes.io/instance ("superset"): what people installed, and
	// what they ask about when one of its parts fails (releaseNames).
	Releases map[string]string
	// Restarts says, for a healthy answer, that the subject's restarts
	// all ended before the window (oldRestarts), or is empty.
	Restarts string
	// Removed says that a Job of the question's subjects was deleted by
	// its TTL after it finished (removedJobs), or is empty.
	Removed string
	// Restarted lists the pods that restarted within the period a
	// question asking for them names (restartedasked.go), or is nil.
	Restarted *restartedAnswer
}

// wellKnownDeps are dependency names the analyst derives from ports and
// client libraries: real systems even without an object of that name.
var wellKnownDeps = map[string]bool{"postgresql": true, "mysql": true, "redis": true, "kafka": true, "mongodb": true, "memcached": true,
	"rabbitmq": true, "elasticsearch": true, "coredns": true, "kube-dns": true}

var (
	pgLineRE    = regexp.MustCompile(`(?i)remaining connection slots|SQLSTATE|\bpq:|PSQLException|postgres|too many clients already|pgbouncer|query_wait_timeout`)
	mysqlLineRE = regexp.MustCompile(`(?i)mysql|ER_CON_COUNT_ERROR|Too many connections|\bERROR 1040\b`)
)

// dbEngineOf names the database engine an error line comes from.
func dbEngineOf(line string) string {
	switch {
	case matchLine(pgLineRE, line):
		return "postgresql"
	case matchLine(mysqlLineRE, line):
		return "mysql"
	}
	return "database"
}

// isSystemName reports whether a name can be listed as an affected system:
// a known object, a host-like name (dotted, with a port, a node), or a
// well-known dependency. Words lifted from error text are not systems.
func isSystemName(s string, sc Scope) bool {
	if len(sc.Known) == 0 || sc.Known[s] || strings.EqualFold(s, sc.Service) {
		return true
	}
	if strings.ContainsAny(s, ".:") || isNodeName(s) || wellKnownDeps[s] || net.ParseIP(s) != nil {
		return true
	}
	for k := range sc.Known {
		// A pod or Job name carries its workload's name.
		if strings.HasPrefix(k, s+"-") || strings.HasPrefix(s, k+"-") {
			return true
		}
	}
	return false
}

// Hypothesis is a candidate root cause: a group of findings of one kind on
// one subject, with the findings that support it and the change that may
// have triggered it.
type Hypothesis struct {
	Kind    Kind
	Subject string
	Primary []*Finding
	Support []*Finding
	Trigger *Finding
	Onset   time.Time
	Score   float64
	// dbLoad is the backing database's load rising behind a saturated
	// cache, when the metrics show it.
	dbLoad *Finding
	// elsewhere is set when the hypothesis concerns none of the question's
	// subjects and was demoted below one that does.
	elsewhere bool
	// aside is set when the hypothesis bears only on a failure the
	// question names beside its complaint (askedaside.go).
	aside bool
	// unasked names the symptom the question asks about when the
	// hypothesis does not show it and was demoted below one that does
	// (askedsymptom.go).
	unasked string
}

func (h *Hypothesis) class() string { return infoOf(h.Kind).class }

func (h *Hypothesis) top() *Finding {
	best := h.Primary[0]
	for _, f := range h.Primary[1:] {
		if f.Weight > best.Weight || f.Weight == best.Weight && len(f.Evidence) > len(best.Evidence) {
			best = f
		}
	}
	return best
}

// fact returns the first non-empty fact among the primary findings.
func (h *Hypothesis) fact(k string) string {
	if v := h.top().fact(k); v != "" {
		return v
	}
	for _, f := range h.Primary {
		if v := f.fact(k); v != "" {
			return v
		}
	}
	return ""
}

// fromCaller reports whether f is of one of the callers the hypothesis
// lists in its "callers" fact: its subject, or the caller it names.
func fromCaller(h *Hypothesis, f *Finding) bool {
	return ofListed(f, h.fact("callers"), ", ")
}

// ofListed reports whether f is of one of the names list holds (split at
// sep): its subject, or the caller it names.
func ofListed(f *Finding, list, sep string) bool {
	for _, c := range strings.Split(list, sep) {
		if c != "" && (f.Subject == c || f.fact("caller") == c) {
			return true
		}
	}
	return false
}

// listedIn relates to a hypothesis the findings of the names it lists in
// its fact (split at sep): the workloads or clients a cause reaches.
func listedIn(fact, sep string) func(h *Hypothesis, f *Finding) bool {
	return func(h *Hypothesis, f *Finding) bool {
		return ofListed(f, h.fact(fact), sep)
	}
}

// uses reports whether f is part of h.
func (h *Hypothesis) uses(f *Finding) bool {
	return slices.Contains(h.Primary, f) || slices.Contains(h.Support, f) || h.Trigger == f
}

// Analysis is the reasoned outcome before it becomes a result.
type Analysis struct {
	Hypotheses []*Hypothesis // ranked, best first
	Findings   []Finding
	Healthy    bool
	// Asked is what a healthy answer speaks for when it is narrower than
	// the question's subjects (a service asked after beside a failure the
	// question names: askedbeside.go).
	Asked []string
}

const (
	triggerNear = 30 * time.Minute // a change this close before onset is a strong suspect
	triggerFar  = 2 * time.Hour    // beyond this, a change is not linked
	healthyBar  = 0.25             // best score under this: no fault found
	// changeBlameFar: a change is blamed on its own (a generic bad
	// change) only for symptoms that begin within this time after it; a
	// specific mechanism may still name an older change as its trigger.
	changeBlameFar = 45 * time.Minute
)

// Reason groups findings into hypotheses and ranks them.
func Reason(findings []Finding, sc Scope) *Analysis {
	a := &Analysis{Findings: findings}
	fs := make([]*Finding, len(findings))
	for i := range findings {
		fs[i] = &findings[i]
		if fs[i].Subject == "" {
			fs[i].Subject = sc.Service
		}
		// A database "dependency" that is a word lifted from the error text
		// ("reserved for non-replication superuser connections") is the
		// database itself.
		if f := fs[i]; f.Kind == KindDatabase && f.fact("dependency") == f.Subject && !isSystemName(f.Subject, sc) {
			f.Subject = orWord(WellKnownDependency(f.fact("line"), ""), dbEngineOf(f.fact("line")))
		}
	}
	relateNamedServices(fs, sc)
	answered := calleeAnswersBadly(fs)
	var changes, symptoms []*Finding
	for _, f := range fs {
		if infoOf(f.Kind).class == classChange {
			changes = append(changes, f)
		} else {
			symptoms = append(symptoms, f)
		}
	}
	// Group symptom and cause findings by kind and subject.
	type key struct {
		kind    Kind
		subject string
	}
	groups := map[key]*Hypothesis{}
	var hs []*Hypothesis
	for _, f := range symptoms {
		k := key{f.Kind, f.Subject}
		h := groups[k]
		if h == nil {
			h = &Hypothesis{Kind: f.Kind, Subject: f.Subject}
			groups[k] = h
			hs = append(hs, h)
		}
		h.Primary = append(h.Primary, f)
		h.Onset = earliest(h.Onset, f.Time)
	}
	// A kubelet's OOM on a workload and an OOM in its logs are one cause.
	for _, h := range hs {
		scoreCause(h, symptoms, changes, sc)
	}
	joinJobOverlaps(hs, symptoms, changes)
	joinCacheVictims(hs, symptoms, sc)
	joinCrashVictims(hs)
	yieldStateOnly(hs)
	yieldRefined(hs)
	// Change hypotheses: a change followed by symptoms on what it changed.
	for _, c := range changes {
		if h := changeHypothesis(c, symptoms, sc); h != nil {
			hs = append(hs, h)
		}
	}
	absorbChanges(hs)
	demoteAnsweredCallers(hs, answered)
	subjectFirst(hs, sc)
	asideLast(hs, sc)
	valuesFirst(hs, sc)
	symptomAsked(hs, sc)
	usageAsked(hs, sc)
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].Score != hs[j].Score {
			return hs[i].Score > hs[j].Score
		}
		return hs[i].Onset.Before(hs[j].Onset)
	})
	// A change absorbed as the trigger of a stronger cause is not its own
	// hypothesis.
	var kept []*Hypothesis
	for _, h := range hs {
		if h.class() == classChange {
			absorbed := false
			for _, k := range kept {
				if k.Trigger == h.Primary[0] {
					absorbed = true
				}
			}
			if absorbed {
				continue
			}
		}
		kept = append(kept, h)
	}
	a.Hypotheses = kept
	a.Healthy = len(kept) == 0 || kept[0].Score < healthyBar || subjectHealthy(current(kept), sc) || askedBesideHealthy(a, current(kept), sc)
	return a
}

// current leaves out the hypotheses under the no-fault bar whose findings
// are all history (a lone readiness failure of a pod ready since): they
// do not say the subject is failing now, so they do not keep a question's
// healthy subject from being answered healthy.
func current(hs []*Hypothesis) []*Hypothesis {
	out := make([]*Hypothesis, 0, len(hs))
	for _, h := range hs {
		if h.Score < healthyBar && len(h.Primary) > 0 && !slices.ContainsFunc(h.Primary, func(f *Finding) bool { return f.fact("resolved") == "" }) {
			continue
		}
		out = append(out, h)
	}
	return out
}

// relevance weighs a hypothesis by how it bears on the service and
// namespace under investigation and on the incident window.
func relevance(h *Hypothesis, sc Scope) float64 {
	r := 1.0
	if sc.Service != "" {
		related := strings.EqualFold(h.Subject, sc.Service)
		for _, f := range append(slices.Clone(h.Primary), h.Support...) {
			if f.relates(sc.Service) || strings.EqualFold(f.fact("caller"), sc.Service) {
				related = true
			}
		}
		if !related {
			r *= 0.8
		} else {
			r *= 1.08
		}
	}
	if sc.Namespace != "" && h.Kind != KindDNSServer {
		outside := true
		for _, f := range h.Primary {
			if f.Namespace == "" || f.Namespace == sc.Namespace {
				outside = false
			}
		}
		if outside {
			r *= 0.8
		}
	}
	// A condition older than the baseline is background, unless it is
	// the current state of its object (a Job that failed and was never
	// re-run successfully).
	if !sc.Window.BaselineStart.IsZero() && !h.Onset.IsZero() && h.Onset.Before(sc.Window.BaselineStart) && h.top().fact("current") == "" {
		r *= 0.7
	}
	return r
}

// supports reports whether f, a finding outside h, is evidence for h: it
// concerns h's subject (or something h's findings relate to), and it is not
// a stronger cause in its own right.
func supports(h *Hypothesis, f *Finding) bool {
	if slices.Contains(h.Primary, f) {
		return false
	}
	if m := mechanismOf(h.Kind); m != nil && m.unrelated != nil && m.unrelated(h, f) {
		return false
	}
	related := f.relates(h.Subject)
	// A caller seeing a failure with no named dependency, and another
	// subject showing the same failure on its own side (metrics, its
	// own logs), are two views of one failure.
	if !related && f.Kind == h.Kind && infoOf(f.Kind).class == classDependency && f.fact("target") == "" && f.Subject != h.Subject {
		own := true
		for _, p := range h.Primary {
			if p.fact("caller") != "" && p.fact("caller") != h.Subject {
				own = false
			}
		}
		related = own
	}
	// The mechanism may know other subjects that bear on it.
	if m := mechanismOf(h.Kind); !related && m != nil && m.related != nil && m.related(h, f) {
		related = true
	}
	if !related {
		for _, p := range h.Primary {
			if slices.Contains(p.Related, f.Subject) && f.Subject != "" {
				related = true
				break
			}
		}
	}
	if !related {
		return false
	}
	fi, hi := infoOf(f.Kind), infoOf(h.Kind)
	// A finding h's mechanism explains one hop further (refines) is its
	// evidence, however strong a cause it would be on its own.
	if m := mechanismOf(h.Kind); m != nil && slices.Contains(m.refines, f.Kind) {
		return true
	}
	if fi.class == classCause && fi.prior > hi.prior {
		return false
	}
	// Memory growing steadily before an OOM kill is how it got there.
	if h.Kind == KindOOMKilled && f.fact("leak_rate") != "" {
		return true
	}
	// Symptoms follow causes; allow for estimated onsets.
	if !h.Onset.IsZero() && !f.Time.IsZero() && f.Time.Before(h.Onset.Add(-15*time.Minute)) && fi.class == classCause {
		return false
	}
	return true
}

func scoreCause(h *Hypothesis, all, changes []*Finding, sc Scope) {
	maxW := 0.0
	for _, f := range h.Primary {
		maxW = math.Max(maxW, f.Weight)
	}
	info := infoOf(h.Kind)
	base := info.prior * maxW
	// Several objects showing the same failure add a little.
	if n := distinctObjects(h.Primary); n > 1 {
		base += math.Min(0.05, 0.02*float64(n-1))
	}
	for _, f := range all {
		if supports(h, f) {
			h.Support = append(h.Support, f)
		}
	}
	sources := map[string]bool{}
	for _, f := range h.Primary {
		sources[f.Source] = true
	}
	extra := 0
	for _, f := range h.Support {
		if !sources[f.Source] {
			sources[f.Source] = true
			extra++
		}
	}
	bonus := math.Min(0.18, 0.07*float64(extra)+0.01*float64(len(h.Support)))
	// The change that preceded the onset on the same subject.
	if info.class != classSymptom {
		h.Trigger = nearestChange(h, changes)
	}
	tb := 0.0
	if h.Trigger != nil {
		if h.Onset.Sub(h.Trigger.Time) <= triggerNear {
			tb = 0.1
		} else {
			tb = 0.04
		}
	}
	// A few log lines are noise: neither timing nor corroboration
	// makes them a root cause.
	if !slices.ContainsFunc(h.Primary, substantial) {
		tb, bonus = 0, bonus/2
	}
	h.Score = math.Min(0.97, base*relevance(h, sc)+bonus+tb)
}

func distinctObjects(fs []*Finding) int {
	seen := map[string]bool{}
	for _, f := range fs {
		seen[f.Object] = true
	}
	return len(seen)
}

// changeText is what a change says of itself, lower-cased.
func changeText(c *Finding) string {
	return strings.ToLower(c.fact("description") + " " + c.Summary)
}

// changeSays is a fitsChange hook: a change fits when what it says of
// itself (changeText) matches re.
func changeSays(re *regexp.Regexp) func(*Hypothesis, *Finding) bool {
	return func(_ *Hypothesis, c *Finding) bool {
		return matchLine(re, changeText(c))
	}
}

// networkChangeFits reports whether a change touches the network path
// (DNS, service, ingress, network policy...) rather than the code.
func networkChangeFits(c *Finding) bool {
	return c.Kind != KindDeploy && c.Kind != KindFeatureFlag && matchLine(networkChangeRE, changeText(c))
}

// fitsMechanism reports whether a change is of the kind that produces h's
// mechanism.
func fitsMechanism(h *Hypothesis, c *Finding) bool {
	if m := mechanismOf(h.Kind); m != nil {
		return m.fitsChange != nil && m.fitsChange(h, c)
	}
	return false
}

var cacheChangeRE = regexp.MustCompile(`(?i)\bcache|payload|\bttl\b|maxmemory|eviction|redis|memcached`)

var networkChangeRE = regexp.MustCompile(`(?i)networkpolic|network polic|firewall|security group|egress|ingress rule|\bacl\b|\bcidr\b|calico|cilium|route table|peering`)

func changeTouches(c *Finding, h *Hypothesis) bool {
	if c.Subject == "*" || c.Subject == h.Subject {
		return true
	}
	// A network change (a NetworkPolicy, a firewall rule) can cut any
	// connection made shortly after it, whoever it names.
	if fitsMechanism(h, c) && (c.Kind == KindInfraChange || c.Kind == KindConfigChange) && !h.Onset.IsZero() && h.Onset.Sub(c.Time) <= triggerNear {
		return true
	}
	// A change that says it alters what goes into a cache (payloads,
	// TTLs, maxmemory) can fill it, whichever service made it.
	if h.Kind == KindCacheFull && fitsMechanism(h, c) && !h.Onset.IsZero() && h.Onset.Sub(c.Time) <= triggerNear {
		return true
	}
	// A cache that filled slowly for hours before it evicted is linked
	// to a change just before its memory began to climb.
	if h.Kind == KindCacheFull && fitsMechanism(h, c) {
		if t, err := time.Parse(time.RFC3339, h.fact("filling_since")); err == nil {
			if d := t.Sub(c.Time); d >= -5*time.Minute && d <= triggerNear {
				return true
			}
		}
	}
	for _, f := range h.Primary {
		if f.relates(c.Subject) || f.fact("caller") == c.Subject {
			return true
		}
		// A change applied to a namespace applies to what runs in it.
		if f.Namespace != "" && f.Namespace == c.Subject {
			return true
		}
	}
	return false
}

// changeHypothesis links a change to the symptoms that followed it on the
// same subject within triggerFar; nil when nothing followed.
func changeHypothesis(c *Finding, symptoms []*Finding, sc Scope) *Hypothesis {
	h := &Hypothesis{Kind: c.Kind, Subject: c.Subject, Primary: []*Finding{c}, Onset: c.Time}
	var first time.Time
	sources := map[string]bool{}
	for _, f := range symptoms {
		if !(c.Subject == "*" || f.relates(c.Subject) || f.fact("caller") == c.Subject) {
			continue
		}
		// A caller's errors that report its callee's server errors are
		// the callee's failure: a change to the caller did not cause it.
		if calleeAnswered(f) && f.fact("callee") != c.Subject {
			continue
		}
		d := f.Time.Sub(c.Time)
		if f.Time.IsZero() || d < -2*time.Minute || d > changeBlameFar {
			continue
		}
		// A deploy is not blamed on a handful of log lines or on a
		// problem that has since resolved.
		if !substantial(f) {
			continue
		}
		h.Support = append(h.Support, f)
		sources[f.Source] = true
		first = earliest(first, f.Time)
	}
	if len(h.Support) == 0 {
		return nil
	}
	prior := infoOf(c.Kind).prior
	if c.fact("restart") != "" || scalingOnly(c) {
		prior = 0.2 // a restart or a replica count ships nothing new
	}
	score := prior + math.Min(0.3, 0.1*float64(len(sources)))
	switch d := first.Sub(c.Time); {
	case d <= 15*time.Minute:
		score += 0.15
	case d <= triggerNear:
		score += 0.1
	default:
		score += 0.03
	}
	if c.Subject == "*" {
		score -= 0.1
	}
	// Log lines alone, with no state or metric symptom, are weak grounds.
	if len(sources) == 1 && (sources[SrcLogs] || sources[SrcCloudWatch]) {
		score *= 0.8
	}
	// A deploy cannot explain failures of callers it did not touch: a
	// dependency failing for several callers is shared.
	score *= coverage(c, h.Support)
	maxW := 0.0
	for _, f := range h.Support {
		maxW = math.Max(maxW, f.Weight)
	}
	h.Score = math.Min(0.95, score*(0.7+0.3*maxW)*relevance(h, sc))
	return h
}

var (
	scalingChangeRE = regexp.MustCompile(`(?i)\b(min|max)?_?replicas\b|\bscal(e|ed|ing) (out|up|in|down)\b|\bhpa\b`)
	toZeroRE        = regexp.MustCompile(`(?i)(->|→|\bto)\s*0\b|\bzero\b`)
	shipsRE         = regexp.MustCompile(`(?i)\bimage\b|\bversion\b|\brelease\b|\bv?\d+\.\d+\.\d+\b|\bflag\b|\bconfig(map)?\b|\benv\b|\blimit|\brequest`)
)

// scalingOnly reports whether a change only sets how many replicas run (a
// replica count, an autoscaler's bounds) and ships no code or settings:
// more of the same pods. Scaling to zero is not only scaling.
func scalingOnly(c *Finding) bool {
	d := c.fact("description") + " " + c.Summary
	return c.fact("image") == "" && matchLine(scalingChangeRE, d) && !matchLine(toZeroRE, d) && !matchLine(shipsRE, strings.ReplaceAll(d, "config change", ""))
}

// substantial reports whether a finding is more than noise: log findings
// need at least five lines, event findings must not have resolved.
func substantial(f *Finding) bool {
	if f.fact("resolved") != "" {
		return false
	}
	// A probe failing once or twice while a pod starts (a rollout's
	// readiness blip) is not a failure: it must persist.
	if f.Source == SrcEvents && (f.Kind == KindProbeFailure || f.Kind == KindLivenessKill) {
		var n int
		fmt.Sscan(f.fact("count"), &n)
		if n > 0 && n < 3 {
			return false
		}
	}
	if f.Source == SrcLogs || f.Source == SrcCloudWatch {
		var n int
		fmt.Sscan(f.fact("lines"), &n)
		return n == 0 || n >= 5
	}
	return true
}

// coverage is the share of the services failing on the change's
// dependency failures that the change touched (1 when none are shared).
func coverage(c *Finding, support []*Finding) float64 {
	if c.Subject == "*" {
		return 1
	}
	callers := map[string]bool{}
	for _, f := range support {
		if infoOf(f.Kind).class != classDependency {
			continue
		}
		if cl := f.fact("caller"); cl != "" {
			callers[cl] = true
		}
		for _, r := range f.Related {
			if !isNodeName(r) {
				callers[r] = true
			}
		}
	}
	if len(callers) <= 1 {
		return 1
	}
	covered := 0
	for cl := range callers {
		if cl == c.Subject {
			covered++
		}
	}
	return max(0.35, float64(covered)/float64(len(callers)))
}

// confidence calibrates a percentage from the winner and the runner-up.
func confidence(a *Analysis) float64 {
	if a.Healthy {
		best := 0.0
		if len(a.Hypotheses) > 0 {
			best = a.Hypotheses[0].Score
		}
		return math.Round(math.Min(20, 5+best*40))
	}
	w := a.Hypotheses[0]
	c := w.Score * 100
	for _, h := range a.Hypotheses[1:] {
		if explainedBy(h, w) {
			continue
		}
		// A rival of nearly equal strength makes the winner less certain,
		// the more so the closer it is.
		switch r := h.Score / w.Score; {
		case r >= 0.95:
			c -= 15
		case r > 0.85:
			c -= 10
		case r > 0.75:
			c -= 5
		}
		break
	}
	// A change blamed without a mechanism that explains how it fails is
	// a correlation in time: it stays below the confidence of a
	// diagnosed mechanism.
	if w.class() == classChange {
		c = math.Min(c, 60)
	}
	// A root that only restates a failure state (a Job failed, a claim
	// not provisioned) with no reason read behind it is one hop short.
	if w.fact("state_only") == "true" {
		c = math.Min(c, 70)
	}
	switch {
	case w.class() == classSymptom:
		// A symptom is what failed, not why: no mechanism explains it.
		c = math.Min(c, 65)
	case w.class() == classDependency && !seenDirectly(w):
		// Only callers' reports of a failing dependency (their timeouts,
		// refused or reset connections): one hop short of the root, as
		// many causes on the dependency's side look the same to them.
		c = math.Min(c, 70)
	}
	return math.Round(math.Max(21, math.Min(95, c)))
}

// seenDirectly reports whether some evidence of h shows its subject
// itself (its own state, logs or metrics), not only callers' reports of
// it.
func seenDirectly(h *Hypothesis) bool {
	for _, f := range append(slices.Clone(h.Primary), h.Support...) {
		if !strings.EqualFold(f.Subject, h.Subject) {
			continue
		}
		if c := f.fact("caller"); c == "" || strings.EqualFold(c, f.Subject) {
			return true
		}
	}
	return false
}

// explainedBy reports whether every primary finding of h is part of w.
func explainedBy(h, w *Hypothesis) bool {
	for _, f := range h.Primary {
		if !w.uses(f) {
			return false
		}
	}
	return true
}

// Build turns an analysis into the result.
func Build(a *Analysis, sc Scope, gaps []string, checked string) *finding.Result {
	r := &finding.Result{DataGaps: gaps}
	conf := confidence(a)
	if a.Healthy {
		r.Verdict = finding.VerdictHealthy
		what := "the system"
		if subj := sc.Subjects(); len(subj) > 0 {
			what = strings.Join(subj, ", ")
		}
		if len(a.Asked) > 0 {
			what = strings.Join(a.Asked, ", ")
		}
		r.Summary = fmt.Sprintf("No fault found in %s: %s showed nothing abnormal in the incident window.", what, checked)
		r.RootCause = finding.RootCause{Description: fmt.Sprintf("No fault found: %s looks healthy — no failing pods, error surges, metric anomalies or risky changes point to a root cause for it (%s).", what, checked),
			Confidence: conf, Evidence: []string{}}
		r.RootCause.Evidence = append(r.RootCause.Evidence, "checked: "+checked)
		var nearby, nearbyWhy, nearbySystems []string
		for _, h := range a.Hypotheses {
			reason := fmt.Sprintf("weak or unrelated signal (score %.2f): %s", h.Score, h.top().Summary)
			if h.elsewhere {
				reason = fmt.Sprintf("a failure elsewhere that does not bear on %s (score %.2f): %s", what, h.Score, h.top().Summary)
				nearby = append(nearby, hypothesisLabel(h))
				// The description says why each failed, in its own words
				// (the error a failed Job's pod ended on), the first two of
				// them: one hop further than the kind, and what an alert
				// named in the question may be about.
				why := ""
				if l := h.fact("line"); l != "" && len(nearby) <= 2 {
					why = " (" + quote(clipMiddle(ReadableLine(l), 160), 170) + ")"
				}
				nearbyWhy = append(nearbyWhy, hypothesisLabel(h)+why)
				// The workloads failing nearby (those named in the evidence,
				// not a run of one already named nor an outside host) are
				// the systems the incident affects.
				if len(nearby) <= 3 && h.Subject != "" && !strings.ContainsAny(h.Subject, ".:/") && isSystemName(h.Subject, sc) &&
					!slices.ContainsFunc(nearbySystems, func(x string) bool { return x == h.Subject || strings.HasPrefix(h.Subject, x+"-") }) {
					nearbySystems = append(nearbySystems, h.Subject)
				}
				// What was seen nearby is evidence of the answer too: the
				// loud failures are there, and they are not the subject's.
				if len(nearby) <= 3 {
					r.RootCause.Evidence = append(r.RootCause.Evidence, fmt.Sprintf("nearby, not involving %s: %s", what, h.top().Summary))
				}
			}
			r.RuledOut = append(r.RuledOut, finding.RuledOut{Hypothesis: hypothesisLabel(h), Reason: reason})
			if len(r.RuledOut) >= 5 {
				break
			}
		}
		if len(nearby) > 0 {
			r.Summary = fmt.Sprintf("No fault found in %s: %s showed nothing abnormal for it. Other failures nearby, unrelated to %s: %s.", what, checked, what, strings.Join(nearby, "; "))
			r.RootCause.Description = fmt.Sprintf("No fault found in %s: it looks healthy, nothing in the evidence (%s) bears on it. Other failures nearby do not involve %s: %s.", what, checked, what, strings.Join(nearbyWhy, "; "))
		}
		if sc.Restarts != "" {
			r.RootCause.Description += " " + sc.Restarts
			r.RootCause.Evidence = append(r.RootCause.Evidence, sc.Restarts)
		}
		if sc.Removed != "" {
			r.RootCause.Description += " " + sc.Removed
			r.RootCause.Evidence = append(r.RootCause.Evidence, sc.Removed)
		}
		if note, ev := fallbackNote(a, strings.Split(what, ", ")); note != "" {
			r.RootCause.Description += " " + note
			r.RootCause.Evidence = append(r.RootCause.Evidence, ev)
		}
		r.Timeline = timeline(nil, a, sc)
		if sc.Service != "" {
			r.AffectedSystems = []string{sc.Service}
		}
		// Beside the one asked about and found healthy.
		for _, s := range nearbySystems {
			if len(r.AffectedSystems) < 10 && !slices.ContainsFunc(r.AffectedSystems, func(x string) bool { return strings.EqualFold(x, s) }) {
				r.AffectedSystems = append(r.AffectedSystems, s)
			}
		}
		r.Recommendations = []finding.Recommendation{
			{Priority: finding.PriorityLow, Action: "No action needed on the evidence gathered; if the symptom persists, widen the time window or enable the missing data sources listed in data_gaps."},
		}
		if len(nearby) > 0 {
			r.Recommendations = append([]finding.Recommendation{{Priority: finding.PriorityMedium,
				Action: fmt.Sprintf("Handle the failures nearby on their own, apart from %s: %s", what, strings.Join(nearby, "; "))}}, r.Recommendations...)
		}
		// The pods a question asking which restarted names (restartedasked.go).
		addRestarted(r, sc.Restarted)
		r.Normalize()
		return r
	}
	r.Candidates = candidates(a, sc)
	w := a.Hypotheses[0]
	r.Timeline = timeline(w, a, sc)
	ev := evidenceOf(w)
	conf = calibrate(a, conf, answerShape{timeline: len(r.Timeline), evidence: len(ev), question: sc.Message + " " + sc.Alert, subjects: sc.Subjects(), asides: asides(sc)})
	r.RootCause = finding.RootCause{Description: describe(w, sc), Confidence: conf, Evidence: ev}
	// Why a finished Job of the subject is gone (jobttlremoved.go).
	if sc.Removed != "" {
		r.RootCause.Description += " " + sc.Removed
		r.RootCause.Evidence = append(r.RootCause.Evidence, sc.Removed)
	}
	// The release it made fail and roll back (releaserolledback.go).
	if note, e := rolledBackNote(a, w, r.RootCause.Description); note != "" {
		r.RootCause.Description += " " + note
		r.RootCause.Evidence = append(r.RootCause.Evidence, e)
	}
	r.Verdict = finding.VerdictIdentified
	if conf < 55 {
		r.Verdict = finding.VerdictInconclusive
	}
	r.Summary = summary(w, conf, r.Verdict)
	r.AffectedSystems = affected(w, sc)
	// What the question is about, when the evidence shows it failing.
	for _, subj := range sc.Subjects() {
		if len(r.AffectedSystems) >= 10 || slices.ContainsFunc(r.AffectedSystems, func(x string) bool { return strings.EqualFold(x, subj) }) {
			continue
		}
		// A caller the question says cannot reach the root's subject
		// (askedcaller.go).
		if slices.Contains(askedCallers(sc.Message, w), strings.ToLower(subj)) && isSystemName(subj, sc) {
			r.AffectedSystems = append(r.AffectedSystems, subj)
			continue
		}
		for i := range a.Findings {
			f := &a.Findings[i]
			// A caller carrying on without the failing dependency
			// (fallback.go) is degraded: affected when the question
			// names it ("storefront can't reach pricing").
			if f.Severity >= SevWarning && (strings.EqualFold(f.Subject, subj) || strings.EqualFold(f.fact("caller"), subj) || strings.EqualFold(f.fact("fallback_of"), subj)) && isSystemName(subj, sc) {
				r.AffectedSystems = append(r.AffectedSystems, subj)
				break
			}
		}
	}
	r.Recommendations = recommend(w, sc)
	// The suspect the question names, when the root cause is another.
	r.RuledOut = append(r.RuledOut, askedSuspects(a, w, sc)...)
	// Failures of their own, in a question about a whole namespace, are
	// reported beside the root cause, not ruled out (separateproblem.go).
	separate := separateProblems(a, w, sc)
	addSeparateProblems(r, w, separate, sc)
	for _, h := range a.Hypotheses[1:] {
		if slices.Contains(separate, h) {
			continue
		}
		var reason string
		switch {
		case explainedBy(h, w):
			reason = "a consequence of the root cause, not a separate cause: " + h.top().Summary
		case h.aside:
			reason = "a separate failure the question names beside its complaint, not related to it (it does not explain the complaint's symptoms): " + h.top().Summary
		case h.unasked != "":
			reason = fmt.Sprintf("a failure elsewhere that does not show %s (what the question is about): %s", h.unasked, h.top().Summary)
		case h.elsewhere:
			reason = fmt.Sprintf("a failure elsewhere that does not bear on %s (what the question is about): %s", strings.Join(sc.Subjects(), ", "), h.top().Summary)
		case !h.Onset.IsZero() && !w.Onset.IsZero() && h.Onset.After(w.Onset.Add(time.Minute)):
			reason = fmt.Sprintf("began at %s, after the root cause (%s), with weaker evidence (score %.2f vs %.2f)", ts(h.Onset), ts(w.Onset), h.Score, w.Score)
		default:
			reason = fmt.Sprintf("weaker evidence (score %.2f vs %.2f): %s", h.Score, w.Score, h.top().Summary)
		}
		r.RuledOut = append(r.RuledOut, finding.RuledOut{Hypothesis: hypothesisLabel(h), Reason: reason})
		if len(r.RuledOut) >= 6 {
			break
		}
	}
	// The pods a question asking which restarted names (restartedasked.go).
	addRestarted(r, sc.Restarted)
	r.Normalize()
	return r
}

// maxCandidates bounds the ranked hypotheses a result lists.
const maxCandidates = 10

// candidates lists the ranked hypotheses, best first: the root cause, then
// the runners-up, one entry per subject and kind.
func candidates(a *Analysis, sc Scope) []finding.Candidate {
	var out []finding.Candidate
	seen := map[string]bool{}
	for _, h := range a.Hypotheses {
		subj := candidateSubject(h, sc)
		key := subj + "\x00" + string(h.Kind)
		if seen[key] {
			continue
		}
		seen[key] = true
		c := finding.Candidate{Subject: subj, Kind: string(h.Kind), Score: math.Round(h.Score*1000) / 10, Evidence: truncate(h.top().Summary, 200)}
		if !h.Onset.IsZero() {
			c.FirstSeen = ts(h.Onset)
		}
		out = append(out, c)
		if len(out) >= maxCandidates {
			break
		}
	}
	return out
}

// candidateSubject names what a hypothesis blames: its subject, else the
// object its strongest finding is about, else the service asked about.
func candidateSubject(h *Hypothesis, sc Scope) string {
	if h.Subject != "" && h.Subject != "*" {
		return h.Subject
	}
	if o := h.top().Object; o != "" {
		return o
	}
	if h.top().Namespace != "" {
		return "namespace " + h.top().Namespace
	}
	return orWord(sc.Service, "the system")
}

func hypothesisLabel(h *Hypothesis) string {
	if h.Subject == "" || h.Subject == "*" {
		return infoOf(h.Kind).label
	}
	return fmt.Sprintf("%s: %s", h.Subject, infoOf(h.Kind).label)
}

func evidenceOf(w *Hypothesis) []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) && len(out) < 8 {
			out = append(out, s)
		}
	}
	// Up to two strings from each of the first primary findings.
	prim := slices.Clone(w.Primary)
	sort.SliceStable(prim, func(i, j int) bool { return prim[i].Weight > prim[j].Weight })
	for i, f := range prim {
		if i >= 3 {
			break
		}
		for j, e := range f.Evidence {
			if j >= 2 && i > 0 {
				break
			}
			add(e)
		}
	}
	if w.Trigger != nil {
		for _, e := range w.Trigger.Evidence {
			add(e)
		}
	}
	sup := slices.Clone(w.Support)
	sort.SliceStable(sup, func(i, j int) bool {
		return sup[i].Weight*infoOf(sup[i].Kind).prior > sup[j].Weight*infoOf(sup[j].Kind).prior
	})
	for _, f := range sup {
		if len(f.Evidence) > 0 {
			add(f.Evidence[0])
		}
	}
	return out
}

func summary(w *Hypothesis, conf float64, verdict string) string {
	lead := "Root cause"
	if verdict == finding.VerdictInconclusive {
		lead = "Most likely cause (inconclusive)"
	}
	s := fmt.Sprintf("%s: %s", lead, hypothesisLabel(w))
	if !w.Onset.IsZero() {
		s += " since " + ts(w.Onset)
	}
	if w.Trigger != nil {
		s += fmt.Sprintf(", %s after %s", strings.TrimPrefix(minutesAfter(w.Trigger.Time, w.Onset), "within "), w.Trigger.Summary)
	}
	if n := len(w.Support); n > 0 {
		s += fmt.Sprintf("; %s", plural(n, "corroborating signal", "corroborating signals"))
	}
	return s + fmt.Sprintf(" (confidence %.0f%%).", conf)
}

func minutesAfter(a, b time.Time) string {
	d := b.Sub(a).Round(time.Minute)
	if d < time.Minute {
		return "within a minute"
	}
	return fmt.Sprintf("%d min", int(d.Minutes()))
}

func timeline(w *Hypothesis, a *Analysis, sc Scope) []finding.TimelineEvent {
	type item struct {
		t time.Time
		s string
	}
	var items []item
	seen := map[string]bool{}
	add := func(t time.Time, s string) {
		if t.IsZero() || s == "" || seen[s] {
			return
		}
		seen[s] = true
		items = append(items, item{t, s})
	}
	// Changes in the window.
	for i := range a.Findings {
		f := &a.Findings[i]
		if infoOf(f.Kind).class == classChange && (sc.Window.BaselineStart.IsZero() || !f.Time.Before(sc.Window.BaselineStart)) {
			add(f.Time, f.Summary)
		}
	}
	if w != nil {
		for _, f := range w.Primary {
			add(f.Time, f.Summary)
			// The dated event a cause's chain reached before the window
			// (a binding removed, a setting changed days earlier).
			if at, err := time.Parse(time.RFC3339, f.fact("cause_at")); err == nil {
				add(at, f.fact("cause_event"))
			}
		}
		for _, f := range w.Support {
			add(f.Time, f.Summary)
		}
	} else {
		for i := range a.Findings {
			if a.Findings[i].Severity >= SevWarning {
				add(a.Findings[i].Time, a.Findings[i].Summary)
			}
		}
	}
	// A thin timeline: add what the service under investigation and the
	// cause's subject showed.
	if w != nil && len(items) < 2 {
		for i := range a.Findings {
			f := &a.Findings[i]
			if f.Severity >= SevWarning && (f.relates(w.Subject) || sc.Service != "" && f.relates(sc.Service)) {
				add(f.Time, f.Summary)
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].t.Before(items[j].t) })
	if len(items) > 20 {
		items = items[:20]
	}
	out := make([]finding.TimelineEvent, 0, len(items))
	for _, it := range items {
		out = append(out, finding.TimelineEvent{Timestamp: ts(it.t), Event: it.s})
	}
	return out
}

// isNodeName reports whether a name looks like a cloud node's
// (ip-10-0-1-7.ec2.internal, aks-…-vmss…, gke-…).
func isNodeName(s string) bool {
	return strings.HasPrefix(s, "ip-") || strings.HasPrefix(s, "aks-") || strings.HasPrefix(s, "gke-") || strings.Contains(s, ".compute.internal") || strings.HasSuffix(s, ".ec2.internal")
}

func affected(w *Hypothesis, sc Scope) []string {
	var out []string
	// The systems a mechanism clears (the partners a NAT gateway's
	// callers could not reach) are not affected, though their calls fail.
	var cleared []string
	for _, f := range w.Primary {
		cleared = append(cleared, strings.Split(f.fact("not_at_fault"), ", ")...)
	}
	add := func(s string) {
		if s != "" && s != "*" && !slices.Contains(out, s) && isSystemName(s, sc) && !slices.Contains(cleared, s) {
			out = append(out, s)
		}
	}
	// The root's own subject is what failed: affected even when no other
	// evidence names it (a managed node known only from its own log).
	if w.Kind != KindDNS && w.Subject != "" && w.Subject != "*" && !slices.Contains(cleared, w.Subject) {
		out = append(out, w.Subject)
		// The component the root's workload runs, by the name it is
		// known by apart from its release's prefix.
		if c := sc.Components[w.Subject]; c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
		// The CronJob whose scheduled run the root's Job is: what its
		// owner knows it by.
		if cj := cronJobOf(w.Subject); cj != "" && !slices.Contains(out, cj) && !slices.Contains(cleared, cj) {
			out = append(out, cj)
		}
		// The release the root's workload is part of, when the question
		// asks about it ("installed superset ... the postgres pod never
		// starts"): what was installed is what fails.
		if rel := sc.Releases[w.Subject]; rel != "" && !slices.Contains(out, rel) && slices.ContainsFunc(sc.Subjects(), func(s string) bool { return strings.EqualFold(s, rel) }) {
			out = append(out, rel)
		}
	}
	for _, f := range w.Primary {
		add(f.fact("caller"))
		// The host or database instance the failure was seen on.
		add(f.fact("host"))
		// The other systems a mechanism names as involved (the callers
		// waiting on a blocked database, the client blocking it).
		// A mechanism names them from what it read (a producer, a bucket
		// throttled), so they stand even when no other evidence names
		// them as objects.
		for _, x := range strings.Split(f.fact("affected"), ",") {
			if x = strings.TrimSpace(x); x != "" && !slices.Contains(out, x) && !slices.Contains(cleared, x) && x != "*" {
				out = append(out, x)
			}
		}
		if w.Kind == KindNodeNotReady {
			for _, r := range f.Related {
				add(r)
			}
		}
		if f.Kind == KindNoEndpoints {
			for _, r := range f.Related {
				add(r)
			}
		}
	}
	add(sc.Service)
	for _, f := range w.Support {
		// A name that failed to resolve is not itself broken.
		if f.Kind != KindDNS {
			add(f.Subject)
		}
		add(f.fact("caller"))
		// Every caller of a failing dependency is affected.
		if infoOf(f.Kind).class == classDependency {
			for _, r := range f.Related {
				if r != w.Subject && !isNodeName(r) && r != "coredns" && r != "kube-dns" {
					add(r)
				}
			}
		}
	}
	if w.Trigger != nil {
		add(w.Trigger.Subject)
	}
	// The database instance behind a database cause, named by the
	// evidence (attachDatabaseInstances): a system in its own right.
	for _, f := range append(slices.Clone(w.Primary), w.Support...) {
		if i := f.fact("db_instance"); i != "" && !slices.Contains(out, i) {
			out = append(out, i)
		}
		// The component a failing run's error names as answering it with
		// an error status (an external API): a system in its own right.
		if d := f.fact("error_component"); d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if len(out) > 10 {
		out = out[:10]
	}
	return out
}

// absorbChanges lets a specific mechanism take the place of a generic
// "bad change" hypothesis whose symptoms it explains: the change becomes
// the mechanism's trigger (it is then absorbed), or, when the mechanism
// was triggered by another change that fits it better (a NetworkPolicy
// before connection timeouts), the generic one is demoted below it. A
// generic deploy hypothesis wins only when no mechanism explains its
// symptoms.
func absorbChanges(hs []*Hypothesis) {
	for _, c := range hs {
		if c.class() != classChange || len(c.Support) == 0 {
			continue
		}
		// A change that cannot produce a strict mechanism which explains
		// its symptoms is a coincidence in time; so is a change to the
		// callers of a dependency whose own failure (a full disk, a
		// crash) explains what the callers suffer.
		for _, k := range hs {
			if k == c || k.class() != classCause || k.Score < 0.45 {
				continue
			}
			strict := coincidentChange(k, c.Primary[0])
			upstream := k.Subject != c.Subject && !changeTouches(c.Primary[0], k) && explainsVictims(k, c)
			if strict && explainsSupport(k, c) || upstream {
				c.Score = math.Min(c.Score, k.Score*0.8)
			}
		}
		var best *Hypothesis
		for _, k := range hs {
			cl := k.class()
			if k == c || k.Trigger == nil || cl == classChange || cl == classSymptom || k.Score < 0.45 {
				continue
			}
			if k.Trigger != c.Primary[0] && !(fitsMechanism(k, k.Trigger) && k.Trigger.Time.Before(c.Primary[0].Time)) {
				continue
			}
			if !explainsSupport(k, c) {
				continue
			}
			if best == nil || k.Score > best.Score {
				best = k
			}
		}
		if best == nil || best.Score >= c.Score {
			continue
		}
		best.Score = math.Min(0.95, c.Score+0.01)
		if best.Trigger != c.Primary[0] {
			c.Score = math.Min(c.Score, best.Score*0.8)
		}
	}
}

// yieldStateOnly ranks a cause above a hypothesis that only restates a
// failure state (state_only: a Job that failed with no line saying why)
// when the cause is about the same subject and accounts for that state
// (the state's findings support it): the pods of a failed Job preempted,
// its claim never bound. The state is how it showed, the cause why.
func yieldStateOnly(hs []*Hypothesis) {
	for _, s := range hs {
		if s.fact("state_only") != "true" {
			continue
		}
		for _, k := range hs {
			if k == s || k.class() != classCause || k.fact("state_only") == "true" || !strings.EqualFold(k.Subject, s.Subject) || k.Score < 0.45 {
				continue
			}
			// It accounts for the state: the state's findings support it,
			// or it is a more specific cause of that subject (a prior above
			// the state's) seen while the state holds (its evidence may
			// cover only the last run of several failed ones).
			accounts := slices.ContainsFunc(s.Primary, func(f *Finding) bool { return slices.Contains(k.Support, f) })
			if !accounts && infoOf(k.Kind).prior > infoOf(s.Kind).prior && !k.Onset.IsZero() && !k.Onset.Before(s.Onset) {
				accounts = true
			}
			if !accounts {
				continue
			}
			k.Score = math.Max(k.Score, math.Min(0.95, s.Score+0.01))
			s.Score = math.Min(s.Score, k.Score*0.8)
		}
	}
}

// yieldRefined ranks a cause above the hypothesis it refines (its
// mechanism's refines: the same failure explained one hop further) on the
// same subject, when that hypothesis's findings are its evidence.
func yieldRefined(hs []*Hypothesis) {
	for _, k := range hs {
		m := mechanismOf(k.Kind)
		if m == nil || len(m.refines) == 0 {
			continue
		}
		for _, s := range hs {
			if s == k || !slices.Contains(m.refines, s.Kind) ||
				!slices.ContainsFunc(s.Primary, func(f *Finding) bool { return slices.Contains(k.Support, f) }) {
				continue
			}
			if !strings.EqualFold(k.Subject, s.Subject) && (!m.refinesAcross ||
				slices.ContainsFunc(s.Primary, func(f *Finding) bool { return !slices.Contains(k.Support, f) })) {
				continue
			}
			k.Score = math.Max(k.Score, math.Min(0.97, s.Score+0.01))
			s.Score = math.Min(s.Score, k.Score*0.8)
		}
	}
}

// explainsVictims reports whether every symptom a change hypothesis rests
// on is suffered by a caller of k's subject: a service whose calls to it
// fail (k's own dependency findings name the callers).
func explainsVictims(k, c *Hypothesis) bool {
	callers := map[string]bool{}
	for _, f := range append(slices.Clone(k.Primary), k.Support...) {
		if infoOf(f.Kind).class == classDependency && f.Subject == k.Subject && f.fact("caller") != "" {
			callers[f.fact("caller")] = true
		}
	}
	if len(callers) == 0 || len(c.Support) == 0 {
		return false
	}
	for _, f := range c.Support {
		if !callers[f.Subject] && !callers[f.fact("caller")] {
			return false
		}
	}
	return true
}

// explainsSupport reports whether k accounts for most of the symptoms a
// change hypothesis rests on: they are k's own findings, or symptoms on the
// subject k is about.
func explainsSupport(k, c *Hypothesis) bool {
	n := 0
	for _, f := range c.Support {
		if k.uses(f) || f.Subject == k.Subject || f.relates(k.Subject) || f.fact("caller") != "" && f.fact("caller") == k.fact("caller") {
			n++
		}
	}
	return n*2 >= len(c.Support)+1 || n == len(c.Support)
}

var poolWordsRE = regexp.MustCompile(`(?i)pool|connection|too many clients|query_wait_timeout|client_wait_timeout|max_connections|connection slots|pgbouncer`)

// exhaustsPool reports whether h is a shared connection resource running
// out: a database pool or connection-limit error, or a pool/connection
// metric saturating.
func exhaustsPool(h *Hypothesis) bool {
	switch h.Kind {
	case KindDatabase, KindSaturation, KindTimeout:
	default:
		return false
	}
	for _, f := range h.Primary {
		if matchLine(poolWordsRE, f.fact("line")+" "+f.fact("template")+" "+f.fact("metric")) {
			return true
		}
	}
	return false
}

// joinJobOverlaps joins overlapping runs of a CronJob to a shared
// connection resource running out at the same time: the runs hold the
// connections the service's queries then wait for. The change that made
// the runs overlap (a schedule change of the CronJob) becomes the trigger.
func joinJobOverlaps(hs []*Hypothesis, symptoms, changes []*Finding) {
	for _, h := range hs {
		if !exhaustsPool(h) || h.Onset.IsZero() {
			continue
		}
		for _, o := range symptoms {
			if o.Kind != KindJobOverlap || o.Time.After(h.Onset.Add(10*time.Minute)) || h.Onset.Sub(o.Time) > triggerFar {
				continue
			}
			if !slices.Contains(h.Support, o) {
				h.Support = append(h.Support, o)
				h.Score = math.Min(0.97, h.Score+0.06)
			}
			if o.Related == nil || !slices.Contains(o.Related, h.Subject) {
				o.Related = append(o.Related, h.Subject)
			}
			for _, c := range changes {
				d := h.Onset.Sub(c.Time)
				if d < -2*time.Minute || d > triggerFar {
					continue
				}
				if c.Subject == o.Subject || strings.Contains(strings.ToLower(c.fact("description")), strings.ToLower(o.Subject)) {
					if h.Trigger == nil || !fitsMechanism(h, h.Trigger) {
						h.Trigger = c
					}
				}
			}
		}
	}
}

var dbMetricRE = regexp.MustCompile(`(?i)^pg_|postgres|mysql|database|_db_|rds|xact|queries`)

// joinCacheVictims adds to a saturated cache the symptoms that followed
// it: latency or errors of the service under investigation, and the
// backing database's load rising (misses fall through to it).
func joinCacheVictims(hs []*Hypothesis, symptoms []*Finding, sc Scope) {
	for _, h := range hs {
		if h.Kind != KindCacheFull || h.Onset.IsZero() {
			continue
		}
		for _, f := range symptoms {
			if slices.Contains(h.Support, f) || slices.Contains(h.Primary, f) || f.Time.Before(h.Onset.Add(-5*time.Minute)) || f.Time.After(h.Onset.Add(triggerNear)) {
				continue
			}
			victim := (f.Kind == KindLatency || f.Kind == KindErrorRate) && sc.Service != "" && f.Subject == sc.Service
			db := f.Kind == KindSaturation && matchLine(dbMetricRE, f.fact("metric"))
			if !victim && !db {
				continue
			}
			h.Support = append(h.Support, f)
			if db {
				h.dbLoad = f
			}
			h.Score = math.Min(0.97, h.Score+0.03)
		}
		// The service's calls to the database slowing from the cache's
		// onset are its misses falling through: the slow calls are the
		// cache's consequence, one hop short of it.
		for _, d := range hs {
			if d == h || d.Kind != KindSlowCall || d.Score <= h.Score || len(d.Primary) == 0 || d.Onset.Before(h.Onset.Add(-5*time.Minute)) || d.Onset.After(h.Onset.Add(triggerNear)) {
				continue
			}
			if !matchLine(databaseLikeRE, d.Subject) && !strings.EqualFold(d.Subject, h.Subject) {
				continue
			}
			for _, f := range d.Primary {
				if !slices.Contains(h.Support, f) {
					h.Support = append(h.Support, f)
				}
			}
			h.Score = math.Min(0.95, d.Score+0.01)
			d.Score = math.Min(d.Score, h.Score*0.8)
		}
	}
}

var databaseLikeRE = regexp.MustCompile(`(?i)(^|[-_.])(db|database|postgres(ql)?|pg|mysql|mariadb|rds|aurora|sql)([-_.]|\d|$)|AWS/RDS`)

// databaseLike reports whether a finding is about a database (its subject
// or metric names one).
func databaseLike(f *Finding) bool {
	return matchLine(databaseLikeRE, f.Subject) || matchLine(databaseLikeRE, f.fact("metric")) || strings.Contains(f.Summary, "AWS/RDS")
}
