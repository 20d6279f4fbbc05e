package analyst

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An object the asked service depends on whose own status says it does not
// work. Controllers of every custom resource report the same way: a status
// condition (Ready, Accepted, ResolvedRefs, Synced, Available False;
// Degraded, Stalled True) with a reason, a message and the time it turned.
// A Gateway API route whose backend in another namespace no ReferenceGrant
// permits (ResolvedRefs False, RefNotPermitted) answers 500 for that rule;
// a cert-manager Certificate not Ready leaves its Secret with the old
// certificate or none; an Argo CD Application Degraded or whose sync
// failed leaves its Deployment at the old revision; a KEDA ScaledObject
// not Ready stops scaling its target; an ExternalSecret not Synced leaves
// its Secret stale. Whatever the kind, the condition dates the failure and
// its message names what broke; the spec names the objects that depend on
// it (a route's backends, a certificate's Secret, a scaler's target, an
// Application's resources). Read from objects of any kind handed over as
// -o yaml|json (files or transcripts), generically.

// KindObjectCondition is an object whose status condition says it does not
// work, and what depends on it.
const KindObjectCondition Kind = "object_condition"

var objectCondition = &mechanism{
	kind:   KindObjectCondition,
	class:  classCause,
	label:  "an object it depends on reports a failing status condition",
	detect: detectObjectConditions,
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind != KindObjectCondition && strings.EqualFold(f.Subject, h.Subject) && f.Kind != KindDeploy && f.Kind != KindConfigChange
	},
	// The change that broke an object names it: its kind or its name.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if c.Kind == KindDeploy {
			return false
		}
		t := changeText(c)
		for _, w := range []string{h.fact("object_kind"), h.fact("object_name")} {
			if w != "" && strings.Contains(t, strings.ToLower(w)) {
				return true
			}
		}
		return false
	},
	strictTriggers: true,
	describe:       describeObjectCondition,
	recommend:      recommendObjectCondition,
}

// detectObjectConditions turns each object's failing condition into a
// finding about what depends on the object.
func detectObjectConditions(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	for i := range ev.K8s.Custom {
		o := &ev.K8s.Custom[i]
		c, ok := worstCondition(o)
		if !ok {
			continue
		}
		if !c.LastTransitionTime.IsZero() && (!ev.Window.recent(c.LastTransitionTime) || c.LastTransitionTime.After(ev.Window.End)) {
			continue // failing since before the baseline: background
		}
		subject, ref := conditionDependent(o, c, ev.Scope)
		ns := o.Namespace
		if ref != nil && ref.Namespace != "" {
			ns = ref.Namespace
		}
		f := Finding{Kind: KindObjectCondition, Subject: subject, Namespace: ns, Object: strings.ToLower(o.Kind) + " " + objPath(o.Namespace, o.Name),
			Source: SrcKubernetes, Severity: SevCritical, Weight: 0.6, Time: c.LastTransitionTime, Related: []string{o.Name}}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		if ref != nil {
			f.Weight = 0.8
		}
		state := fmt.Sprintf("%s %s", c.Type, c.Status)
		if c.Reason != "" && c.Reason != c.Status {
			state += " (" + c.Reason + ")"
		}
		f.setFact("object", o.Ref())
		f.setFact("object_kind", o.Kind)
		f.setFact("object_name", o.Name)
		f.setFact("object_ns", o.Namespace)
		f.setFact("condition", state)
		f.setFact("reason", c.Reason)
		f.setFact("message", c.Message)
		f.setFact("parent", c.Parent)
		if !c.LastTransitionTime.IsZero() {
			f.setFact("since", hm(c.LastTransitionTime))
		}
		line := fmt.Sprintf("%s reports %s", o.Ref(), state)
		if c.Parent != "" {
			line += " for parent " + c.Parent
		}
		if !c.LastTransitionTime.IsZero() {
			line += " since " + ts(c.LastTransitionTime)
		}
		if c.Message != "" {
			line += ": " + quote(c.Message, 240)
		}
		f.Evidence = append(f.Evidence, line)
		if ref != nil {
			f.setFact("dependent", refText(ref))
			f.setFact("field", ref.Field)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s names %s (%s): %s depends on it", o.Ref(), refText(ref), ref.Field, subject))
		}
		if o.Stale() {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: observedGeneration %d behind generation %d, the controller has not applied its latest spec", o.Ref(), o.ObservedGeneration, o.Generation))
		}
		if !o.Deleting.IsZero() && len(o.Finalizers) > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s is being deleted since %s, held by finalizers %s", o.Ref(), ts(o.Deleting), strings.Join(o.Finalizers, ", ")))
		}
		if o.Source != "" {
			f.setFact("source", o.Source)
		}
		f.Summary = fmt.Sprintf("%s: %s", o.Ref(), state)
		if c.Message != "" {
			f.Summary += ": " + quote(c.Message, 160)
		}
		out = append(out, f)
	}
	return out
}

// worstCondition is the failing condition of o that says most: one with a
// message first, then the latest to turn.
func worstCondition(o *evidence.GenericObject) (evidence.ObjectCondition, bool) {
	fails := o.FailingConditions()
	if len(fails) == 0 {
		return evidence.ObjectCondition{}, false
	}
	best := fails[0]
	for _, c := range fails[1:] {
		if best.Message == "" && c.Message != "" || (best.Message == "") == (c.Message == "") && c.LastTransitionTime.After(best.LastTransitionTime) {
			best = c
		}
	}
	return best, true
}

// conditionDependent names what depends on a failing object: the object its
// spec names that the condition's message names too (the backend a route
// cannot resolve), else the asked service among its references, else a
// resource a GitOps object reports unhealthy, else the object itself.
func conditionDependent(o *evidence.GenericObject, c evidence.ObjectCondition, sc Scope) (string, *evidence.ObjectRef) {
	msg := strings.ToLower(c.Message)
	var named []*evidence.ObjectRef
	for i := range o.Refs {
		r := &o.Refs[i]
		if r.Name == o.Name || len(r.Name) < 3 {
			continue
		}
		if nameInText(msg, strings.ToLower(r.Name)) {
			named = append(named, r)
		}
	}
	// The object the message names that is not the route's own parent.
	for _, r := range named {
		if !strings.Contains(r.Field, "parentRef") {
			return r.Name, r
		}
	}
	if len(named) > 0 {
		return named[0].Name, named[0]
	}
	for i := range o.Refs {
		r := &o.Refs[i]
		if sc.Service != "" && strings.EqualFold(r.Name, sc.Service) {
			return r.Name, r
		}
	}
	for i := range o.Refs {
		r := &o.Refs[i]
		if r.Health == "Degraded" || r.Health == "Missing" {
			return r.Name, r
		}
	}
	return o.Name, nil
}

// nameInText reports whether name appears in text as a whole word (not
// inside a longer name).
func nameInText(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		j += i
		before, after := byte(' '), byte(' ')
		if j > 0 {
			before = text[j-1]
		}
		if e := j + len(name); e < len(text) {
			after = text[e]
		}
		if !nameByte(before) && !nameByte(after) {
			return true
		}
		i = j + 1
	}
}

func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '_'
}

func refText(r *evidence.ObjectRef) string {
	s := orWord(r.Kind, "object") + " "
	if r.Namespace != "" {
		s += r.Namespace + "/"
	}
	return s + r.Name
}

func objPath(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func describeObjectCondition(h *Hypothesis, sc Scope) string {
	d := fmt.Sprintf("%s fails through %s, which reports %s", h.Subject, orWord(h.fact("object"), "an object it depends on"), orWord(h.fact("condition"), "a failing condition"))
	if p := h.fact("parent"); p != "" {
		d += " for " + p
	}
	if s := h.fact("since"); s != "" {
		d += " since " + s
	}
	if m := h.fact("message"); m != "" {
		d += ": " + quote(m, 240)
	}
	if dep := h.fact("dependent"); dep != "" {
		d += fmt.Sprintf("; it names %s (%s)", dep, h.fact("field"))
	}
	if h.fact("reason") == "RefNotPermitted" {
		d += fmt.Sprintf(": a reference across namespaces needs a ReferenceGrant in the target's namespace that permits %ss from %s", h.fact("object_kind"), h.fact("object_ns"))
	}
	return d
}

// refNotPermittedRE is the target of a refused cross-namespace reference as
// Gateway API controllers word it ("Service docs/help-center").
var refNotPermittedRE = regexp.MustCompile(`\b([A-Z][A-Za-z]+) ([a-z0-9-]+)/([a-z0-9.-]+)`)

func recommendObjectCondition(h *Hypothesis, sc Scope, r *recommender) {
	obj := h.fact("object")
	switch reason := h.fact("reason"); {
	case reason == "RefNotPermitted":
		target := "the referenced object's namespace"
		if m := findSubmatch(refNotPermittedRE, h.fact("message")); m != nil {
			target = fmt.Sprintf("namespace %s (to: %s %s)", m[2], m[1], m[3])
		}
		r.high("Create a ReferenceGrant in %s that permits %s from namespace %s, or move the backend back into the route's namespace", target, h.fact("object_kind"), h.fact("object_ns"))
	default:
		r.high("Fix what %s's condition %s says%s, then check that the condition turns back", obj, h.fact("condition"), orWord(quotedSuffix(h.fact("message")), ""))
	}
	if t := h.Trigger; t != nil {
		r.high("Or revert the change of %s at %s that broke it", t.Subject, hm(t.Time))
	}
	r.med("Read the object's status and its controller's log: kubectl describe %s %s%s", strings.ToLower(h.fact("object_kind")), h.fact("object_name"), condNSFlag(h.fact("object_ns")))
	r.low("Alert on %s objects whose Ready/Accepted/ResolvedRefs conditions are False", h.fact("object_kind"))
}

func quotedSuffix(m string) string {
	if m == "" {
		return ""
	}
	return " (" + quote(m, 160) + ")"
}

func condNSFlag(ns string) string {
	if ns == "" {
		return ""
	}
	return " -n " + ns
}
