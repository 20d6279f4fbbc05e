package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestScrapeReason reads why a metrics server cannot serve from several
// real forms of its log.
func TestScrapeReason(t *testing.T) {
	for _, c := range []struct{ line, cause string }{
		{`E1109 14:10:51.433107       1 scraper.go:149] "Failed to scrape node" err="Get \"https://10.20.4.17:10250/metrics/resource\": tls: failed to verify certificate: x509: cannot validate certificate for 10.20.4.17 because it doesn't contain any IP SANs" node="ip-10-20-4-17"`, "ip_sans"},
		{`E0412 09:01:13.000101       1 scraper.go:140] "Failed to scrape node" err="Get \"https://10.0.1.7:10250/metrics/resource\": x509: certificate signed by unknown authority" node="node-1"`, "unknown_ca"},
		{`E0412 09:01:13.000101       1 scraper.go:140] "Failed to scrape node" err="Get \"https://10.0.1.7:10250/metrics/resource\": dial tcp 10.0.1.7:10250: i/o timeout" node="node-1"`, "network"},
		{`E0412 09:01:13.000101       1 scraper.go:140] "Failed to scrape node" err="request failed, status: \"403 Forbidden\"" node="node-1"`, "denied"},
		{`E0412 09:01:13.000101       1 manager.go:111] unable to fully scrape metrics: unable to fully scrape metrics from node node-1: unable to fetch metrics from node node-1: request failed - "401 Unauthorized"`, "denied"},
		{`I1109 14:10:58.102314       1 server.go:191] "Failed probe" probe="metric-storage-ready" err="no metrics to serve"`, ""},
		{`I1109 14:10:58.102314       1 serving.go:374] Generated self-signed cert (/tmp/apiserver.crt, /tmp/apiserver.key)`, ""},
	} {
		_, cause, _ := scrapeReason(&LogSet{Templates: minedSet("metrics-server", false, 0, c.line).Templates})
		if cause != c.cause {
			t.Errorf("%q: cause %q, want %q", c.line, cause, c.cause)
		}
	}
}

func TestAPIServiceRow(t *testing.T) {
	for _, c := range []struct{ row, svc, state string }{
		{`v1beta1.metrics.k8s.io   kube-system/metrics-server   False (MissingEndpoints)   511d`, "metrics-server", "False (MissingEndpoints)"},
		{`v1beta1.metrics.k8s.io   kube-system/metrics-server   False (FailedDiscoveryCheck)   20d`, "metrics-server", "False (FailedDiscoveryCheck)"},
		{`v1beta1.custom.metrics.k8s.io   monitoring/prometheus-adapter   False (ServiceNotFound)   3d`, "prometheus-adapter", "False (ServiceNotFound)"},
		{`v1beta1.metrics.k8s.io   kube-system/metrics-server   True   511d`, "", ""},
		{`v1.apps   Local   True   511d`, "", ""},
	} {
		svc, state := "", ""
		if m := apiServiceRowRE.FindStringSubmatch(c.row); m != nil {
			svc, state = m[3], strings.Join(strings.Fields(m[4]), " ")
		}
		if svc != c.svc || state != c.state {
			t.Errorf("%q: %q %q", c.row, svc, state)
		}
	}
}

// TestDetectMetricsAPI follows blind autoscalers to the metrics server
// behind the API, its log and its release's values; without its log the
// finding only states the API down.
func TestDetectMetricsAPI(t *testing.T) {
	hpaEvent := corev1.Event{Reason: "FailedGetResourceMetric", Count: 192, Type: "Warning",
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Namespace: "search", Name: "search-api"},
		FirstTimestamp: metav1.NewTime(win.Start.Add(5 * 60e9)), LastTimestamp: metav1.NewTime(win.End),
		Message: "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server is currently unable to handle the request (get pods.metrics.k8s.io)"}
	top := evidence.CommandOutput{Command: "kubectl top pod -n search", Lines: []string{"error: Metrics API not available"}}
	row := evidence.CommandOutput{Command: "kubectl get apiservice v1beta1.metrics.k8s.io", Lines: []string{"NAME                     SERVICE                      AVAILABLE                  AGE", "v1beta1.metrics.k8s.io   kube-system/metrics-server   False (MissingEndpoints)   511d"}}
	rev6 := evidence.CommandOutput{Command: "helm get values metrics-server -n kube-system --revision 6", Lines: []string{"USER-SUPPLIED VALUES:", "args:", "- --kubelet-insecure-tls", "- --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname"}}
	rev7 := evidence.CommandOutput{Command: "helm get values metrics-server -n kube-system --revision 7", Lines: []string{"USER-SUPPLIED VALUES:", "args:", "- --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname"}}
	log := minedSet("metrics-server", false, 0, `E1109 14:10:51.433107       1 scraper.go:149] "Failed to scrape node" err="Get \"https://10.20.4.17:10250/metrics/resource\": tls: failed to verify certificate: x509: cannot validate certificate for 10.20.4.17 because it doesn't contain any IP SANs" node="ip-10-20-4-17"`)
	healthyLog := minedSet("search-api", false, 0, `{"level":"INFO","msg":"request","status":200}`)
	for _, c := range []struct {
		name      string
		g         Gathered
		subject   string
		cause     string
		flag      string
		stateOnly bool
	}{
		{"events, APIService, log and values", Gathered{K8s: K8sEvidence{Events: []corev1.Event{hpaEvent}}, Commands: []evidence.CommandOutput{top, row, rev6, rev7}, Logs: []LogSet{log}, Window: win}, "metrics-server", "ip_sans", "--kubelet-insecure-tls", false},
		{"kubectl top and the server's log", Gathered{Commands: []evidence.CommandOutput{top}, Logs: []LogSet{log, healthyLog}, Window: win}, "metrics-server", "ip_sans", "", false},
		{"the APIService only", Gathered{K8s: K8sEvidence{Events: []corev1.Event{hpaEvent}}, Commands: []evidence.CommandOutput{row}, Window: win}, "metrics-server", "", "", true},
		{"blind autoscaler, nothing of the server", Gathered{K8s: K8sEvidence{Events: []corev1.Event{hpaEvent}}, Logs: []LogSet{healthyLog}, Window: win}, "", "", "", false},
		{"nothing says the API is down", Gathered{Logs: []LogSet{log}, Window: win}, "", "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := onlyFinding(t, detectMetricsAPI(&c.g, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("cause") != c.cause || f.fact("flag") != c.flag || (f.fact("state_only") != "") != c.stateOnly {
				t.Errorf("facts %v", f.Facts)
			}
			h := &Hypothesis{Kind: KindMetricsAPI, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "metrics-server", "metrics")
			if c.cause != "" {
				wantDescribed(t, h, Scope{}, "x509")
			}
			if !metricsAPI.related(h, &Finding{Kind: KindHPABlind, Subject: "search-api"}) || metricsAPI.related(h, &Finding{Kind: KindTLS, Subject: "billing"}) {
				t.Error("related: a blind autoscaler is, another service's TLS failure is not")
			}
		})
	}
}
