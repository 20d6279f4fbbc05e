package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A service's own rate-limit rejections (zap JSON, logfmt, a Node
// limiter's line) with a per-pod limit in its environment, after a
// change cut its replicas: the client's effective limit fell with them.
// A limiter with a shared store, or no cut of the replicas, is not this.
func TestDetectRateLimitPerPod(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(10 * time.Minute)
	zap := `{"level":"warn","ts":1795515490.97,"caller":"ratelimit/local.go:61","msg":"rate limited","partner":"acme","limit_rps":20,"burst":40,"path":"/v2/orders","status":429}`
	logfmt := `time=2026-05-01T11:40:06Z level=warn msg="rate limit exceeded" client=acme limit=50 status=429`
	node := `2026-05-01T11:40:06.184Z warn: 429 Too Many Requests for client acme (rate limit 10/s) path=/v1/quotes`
	logs := func(subject, line string) []LogSet {
		set := LogSet{Source: subject + "-7c5f8d9b64-xtrbb", Subject: subject, Namespace: "partners", Origin: SrcLogs}
		set.Templates = append(set.Templates, tmpl(line, 40, on, w.End))
		return []LogSet{set}
	}
	deploy := func(name string, env ...string) []appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "partners"}}
		var e []corev1.EnvVar
		for i := 0; i+1 < len(env); i += 2 {
			e = append(e, corev1.EnvVar{Name: env[i], Value: env[i+1]})
		}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: name, Env: e}}
		return []appsv1.Deployment{d}
	}
	pods := func(name string, n int) []corev1.Pod {
		var out []corev1.Pod
		for i := 0; i < n; i++ {
			p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-7c5f8d9b64-x" + string(rune('a'+i)) + "tbb", Namespace: "partners"}}
			p.Status.Phase = corev1.PodRunning
			out = append(out, p)
		}
		return out
	}
	cut := func(svc, text string) []evidence.Change {
		return []evidence.Change{{Timestamp: on.Add(-16 * time.Hour), Service: svc, Kind: "config", Description: text}}
	}
	cases := []struct {
		name        string
		logs        []LogSet
		deps        []appsv1.Deployment
		pods        []corev1.Pod
		changes     []evidence.Change
		subject     string
		before, now string
	}{
		{"zap JSON, PARTNER_RPS_LIMIT local, HPA minReplicas 6 -> 2", logs("partner-api", zap), deploy("partner-api", "PARTNER_RPS_LIMIT", "20", "RATE_LIMIT_SCOPE", "local"), pods("partner-api", 2),
			cut("partner-api", "rightsizing: HPA partner-api minReplicas 6 -> 2; partner-webhooks minReplicas 3 -> 2"), "partner-api", "120", "40"},
		{"logfmt, limit from the line, replicas 4 to 1", logs("quotes-api", logfmt), nil, pods("quotes-api", 1),
			cut("quotes-api", "quotes-api: replicas 4 to 1 (cost)"), "quotes-api", "200", "50"},
		{"a Node limiter, RATE_LIMIT_RPS", logs("pricing", node), deploy("pricing", "RATE_LIMIT_RPS", "10"), pods("pricing", 3),
			cut("pricing", "pricing: minReplicas 9 -> 3"), "pricing", "90", "30"},
		{"a limiter with a shared store", logs("partner-api", zap), deploy("partner-api", "PARTNER_RPS_LIMIT", "20", "RATE_LIMIT_BACKEND", "redis"), pods("partner-api", 2),
			cut("partner-api", "HPA partner-api minReplicas 6 -> 2"), "", "", ""},
		{"replicas raised, not cut", logs("partner-api", zap), deploy("partner-api", "PARTNER_RPS_LIMIT", "20"), pods("partner-api", 6),
			cut("partner-api", "HPA partner-api minReplicas 2 -> 6"), "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.logs, K8s: K8sEvidence{Deployments: c.deps, Pods: c.pods}, Earlier: c.changes, Window: w}
			f := onlyFinding(t, detectRateLimitPerPod(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("total_before") != c.before || f.fact("total_now") != c.now {
				t.Errorf("before %q now %q", f.fact("total_before"), f.fact("total_now"))
			}
			h := &Hypothesis{Kind: KindRateLimitPerPod, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "per pod", "429", "from "+c.before+" to "+c.now)
		})
	}
}
