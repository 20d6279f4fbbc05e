package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

const hpaPage = `$ kubectl describe hpa checkout -n shop
Name:                                                  checkout
Namespace:                                             shop
CreationTimestamp:                                     Fri, 16 Jan 2026 09:47:03 +0000
Reference:                                             Deployment/checkout
Metrics:                                               ( current / target )
  resource cpu on pods  (as a percentage of request):  <unknown> / 70%
Min replicas:                                          3
Max replicas:                                          20
Deployment pods:                                       3 current / 3 desired
Events:
  Type     Reason                        Age                  From                       Message
  ----     ------                        ----                 ----                       -------
%s
`

// TestHPABlind: an autoscaler whose CPU utilization is undefined because
// a container has no CPU request does not scale; a few "no metrics
// returned" events while new pods start are noise, and a long run of them
// counts.
func TestHPABlind(t *testing.T) {
	now := time.Date(2026, 8, 19, 14, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-90 * time.Minute), End: now}
	cases := []struct {
		name, events string
		want         []string // nil: no finding
	}{
		{"a sidecar without a cpu request", `  Warning  FailedGetResourceMetric       15s (x371 over 93m)  horizontal-pod-autoscaler  failed to get cpu utilization: missing request for cpu in container cloud-sql-proxy of Pod checkout-85d6f9c7b4-q2w8m
  Warning  FailedComputeMetricsReplicas  15s (x371 over 93m)  horizontal-pod-autoscaler  invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: missing request for cpu in container cloud-sql-proxy of Pod checkout-85d6f9c7b4-q2w8m`,
			[]string{"cannot compute its metric", "does not scale checkout out", "container cloud-sql-proxy has no cpu request"}},
		{"new pods without metrics yet", `  Warning  FailedGetResourceMetric  38m (x4 over 39m)  horizontal-pod-autoscaler  failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API`, nil},
		{"the metrics API down for an hour", `  Warning  FailedGetResourceMetric  20s (x240 over 62m)  horizontal-pod-autoscaler  failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server is currently unable to handle the request (get pods.metrics.k8s.io)`,
			[]string{"cannot compute its metric", "unable to handle the request"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(strings.Replace(hpaPage, "%s", c.events, 1)), now)
			var got []Finding
			for _, f := range DetectEvents(res.Events, nil, w) {
				if f.Kind == KindHPABlind {
					got = append(got, f)
				}
			}
			if c.want == nil {
				if len(got) != 0 {
					t.Fatalf("findings %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Subject != "checkout" {
				t.Fatalf("findings %+v from %d events", got, len(res.Events))
			}
			h := &Hypothesis{Kind: KindHPABlind, Subject: got[0].Subject, Primary: []*Finding{&got[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
