package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	"github.com/rootcause/rootcause/finding"
	corev1 "k8s.io/api/core/v1"
)

// TestRestartedPods answers "which pods restarted" from the pods kubectl
// lists (RESTARTS "4 (7m ago)") and describes (Last State): the pods whose
// last restart ended within the period the question names are listed,
// older restarts and pods never restarted are not; another question gets
// nothing.
func TestRestartedPods(t *testing.T) {
	now := time.Date(2026, 8, 19, 11, 0, 0, 0, time.UTC)
	res := kubetext.Parse([]byte(`$ kubectl get pods -A
NAMESPACE   NAME                       READY   STATUS    RESTARTS       AGE
shop        cart-api-6b8d7f9c4-k2jxp   1/1     Running   4 (7m ago)     2d19h
shop        cart-api-6b8d7f9c4-p8rtm   1/1     Running   2 (61m ago)    2d19h
shop        web-5f7c9d8b6-2mlxq        1/1     Running   0              5d1h
search      typesense-0                1/1     Running   1 (44m ago)    4d
logging     loki-0                     1/1     Running   3 (26h ago)    12d
`), now)
	var pods []corev1.Pod
	for _, o := range res.Objects {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, *p)
		}
	}
	// A describe's Last State names why it restarted.
	for i := range pods {
		if pods[i].Name == "typesense-0" && len(pods[i].Status.ContainerStatuses) > 0 {
			pods[i].Status.ContainerStatuses[0].LastTerminationState.Terminated.Reason = "OOMKilled"
		}
	}
	w := Window{Start: now.Add(-30 * time.Minute), End: now}
	cases := []struct {
		q         string
		want, not []string
	}{
		{"which pods restarted in the last hour?", []string{"last hour:", "shop/cart-api-6b8d7f9c4-k2jxp (4 restarts", "search/typesense-0 (1 restart", "OOMKilled"}, []string{"p8rtm", "loki", "web-"}},
		{"any pods restarted in the past 2 hours", []string{"last 2 hours", "p8rtm"}, []string{"loki"}},
		{"list pods that restarted in the last 30 minutes", []string{"cart-api-6b8d7f9c4-k2jxp"}, []string{"typesense"}},
		{"which pods restarted", []string{"cart-api-6b8d7f9c4-k2jxp"}, []string{"typesense"}}, // the window's half hour
		{"why does cart-api keep restarting?", nil, nil},
	}
	for _, c := range cases {
		a := askedRestarted(pods, c.q, w)
		if c.want == nil {
			if a != nil {
				t.Errorf("%q: %q, want nothing", c.q, a.sentence)
			}
			continue
		}
		if a == nil {
			t.Errorf("%q: nothing", c.q)
			continue
		}
		for _, s := range c.want {
			if !strings.Contains(a.sentence, s) {
				t.Errorf("%q: %q lacks %q", c.q, a.sentence, s)
			}
		}
		for _, s := range c.not {
			if strings.Contains(a.sentence, s) {
				t.Errorf("%q: %q names %q", c.q, a.sentence, s)
			}
		}
	}
	r := &finding.Result{}
	addRestarted(r, askedRestarted(pods, "which pods restarted in the last hour?", w))
	if len(r.Timeline) != 2 || !containsStr(r.AffectedSystems, "cart-api") || !containsStr(r.AffectedSystems, "typesense") || len(r.RootCause.Evidence) != 2 {
		t.Errorf("result %+v", r)
	}
}
