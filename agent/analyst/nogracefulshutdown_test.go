package analyst

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// shutdownEvents is what `kubectl get events` shows of an autoscaler
// scaling fares-api in at 16:22 (18 minutes before the capture).
const shutdownEvents = `$ kubectl get events -n travel
LAST SEEN   TYPE      REASON              OBJECT                              MESSAGE
40m         Normal    SuccessfulRescale   horizontalpodautoscaler/fares-api   New size: 10; reason: cpu resource utilization (percentage of request) above target
18m         Normal    SuccessfulRescale   horizontalpodautoscaler/fares-api   New size: 6; reason: All metrics below target
18m         Normal    ScalingReplicaSet   deployment/fares-api                Scaled down replica set fares-api-7c5d9b8f6 to 6 from 10
18m         Normal    Killing             pod/fares-api-7c5d9b8f6-2gqzn       Stopping container fares-api
18m         Normal    Killing             pod/fares-api-7c5d9b8f6-dq8mv       Stopping container fares-api
`

// shutdownDeploy is fares-api's Deployment; %s is its container's
// lifecycle.
const shutdownDeploy = `$ kubectl get deploy fares-api -n travel -o yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: fares-api
  namespace: travel
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: fares-api
  template:
    metadata:
      labels:
        app.kubernetes.io/name: fares-api
    spec:
      containers:
      - image: registry.example.com/travel/fares-api:4.2.0
        name: fares-api
%s        ports:
        - containerPort: 8080
          name: http
      terminationGracePeriodSeconds: 30
`

const preStopHook = `        lifecycle:
          preStop:
            exec:
              command: ["sleep", "15"]
`

// envoyLine is an Envoy access log line of Contour's default format.
func envoyLine(at, path, code, flags string) string {
	return `[2026-11-23T` + at + `Z] "GET ` + path + ` HTTP/1.1" ` + code + ` ` + flags + ` 0 145 2 - "32.81.180.184" "okhttp/4.12.0" "34ccddfb-2fb7-47ff-82aa-bfa5e342ae0a" "api.example.com" "10.40.1.203:8080"`
}

// nginxLine is an ingress-nginx access log line (its upstream named
// namespace-service-port).
func nginxLine(at, path, code string) string {
	return `10.0.0.7 - - [23/Nov/2026:` + at + ` +0000] "GET ` + path + ` HTTP/1.1" ` + code + ` 0 "-" "okhttp/4.12.0" 210 0.001 [travel-fares-api-8080] [] 10.40.1.203:8080 0 0.001 ` + code + ` 6d1e4f2a9b7c3e58`
}

// TestNoGracefulShutdown: a proxy's 5xx for a service's route that fall on
// the service's scale-in, with pods that stop at once, are the missing
// graceful shutdown; a preStop hook, a draining process, errors at
// another time or on another service's route are not.
func TestNoGracefulShutdown(t *testing.T) {
	now := time.Date(2026, 11, 23, 16, 40, 0, 0, time.UTC)
	burst := func(line func(at string) string) []string {
		var out []string
		for _, at := range []string{"16:21:33.028", "16:21:35.013", "16:21:37.514", "16:21:41.283", "16:21:48.838"} {
			out = append(out, line(at))
		}
		return append(out, envoyLine("16:30:02.101", "/v2/fares?origin=SFO", "200", "-"))
	}
	envoy503 := burst(func(at string) string { return envoyLine(at, "/v2/fares?origin=BOS&dest=CDG", "503", "UF,URX") })
	exitLine := `{"time":"2026-11-23T16:21:31.120Z","level":"INFO","msg":"received signal, exiting","signal":"terminated"}`
	cases := []struct {
		name      string
		proxy     []string
		lifecycle string
		lastLine  string // the terminated pod's last line
		want      []string
	}{
		{"envoy 503 UF at the scale-in, no preStop, exits on SIGTERM", envoy503, "", exitLine,
			[]string{"503 UF,URX: upstream connection failure", "no preStop hook", "exits on SIGTERM at once", "received signal, exiting", "scales in", "All metrics below target"}},
		{"envoy 503 at the scale-in, spec and log unknown", envoy503, "-", "",
			[]string{"5 5xx between 16:21:33 and 16:21:48", "terminating pods"}},
		{"ingress-nginx 502 on the service's upstream", burst(func(at string) string {
			return nginxLine(strings.SplitN(at, ".", 2)[0], "/v2/fares?origin=ORD", "502")
		}), "", "", []string{"502", "no preStop hook"}},
		{"a preStop hook waits for the proxies", envoy503, preStopHook, "", nil},
		{"the process drains on SIGTERM", envoy503, "", `{"time":"2026-11-23T16:21:31.120Z","level":"INFO","msg":"graceful shutdown: draining connections"}`, nil},
		{"503s half an hour after the scale-in", burst(func(at string) string {
			return envoyLine(strings.Replace(at, "16:21", "16:52", 1), "/v2/fares?origin=BOS", "503", "UF")
		}), "", "", nil},
		{"503s on another service's route", burst(func(at string) string { return envoyLine(at, "/v1/seatmap/LH400", "503", "UF") }), "", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page := shutdownEvents
			if c.lifecycle != "-" {
				page += strings.Replace(shutdownDeploy, "%s", c.lifecycle, 1)
			}
			res := kubetext.Parse([]byte(page), now)
			k := K8sEvidence{Events: res.Events, PreviousLogs: map[string][]evidence.LogLine{}}
			for _, o := range res.Objects {
				if d, ok := o.(*appsv1.Deployment); ok {
					k.Deployments = append(k.Deployments, *d)
				}
			}
			if c.lastLine != "" {
				k.PreviousLogs["travel/fares-api-7c5d9b8f6-2gqzn/fares-api"] = []evidence.LogLine{{Text: c.lastLine}}
			}
			// The proxy's log as get_pod_logs serves it: each line
			// timed by the collector, as read from a bundle or a cluster.
			col, err := evidence.NewPodLogCollector("kubernetes", evidence.PodLogQuery{Namespace: "projectcontour", Pod: "envoy-7x2qk"}, now)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range c.proxy {
				col.Add("envoy-7x2qk/envoy", l)
			}
			lines := col.Result().Lines
			own := []LogSet{{Source: "fares-api-7c5d9b8f6-5nq2t", Subject: "fares-api", Namespace: "travel", Templates: []analysis.LogTemplate{
				{Example: `2026-11-23T16:30:11.033Z INFO request duration_ms=91 method=GET path=/v2/fares status=200`}}}}
			got := detectEdgeShutdown(edgeInput{Subject: "fares-api", Namespace: "travel", Proxies: []string{"projectcontour/envoy-7x2qk"}, Lines: lines, K8s: &k, Logs: own})
			if c.want == nil {
				if len(got) != 0 {
					t.Fatalf("findings %+v", got)
				}
				return
			}
			if len(got) != 2 || got[0].Kind != KindNoGracefulShutdown || got[0].Subject != "fares-api" {
				t.Fatalf("got %+v", got)
			}
			text := strings.Join(got[0].Evidence, "\n") + "\n" + noGracefulShutdown.describe(&Hypothesis{Subject: "fares-api", Primary: []*Finding{&got[0], &got[1]}}, Scope{}) + "\n" + got[1].Summary
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("missing %q in\n%s", w, text)
				}
			}
			if !got[1].Time.Equal(time.Date(2026, 11, 23, 16, 22, 0, 0, time.UTC)) {
				t.Errorf("scale-in at %v, want 16:22", got[1].Time)
			}
		})
	}
}
