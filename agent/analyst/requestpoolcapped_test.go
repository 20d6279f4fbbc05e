package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A server's request pool full by its gauges (Micrometer's Tomcat and
// Jetty binders, puma's stats) at the maximum its workload's environment
// sets (SERVER_TOMCAT_THREADS_MAX, server.jetty.threads.max,
// PUMA_MAX_THREADS), with the change of its settings before: the pool is
// capped too small. A pool full because a callee is slow, a maximum no
// setting names, or a pool full all along is not this.
func TestDetectPoolCapped(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(10 * time.Minute)
	step := stepAt(on)
	gauges := func(subject, busy, maxName string, before, after, limit float64) []MetricSet {
		l := evidence.Labels{"application": subject, "pod": subject + "-5c8f7d9b6-6jlqw"}
		return []MetricSet{
			{Name: busy, Class: MetricSaturation, Series: []evidence.Series{wseries(w, l, step(before, after))}},
			{Name: maxName, Class: MetricState, Series: []evidence.Series{wseries(w, l, step(limit, limit))}},
		}
	}
	deploy := func(name string, env ...corev1.EnvVar) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "accounts"}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: name, Env: env}}
		return d
	}
	env := func(n, v string) corev1.EnvVar { return corev1.EnvVar{Name: n, Value: v} }
	chart := evidence.Change{Timestamp: on.Add(-65 * time.Minute), Service: "profile", Kind: "config", Description: "profile: base chart 4.3.0 -> 5.0.1 (platform defaults)"}
	cases := []struct {
		name    string
		metrics []MetricSet
		deps    []appsv1.Deployment
		found   []Finding
		subject string
		setting string
		virtual bool
	}{
		{"Tomcat at SERVER_TOMCAT_THREADS_MAX, virtual threads off", gauges("profile", "tomcat_threads_busy_threads", "tomcat_threads_config_max_threads", 8, 20, 20),
			[]appsv1.Deployment{deploy("profile", env("SERVER_TOMCAT_THREADS_MAX", "20"), env("SPRING_THREADS_VIRTUAL_ENABLED", "false"))}, nil, "profile", "SERVER_TOMCAT_THREADS_MAX=20", true},
		{"Jetty at its property", gauges("profile", "jetty_threads_busy", "jetty_threads_config_max", 10, 32, 32),
			[]appsv1.Deployment{deploy("profile", env("server.jetty.threads.max", "32"))}, nil, "profile", "server.jetty.threads.max=32", false},
		{"puma at PUMA_MAX_THREADS", gauges("profile", "puma_busy_threads", "puma_max_threads", 1, 5, 5),
			[]appsv1.Deployment{deploy("profile", env("PUMA_MAX_THREADS", "5"))}, nil, "profile", "PUMA_MAX_THREADS=5", false},
		{"a slow callee holds the threads", gauges("profile", "tomcat_threads_busy_threads", "tomcat_threads_config_max_threads", 8, 20, 20),
			[]appsv1.Deployment{deploy("profile", env("SERVER_TOMCAT_THREADS_MAX", "20"))},
			[]Finding{{Kind: KindTimeout, Subject: "crm", Time: on, Facts: map[string]string{"caller": "profile"}, Summary: "profile: calls to crm time out"}}, "", "", false},
		{"no setting names the maximum", gauges("profile", "tomcat_threads_busy_threads", "tomcat_threads_config_max_threads", 8, 20, 20),
			[]appsv1.Deployment{deploy("profile", env("SERVER_TOMCAT_THREADS_MAX", "200"))}, nil, "", "", false},
		{"full all along", gauges("profile", "tomcat_threads_busy_threads", "tomcat_threads_config_max_threads", 20, 20, 20),
			[]appsv1.Deployment{deploy("profile", env("SERVER_TOMCAT_THREADS_MAX", "20"))}, nil, "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: c.metrics, K8s: K8sEvidence{Deployments: c.deps}, Earlier: []evidence.Change{chart}, Window: w}
			f := onlyFinding(t, detectPoolCapped(ev, c.found), c.subject)
			if f == nil {
				return
			}
			if f.fact("setting") != c.setting || (f.fact("virtual") != "") != c.virtual || f.fact("change") == "" {
				t.Errorf("setting %q virtual %q change %q", f.fact("setting"), f.fact("virtual"), f.fact("change"))
			}
			h := &Hypothesis{Kind: KindPoolCapped, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "request thread pool", c.setting, "base chart")
		})
	}
}
