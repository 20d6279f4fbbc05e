package analyst

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lineCase is one log line and the kind it must be classified as ("" for
// a near miss that must not be classified as the mechanism's kind).
type lineCase struct {
	line string
	want Kind
}

// testLines checks a mechanism's log rule on lines as real programs print
// them, and its near misses.
func testLines(t *testing.T, m *mechanism, cases []lineCase) {
	t.Helper()
	for _, c := range cases {
		got, _ := ClassifyLine(c.line)
		if c.want == "" {
			if got == m.kind {
				t.Errorf("ClassifyLine(%q) = %s, want another kind", c.line, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("ClassifyLine(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

// TestMechanismsComplete checks every mechanism in the list: a kind with
// a prior, a class and a label, a description and recommendations, and its
// own test file named after its own file.
func TestMechanismsComplete(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, m := range mechanisms {
		if m.kind == "" || m.label == "" || m.class == "" || m.describe == nil || m.recommend == nil {
			t.Errorf("mechanism %q: kind, class, label, describe and recommend are required", m.kind)
			continue
		}
		if kinds[m.kind].prior <= 0 && m.kind != "" {
			t.Errorf("mechanism %q has no prior in the kinds table", m.kind)
		}
		if m.lines != nil && m.lineWeight <= 0 {
			t.Errorf("mechanism %q has log lines but no line weight", m.kind)
		}
		if m.lines != nil && !inLogRules(m) {
			t.Errorf("mechanism %q has log lines but no place in logRules", m.kind)
		}
		h := &Hypothesis{Kind: m.kind, Subject: "svc", Onset: t0, Primary: []*Finding{{Kind: m.kind, Subject: "svc", Time: t0, Weight: 0.9}}}
		if d := describe(h, Scope{}); !strings.Contains(d, "svc") && !strings.Contains(d, infoOf(m.kind).label) {
			t.Errorf("mechanism %q: description %q names neither its subject nor its label", m.kind, d)
		}
		if recs := recommend(h, Scope{}); len(recs) == 0 {
			t.Errorf("mechanism %q recommends nothing", m.kind)
		}
		file := strings.ReplaceAll(string(m.kind), "_", "")
		if _, err := os.Stat(file + "_test.go"); err != nil {
			t.Errorf("mechanism %q has no table test %s_test.go", m.kind, file)
		}
	}
}

func inLogRules(m *mechanism) bool {
	for _, r := range logRules {
		if r.kind == m.kind && r.re == m.lines {
			return true
		}
	}
	return false
}

// eventCase is one event as the API server returns it (the object it is
// about, its reason, type and message) and what a mechanism must make of
// it: its kind ("" for a near miss that must not be classified as the
// mechanism's kind) and words its description must contain.
type eventCase struct {
	objKind, obj, reason, typ, msg string
	want                           Kind
	desc                           []string
}

// testEvents runs the event detector over each case and checks the
// mechanism's finding, its description and its recommendations.
func testEvents(t *testing.T, m *mechanism, cases []eventCase) {
	t.Helper()
	end := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-2 * time.Hour), Start: end.Add(-time.Hour), End: end}
	for _, c := range cases {
		ns := "shop"
		if c.objKind == "Node" {
			ns = ""
		}
		at := metav1.NewTime(end.Add(-20 * time.Minute))
		e := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: c.objKind, Namespace: ns, Name: c.obj}, Reason: c.reason, Type: c.typ,
			Message: c.msg, FirstTimestamp: at, LastTimestamp: at, Count: 3}
		var got *Finding
		fs := DetectEvents([]corev1.Event{e}, nil, w)
		for i := range fs {
			if fs[i].Kind == m.kind {
				got = &fs[i]
			}
		}
		if c.want == "" {
			if got != nil {
				t.Errorf("%s %q: classified as %s", c.reason, c.msg, m.kind)
			}
			continue
		}
		if got == nil {
			t.Errorf("%s %q: no %s finding in %v", c.reason, c.msg, c.want, fs)
			continue
		}
		h := &Hypothesis{Kind: got.Kind, Subject: got.Subject, Onset: got.Time, Primary: []*Finding{got}}
		d := describe(h, Scope{Namespace: "shop"})
		for _, s := range c.desc {
			if !strings.Contains(d, s) {
				t.Errorf("%s: description %q lacks %q", c.reason, d, s)
			}
		}
		if len(recommend(h, Scope{Namespace: "shop"})) == 0 {
			t.Errorf("%s: no recommendation", c.reason)
		}
	}
}

// onlyFinding checks a detector's findings: none when subject is "", else
// exactly one, of subject. It returns that one, or nil.
func onlyFinding(t *testing.T, fs []Finding, subject string) *Finding {
	t.Helper()
	if subject == "" {
		if len(fs) != 0 {
			t.Fatalf("want none, got %+v", fs)
		}
		return nil
	}
	if len(fs) != 1 || fs[0].Subject != subject {
		t.Fatalf("findings %+v, want one of %s", fs, subject)
	}
	return &fs[0]
}

// wantDescribed checks that h's description holds each of want.
func wantDescribed(t *testing.T, h *Hypothesis, sc Scope, want ...string) {
	t.Helper()
	d := describe(h, sc)
	for _, w := range want {
		if !strings.Contains(d, w) {
			t.Errorf("description lacks %q: %s", w, d)
		}
	}
}

// wantWritten checks a detector's findings fs against says: none when
// says is nil, else exactly one, whose cause of kind is described with
// each of says and gets a recommendation.
func wantWritten(t *testing.T, kind Kind, fs []Finding, says []string) {
	t.Helper()
	wantWrittenOn(t, kind, "", fs, says)
}

// wantWrittenOn is wantWritten for a finding that must be on subject (on
// any when subject is empty); the cause begins at the finding's time.
func wantWrittenOn(t *testing.T, kind Kind, subject string, fs []Finding, says []string) {
	t.Helper()
	f, ok := oneFinding(t, fs, says != nil)
	if !ok {
		return
	}
	if subject != "" && f.Subject != subject {
		t.Errorf("finding on %q, want %q: %s", f.Subject, subject, f.Summary)
	}
	h := &Hypothesis{Kind: kind, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
	wantDescribed(t, h, Scope{}, says...)
	if recs := recommend(h, Scope{}); len(recs) == 0 {
		t.Errorf("no recommendations")
	}
}
