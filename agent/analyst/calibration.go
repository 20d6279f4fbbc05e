package analyst

import "math"

// Calibration: the score ranks hypotheses; the confidence says how sure
// the answer is. An answer whose evidence could as well fit a root one hop
// further (a piece of evidence that was not handed over, or not read) must
// not look certain. The rules below were found by ablation (agent/eval's
// TestAblationCalibration: every scenario run again with one file, or one
// command of a transcript, taken away; the wrong answers that stayed above
// 70 had these traits in common) and each holds an answer at
// calibrationCap at most. They are general: none names a scenario, a
// service or a message.

// calibrationCap is the highest confidence of an answer a rule holds back:
// the bar an unsure answer must not cross.
const calibrationCap = 70

// answerShape is what calibration reads of an answer besides its analysis.
type answerShape struct {
	timeline int // entries of the answer's timeline
	evidence int // evidence lines of the root cause
}

// calibrationRule is one trait of answers that are sure without grounds.
type calibrationRule struct {
	name    string
	applies func(a *Analysis, w *Hypothesis, s answerShape) bool
}

var calibrationRules = []calibrationRule{
	// A fault localized to a service from its own signals moving first
	// says where the fault shows, not by what mechanism: what broke there
	// is one hop further.
	{"localized only", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindLocalized
	}},
	// One moment on the timeline or one line of evidence: nothing before
	// or beside the root bears it out.
	{"thin", func(_ *Analysis, _ *Hypothesis, s answerShape) bool {
		return s.timeline <= 1 || s.evidence <= 1
	}},
	// Read only from events, with nothing from another source: events are
	// the history of objects, and without the objects' current state (or
	// logs, metrics) what they tell may be a state that has passed, or a
	// pointer to another object whose own reason was not read.
	{"events only", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return onlySource(w, SrcEvents)
	}},
	// A limit reached (a container killed at its memory limit, a broker's
	// resource alarm, every worker of a server busy) is a state: the root
	// is what drove use to the limit (a change, growth or a leak, a surge
	// of load, slow work holding the workers). With none of them found,
	// only the consequences of the limit, the answer stops one hop short.
	{"limit without what drove it", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return limitStates[w.Kind] && !drivenBy(w)
	}},
	// A database refusing connections for lack of slots is a limit too:
	// the root is who took the slots (a client's pool, a leak, a surge;
	// databaseslotstaken.go names it) or the change that lowered the
	// limit. Refused clients alone stop one hop short.
	{"connection slots without who took them", func(_ *Analysis, w *Hypothesis, _ answerShape) bool {
		return w.Kind == KindDatabase && slotsRefusedRE.MatchString(w.fact("line")) && w.Trigger == nil
	}},
	// Two or more unrelated hypotheses nearly as strong: the evidence does
	// not single out one root.
	{"competing causes", func(a *Analysis, w *Hypothesis, _ answerShape) bool {
		return rivals(a, w, 0.85) >= 2
	}},
}

// calibrate holds back conf, the confidence of the analysis's winner, when
// a calibration rule applies to the answer. A healthy verdict is left as
// it is (its confidence is low already).
func calibrate(a *Analysis, conf float64, s answerShape) float64 {
	if rule := calibrationRuleOf(a, s); rule != "" {
		return math.Min(conf, calibrationCap)
	}
	return conf
}

// calibrationRuleOf names the first rule that holds the answer back, or "".
func calibrationRuleOf(a *Analysis, s answerShape) string {
	if a == nil || a.Healthy || len(a.Hypotheses) == 0 {
		return ""
	}
	w := a.Hypotheses[0]
	for _, r := range calibrationRules {
		if r.applies(a, w, s) {
			return r.name
		}
	}
	return ""
}

// limitStates are the kinds whose finding is a limit reached, not what
// reached it.
var limitStates = map[Kind]bool{KindOOMKilled: true, KindResourceAlarm: true, KindWorkerPool: true}

// drivers are the kinds of findings that say what drives use up to a
// limit.
var drivers = map[Kind]bool{KindSaturation: true, KindLoadSurge: true, KindBacklog: true, KindConnLeak: true,
	KindCacheFull: true, KindSlowQuery: true}

// drivenBy reports whether h has something that drove it to its limit: a
// change that triggered it, a finding of growth, load or slow work among
// its support, or a growth its own findings state.
func drivenBy(h *Hypothesis) bool {
	if h.Trigger != nil || h.dbLoad != nil {
		return true
	}
	for _, f := range h.Support {
		if drivers[f.Kind] {
			return true
		}
	}
	for _, f := range h.Primary {
		if f.fact("leak_rate") != "" || f.fact("growing") != "" {
			return true
		}
	}
	return false
}

// onlySource reports whether every finding of h, primary and support,
// comes from source src.
func onlySource(h *Hypothesis, src string) bool {
	for _, f := range h.Primary {
		if f.Source != src {
			return false
		}
	}
	for _, f := range h.Support {
		if f.Source != src {
			return false
		}
	}
	return len(h.Primary) > 0
}

// rivals counts the hypotheses after w, not explained by it, whose score is
// at least share of w's.
func rivals(a *Analysis, w *Hypothesis, share float64) int {
	n := 0
	for _, h := range a.Hypotheses {
		if h == w || explainedBy(h, w) || w.Score <= 0 {
			continue
		}
		if h.Score/w.Score >= share {
			n++
		}
	}
	return n
}
