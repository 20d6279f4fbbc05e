package analyst

import (
	"testing"
	"time"

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
