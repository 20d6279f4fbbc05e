package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSpanJoinPods: the pods whose lines were joined while localizeLogs
// read them are not read again; with no span indexed nothing is recorded.
func TestSpanJoinPods(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ts", Name: "price-1"}}
	empty := newSpanJoin()
	empty.read(pod)
	if empty.wasRead(pod) {
		t.Error("a join without spans recorded a pod")
	}
	j := newSpanJoin()
	j.Add(&evidence.Span{SpanID: "00000000000000a1", Service: "price", Name: "PriceController.query", Start: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)})
	if j.wasRead(pod) {
		t.Error("pod read before it was")
	}
	j.read(pod)
	if !j.wasRead(pod) {
		t.Error("pod not recorded as read")
	}
	var none *spanJoin
	if none.wasRead(pod) {
		t.Error("nil join recorded a pod")
	}
}

// TestTemplateError: a message logged first at INFO and then at ERROR is
// one template (its severity a variable) and reads as an error; one only
// ever logged at INFO does not.
func TestTemplateError(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		levels []string
		want   bool
	}{
		{"the level turns to ERROR after the first lines", []string{"INFO", "INFO", "INFO", "ERROR", "ERROR"}, true},
		{"always INFO", []string{"INFO", "INFO", "INFO", "INFO", "INFO"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := analysis.NewMiner(t0, t0.Add(30*time.Minute), t0.Add(40*time.Minute))
			for i, lv := range tc.levels {
				ts := t0.Add(time.Duration(31+i) * time.Minute)
				m.Add(ts, "code-1", ts.Format(time.RFC3339)+" "+lv+" v.s.VerifyCodeServiceImpl#62 [verifyCode][Get image code warn][Code not found]")
				m.Add(ts, "code-1", ts.Format(time.RFC3339)+" INFO v.c.VerifyCodeController#40 [verifyCode][receivedCode: 1234]")
			}
			var got []bool
			for _, tp := range m.Templates() {
				if strings.Contains(tp.Template, "Code not found") {
					got = append(got, templateError(tp))
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("templateError of the Code not found template(s) = %v, want one, %v", got, tc.want)
			}
		})
	}
}
