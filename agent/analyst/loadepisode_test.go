package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// requestLines writes n request lines a minute from t0 for mins minutes in
// one of the access-log formats, each from the client agent(i).
func requestLines(format string, t0 time.Time, mins, n int, agent func(i int) string) []evidence.LogLine {
	var out []evidence.LogLine
	for m := range mins {
		for k := range n {
			t := t0.Add(time.Duration(m)*time.Minute + time.Duration(k)*time.Second)
			a := agent(m*n + k)
			var text string
			switch format {
			case "ingress-nginx":
				text = fmt.Sprintf(`34.89.120.%d - - [%s] "GET /p/oak-desk-140 HTTP/1.1" 200 22880 "-" "%s" 589 0.093 [shop-web-frontend-80] [] 10.1.6.208:3000 20363 0.065 200 8c818e7b8e013af8`, 10+k%5, t.Format("02/Jan/2006:15:04:05 -0700"), a)
			case "json":
				text = fmt.Sprintf(`{"time":%q,"method":"GET","path":"/api/quotes","status":200,"duration_ms":14,"user_agent":%q,"client_ip":"10.4.0.%d"}`, t.Format(time.RFC3339), a, 20+k%7)
			case "envoy":
				text = fmt.Sprintf(`[%s] "GET /v1/search?q=x HTTP/1.1" 200 - via_upstream - "-" 0 5120 31 30 "-" "%s" "5b1c-%d" "search.example.com" "10.2.3.4:8080" outbound|8080||search-api.catalog.svc.cluster.local`, t.Format("2006-01-02T15:04:05.000Z"), a, m*n+k)
			}
			out = append(out, evidence.LogLine{Time: t, Text: text})
		}
	}
	return out
}

// The client whose requests fill an alert's episode, and are absent
// outside it, drove its load; a load-testing tool names itself.
func TestLoadOfEpisode(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	ep := &alertEpisode{Alert: "KubeHpaMaxedOut", Rise: t0.Add(45 * time.Minute), Back: t0.Add(75 * time.Minute)}
	browser := func(i int) string {
		if i%2 == 0 {
			return "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		}
		return "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
	}
	// Browsers all along, the extra client only from rise to back.
	lines := func(format, extra string, outside bool) []evidence.LogLine {
		ls := requestLines(format, t0, 120, 2, browser)
		ls = append(ls, requestLines(format, ep.Rise, 30, 8, func(int) string { return extra })...)
		if outside {
			ls = append(ls, requestLines(format, t0, 40, 8, func(int) string { return extra })...)
		}
		return ls
	}
	cases := []struct {
		name, format, extra string
		outside             bool
		want                []string // nil: no client drove it
		tool                string
	}{
		{"k6 through ingress-nginx", "ingress-nginx", "k6/0.54.0 (https://k6.io/)", false, []string{"a load test (k6) drove the load and is over", `user agent "k6/0.54.0 (https://k6.io/)"`}, "k6"},
		{"ApacheBench in a service's JSON request log", "json", "ApacheBench/2.3", false, []string{"a load test (ApacheBench)"}, "ApacheBench"},
		{"hey through Envoy", "envoy", "hey/0.0.1", false, []string{"a load test (hey)"}, "hey"},
		{"a partner's sync job", "ingress-nginx", "acme-sync/1.4 (+https://acme.example)", false, []string{"one client drove the load, and it stopped", "acme-sync/1.4"}, ""},
		{"the same client before the episode too", "ingress-nginx", "k6/0.54.0 (https://k6.io/)", true, nil, ""},
		{"browsers only", "ingress-nginx", "", false, nil, ""},
	}
	for _, c := range cases {
		var ls []evidence.LogLine
		if c.extra == "" {
			ls = requestLines(c.format, t0, 120, 2, browser)
		} else {
			ls = lines(c.format, c.extra, c.outside)
		}
		e := *ep
		got := loadOfEpisode(&e, []LogSet{{Source: "access.log", Subject: "web", Lines: ls}})
		if c.want == nil {
			if got != nil {
				t.Errorf("%s: client %q, want none", c.name, got.Key)
			}
			continue
		}
		if got == nil {
			t.Errorf("%s: no client", c.name)
			continue
		}
		loadCause(&e, got, "", "")
		for _, w := range c.want {
			if !strings.Contains(e.Cause, w) {
				t.Errorf("%s: cause %q lacks %q", c.name, e.Cause, w)
			}
		}
		if e.LoadTest != c.tool || !e.Load {
			t.Errorf("%s: load test %q (load %v), want %q", c.name, e.LoadTest, e.Load, c.tool)
		}
	}
}

// The pods of a load-testing tool that ran around the episode are named;
// older ones and other pods are not.
func TestLoadTestPods(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 45, 0, 0, time.UTC)
	ep := &alertEpisode{Rise: t0, Back: t0.Add(40 * time.Minute)}
	pod := func(ns, name, image string, created time.Time, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}, Status: corev1.PodStatus{Phase: phase}}
	}
	pods := []corev1.Pod{
		pod("qa-perf", "k6-storefront-peak-1-9xk2c", "grafana/k6:0.54.0", t0, corev1.PodSucceeded),
		pod("qa-perf", "k6-storefront-peak-2-7dwq4", "grafana/k6:0.54.0", t0, corev1.PodSucceeded),
		pod("perf", "storefront-swarm-0", "locustio/locust:2.31", t0.Add(-10*time.Minute), corev1.PodRunning),
		pod("qa-perf", "k6-last-week-1-abcde", "grafana/k6:0.54.0", t0.Add(-7*24*time.Hour), corev1.PodSucceeded),
		pod("shop", "web-frontend-7f8c9d6b5-4xq2n", "shop/web:9.12.0", t0.Add(-2*time.Hour), corev1.PodRunning),
	}
	names, tool := loadTestPods(pods, ep)
	if names != "perf/storefront-swarm-0 and 2 more (Completed)" || tool != "k6" {
		t.Errorf("pods %q tool %q", names, tool)
	}
	if names, _ := loadTestPods(pods[4:], ep); names != "" {
		t.Errorf("no load-test pod: %q", names)
	}
}

// A result that found only a symptom within the episode found the
// episode's own symptom; a cause, or a symptom outside it, is not.
func TestSymptomOfEpisode(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 45, 0, 0, time.UTC)
	ep := &alertEpisode{Rise: t0, Back: t0.Add(40 * time.Minute)}
	res := func(kind string, at time.Time, score float64) *finding.Result {
		return &finding.Result{Verdict: finding.VerdictInconclusive, Candidates: []finding.Candidate{{Subject: "web", Kind: kind, Score: score, FirstSeen: at.Format(time.RFC3339)}}}
	}
	for _, c := range []struct {
		name string
		res  *finding.Result
		want bool
	}{
		{"latency within the episode", res(string(KindLatency), t0.Add(20*time.Minute), 32), true},
		{"latency after the episode", res(string(KindLatency), t0.Add(2*time.Hour), 32), false},
		{"a cause", res(string(KindOOMKilled), t0.Add(20*time.Minute), 60), false},
	} {
		if got := symptomOfEpisode(c.res, ep); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// When the requests fall in the window (a surge before it ended), the
// usual clients left are not a surge, whatever their share now.
func TestClientSurgeNotWhenLoadFell(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 30, 0, 0, time.UTC)
	w := Window{BaselineStart: t0, Start: t0.Add(35 * time.Minute), End: t0.Add(95 * time.Minute)}
	iphone := func(int) string {
		return "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
	}
	chrome := func(int) string { return "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/131.0.0.0 Safari/537.36" }
	ls := requestLines("ingress-nginx", t0.Add(4*time.Minute), 30, 20, func(int) string { return "k6/0.54.0 (https://k6.io/)" })
	ls = append(ls, requestLines("ingress-nginx", t0, 95, 2, iphone)...)
	ls = append(ls, requestLines("ingress-nginx", t0, 95, 1, chrome)...)
	latency := Finding{Kind: KindLatency, Subject: "web-frontend", Time: w.Start, Weight: 0.6}
	ev := &Gathered{Window: w, Scope: Scope{Service: "web-frontend"}, Logs: []LogSet{{Source: "ingress-nginx.log", Subject: "web-frontend", Lines: ls}}}
	if fs := detectClientSurge(ev, []Finding{latency}); len(fs) != 0 {
		t.Errorf("the load fell, yet %s", fs[0].Summary)
	}
	// The same clients while the load rises: the surging one is found.
	ls = requestLines("ingress-nginx", w.Start.Add(5*time.Minute), 30, 20, func(int) string { return "k6/0.54.0 (https://k6.io/)" })
	ls = append(ls, requestLines("ingress-nginx", t0, 95, 2, iphone)...)
	ev.Logs[0].Lines = ls
	if fs := detectClientSurge(ev, []Finding{latency}); len(fs) != 1 || !strings.Contains(fs[0].fact("client"), "k6") {
		t.Errorf("a rising load: %+v", fs)
	}
}
