package analyst

import (
	"math"
	"net"
	"regexp"
	"slices"
	"strings"
)

// The subject of a question comes first. When the question or its context
// names a resource (the service, a workload, a pod, a Job), its own
// failures, and the failures of what it calls, lead; a louder failure
// elsewhere in the namespace is another finding nearby, not the answer.

var nameTokenRE = regexp.MustCompile(`[a-z0-9][a-z0-9.-]*[a-z0-9]`)

// Subjects lists what the question is about: the context's service, and
// the names of known objects the message, hint or alert mention.
func (sc Scope) Subjects() []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(strings.ToLower(sc.Service))
	text := strings.ToLower(sc.Message + " " + sc.Hint)
	for _, tok := range findAllString(nameTokenRE, text, -1) {
		// A name with a dash or a dot, or any name the evidence knows as
		// an object (not ordinary words that happen to match).
		if sc.Known[tok] && (strings.ContainsAny(tok, "-.") || len(tok) >= 4) {
			add(tok)
		}
	}
	return out
}

// bearsOn reports whether h concerns one of names: its subject, the
// object or caller of one of its findings, or the change that triggered
// it.
func bearsOn(h *Hypothesis, names []string) bool {
	for _, n := range names {
		if strings.EqualFold(h.Subject, n) {
			return true
		}
		for _, f := range append(slices.Clone(h.Primary), h.Support...) {
			if f.relates(n) || strings.EqualFold(f.fact("caller"), n) || objectNames(f.Object, n) {
				return true
			}
		}
	}
	return false
}

// objectNames reports whether object ("pod/shop/checkout-7d9f8b6c5-x2k4p")
// names n or something of n's: "/"+n begins a name there. Another
// long-running workload whose name merely begins with n is another object:
// a Deployment's pod ("nats-surveyor-7f8c9d6b4-k2wxj", a ReplicaSet hash
// and a pod suffix, for "nats") or a workload object itself
// ("deployment/shop/checkout-worker" for "checkout"). A Job or a hook
// named after n ("payments-api-smoke-test-gm8vh") stays n's.
func objectNames(object, n string) bool {
	for i := 0; n != ""; {
		j := strings.Index(object[i:], "/"+n)
		if j < 0 {
			return false
		}
		start := i + j + 1
		end := start
		for end < len(object) && isNameByte(object[end]) {
			end++
		}
		if !otherWorkload(object[:start], object[start:end], n) {
			return true
		}
		i = start
	}
	return false
}

// otherWorkload reports whether name, found in an object after prefix,
// is a long-running workload other than n (or one of its pods).
func otherWorkload(prefix, name, n string) bool {
	if name == n || !strings.HasPrefix(name, n+"-") {
		return false
	}
	switch strings.ToLower(strings.TrimSuffix(prefix[:strings.IndexByte(prefix+"/", '/')], "s")) {
	case "deployment", "statefulset", "daemonset", "deploy", "sts", "ds":
		return true
	}
	if m := findSubmatch(rsPodRE, name); m != nil {
		return m[1] != n
	}
	return false
}

// rsPodRE is a Deployment's pod name: its workload, the ReplicaSet's
// template hash and the pod's suffix.
var rsPodRE = regexp.MustCompile(`^(.+)-[a-z0-9]{6,10}-[a-z0-9]{5}$`)

// neutral kinds are never demoted for not naming the subject, and do not
// demote others: localization ranks services against the subject on its
// own, and a node, the cluster DNS or a change applied to everything can
// break the subject without naming it.
func neutral(h *Hypothesis, sc Scope) bool {
	switch h.Kind {
	case KindLocalized, KindNodeNotReady, KindNodePressure, KindDNSServer:
		return true
	}
	// Whatever a node shows (a clock off, its disk full) reaches every pod
	// on it.
	return h.Subject == "*" || h.Subject == "" || isNodeName(h.Subject) || sc.Nodes[h.Subject]
}

// elsewhereState reports whether h is what another known object in the
// cluster shows about itself (its pods failing, its rollout stuck, its
// own log's errors, a change to it): the loud failures a question about
// something else must not be answered with. A failure another caller logs
// about a dependency may concern one the subject calls without saying so,
// and metric findings carry no caller: neither is judged by name.
func elsewhereState(h *Hypothesis, sc Scope) bool {
	if !sc.Known[h.Subject] {
		return false
	}
	for _, f := range h.Primary {
		switch f.Source {
		case SrcKubernetes, SrcEvents, SrcChanges:
		case SrcLogs:
			if c := f.fact("caller"); c == "" || !strings.EqualFold(c, h.Subject) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// subjectFirst demotes hypotheses that do not bear on the question's
// subjects below the best one that does, when that one names a mechanism
// (a cause or a failing dependency, not a bare symptom). What the subject
// calls (the dependencies its related hypotheses name) counts as the
// subject too. Demoted hypotheses are marked elsewhere.
func subjectFirst(hs []*Hypothesis, sc Scope) {
	subjects := sc.Subjects()
	if len(subjects) == 0 {
		return
	}
	names := slices.Clone(subjects)
	for _, h := range hs {
		if !neutral(h, sc) && bearsOn(h, subjects) && h.class() != classChange && !slices.Contains(names, h.Subject) {
			names = append(names, h.Subject)
		}
	}
	best := 0.0
	for _, h := range hs {
		if neutral(h, sc) || !bearsOn(h, names) {
			continue
		}
		// An address nothing in the evidence owns may be anything,
		// the louder failure included.
		if net.ParseIP(DependencyName(h.Subject)) != nil {
			return
		}
		if c := h.class(); (c == classCause || c == classDependency) && slices.ContainsFunc(h.Primary, substantial) {
			best = math.Max(best, h.Score)
		}
	}
	if best < healthyBar {
		return
	}
	for _, h := range hs {
		if neutral(h, sc) || !elsewhereState(h, sc) || bearsOn(h, names) || h.Score < best {
			continue
		}
		h.Score = best * 0.95
		h.elsewhere = true
	}
}

// subjectHealthy reports whether the question's subject, a known object,
// shows nothing at all while the strongest hypothesis concerns something
// else: the answer is then that the subject is healthy, and the other
// failures are findings nearby.
func subjectHealthy(hs []*Hypothesis, sc Scope) bool {
	subjects := sc.Subjects()
	known := false
	for _, s := range subjects {
		known = known || sc.Known[s]
	}
	// Localization read the subject's own latency and errors and found
	// them still while it placed a fault elsewhere, upstream of the
	// subject or apart from it: that fault is a failure nearby, and
	// whatever the subject shows under the no-fault bar is no fault.
	quiet := slices.ContainsFunc(hs, nearbyFault)
	if !known || len(hs) == 0 || hs[0].Score < healthyBar || answersQuestion(hs[0]) || !quiet && (neutral(hs[0], sc) || !elsewhereState(hs[0], sc)) {
		return false
	}
	for _, h := range hs {
		if quiet && (nearbyFault(h) || !neutral(h, sc) && h.Score < healthyBar) {
			continue
		}
		if neutral(h, sc) || bearsOn(h, subjects) {
			return false
		}
	}
	for _, h := range hs {
		h.elsewhere = true
	}
	return true
}

// nearbyFault reports whether h is a fault localized elsewhere while the
// asked service's own signals did not move (see localize).
func nearbyFault(h *Hypothesis) bool {
	return h.Kind == KindLocalized && slices.ContainsFunc(h.Primary, func(f *Finding) bool { return f.fact("nearby") != "" })
}
