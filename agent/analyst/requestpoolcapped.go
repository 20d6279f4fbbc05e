package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A server's request pool capped small by its settings. A shared chart's
// new defaults, a platform base image or an edited environment sets the
// request threads of a server (Tomcat's server.tomcat.threads.max,
// Jetty's max threads, puma's max threads, gunicorn's threads) far below
// what the service needs: meant for services on virtual threads or with
// fast handlers, it reaches one whose handlers block on calls that take
// their normal time. At the next peak every thread is busy, requests
// queue in the accept backlog before the handler (so the server's own
// request histogram barely moves) and its callers wait. Read from the
// pool's gauges (busy threads at the pool's maximum, which was not reached
// before), the setting in the workload's environment that equals that
// maximum, and the change of the workload (its chart, its configuration)
// that came last before the onset. No callee of its is slow (that is
// threads held by a slow callee, threadsheld.go): the pool is too small.

// KindPoolCapped is a server's request pool full at a maximum its
// settings cap it at.
const KindPoolCapped Kind = "request_pool_capped"

// threadSettingRE is a setting of a server's request threads as an
// environment variable or a property names it.
var threadSettingRE = regexp.MustCompile(`(?i)^(?:SERVER_TOMCAT_(?:THREADS_MAX|MAX_THREADS)|server\.tomcat\.(?:threads\.max|max-threads)|SERVER_JETTY_THREADS_MAX|server\.jetty\.threads\.max|SERVER_UNDERTOW_THREADS_WORKER|server\.undertow\.threads\.worker|(?:PUMA|RAILS)_MAX_THREADS|GUNICORN_THREADS|MAX_THREADS|maxThreads)$`)

// virtualThreadsOffRE is a Spring Boot setting that keeps request
// handling on the platform thread pool.
var virtualThreadsOffRE = regexp.MustCompile(`(?i)^(?:SPRING_THREADS_VIRTUAL_ENABLED|spring\.threads\.virtual\.enabled)$`)

// poolCapAge bounds how long before the onset the change may lie: a
// small pool bites at the first peak after it.
const poolCapAge = 7 * 24 * time.Hour

var poolCapped = &mechanism{
	kind:   KindPoolCapped,
	class:  classCause,
	label:  "request thread pool capped small by its settings (all threads busy)",
	detect: detectPoolCapped,
	// The server's saturation and load, and its callers' waits on it.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Subject == h.Subject || f.fact("callee") == h.Subject || f.Kind == KindLatency && f.fact("target") == h.Subject
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool { return c.Kind != KindDeploy },
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s's request thread pool (%s) is capped at %s threads by its settings (%s)", h.Subject, orWord(h.fact("pool"), "its web server's"), h.fact("max"), h.fact("setting"))
		if v := h.fact("virtual"); v != "" {
			d += ", with " + v
		}
		d += fmt.Sprintf(": %s — every thread is busy, so requests queue before the handler (its own request timings barely move) and its callers wait", h.fact("metric"))
		if c := h.fact("change"); c != "" && h.Trigger == nil {
			d += "; the settings came with " + c
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Raise %s's request threads (%s, now %s) back to what its blocking calls need, or turn on virtual threads if the service is built for them; revert the change that set it if it came with it", h.Subject, h.fact("setting_name"), h.fact("max"))
		r.med("Check which services a shared chart's or base image's defaults reach before rolling them out, and make the pool size an explicit per-service value")
		r.low("Alert on busy request threads against their maximum (tomcat_threads_busy_threads / tomcat_threads_config_max_threads)")
	},
}

// detectPoolCapped finds a server whose request pool is full by its
// gauges at a maximum its workload's environment sets, with no slow callee
// holding the threads, and the change of the workload before it.
func detectPoolCapped(ev *Gathered, found []Finding) []Finding {
	var states keyed[threadsState]
	threadGauges(ev, states.get)
	var out []Finding
	for _, subj := range states.order {
		st := states.m[subj]
		if st.metric == "" || st.maxThreads == "" {
			continue
		}
		// Threads held by a slow callee (its own log times out calling
		// it, a timeout finding names it the caller) are threadsheld.go's.
		if callee, _ := slowCalleeOf(ev, found, subj); callee != "" || slices.ContainsFunc(found, func(g Finding) bool {
			return g.Kind == KindTimeout && g.fact("caller") == subj && g.Subject != subj
		}) {
			continue
		}
		name, virtual := threadSetting(ev, subj, st.maxThreads)
		if name == "" {
			continue
		}
		onset := st.onset
		f := Finding{Kind: KindPoolCapped, Subject: subj, Object: "service " + subj, Source: SrcMetrics, Time: onset, Severity: SevCritical, Weight: 0.85, Facts: map[string]string{}}
		for _, l := range ev.Logs {
			if l.Subject == subj && l.Namespace != "" {
				f.Namespace = l.Namespace
				break
			}
		}
		f.setFact("pool", st.pool)
		f.setFact("max", st.maxThreads)
		f.setFact("metric", st.metric)
		f.setFact("setting_name", name)
		f.setFact("setting", name+"="+st.maxThreads)
		if virtual != "" {
			f.setFact("virtual", virtual)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", subj, st.metric))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's environment sets %s=%s", subj, name, st.maxThreads))
		// The last change of the workload before the onset (its chart,
		// its configuration; not a release of its code).
		var last *evidence.Change
		for _, cs := range [][]evidence.Change{ev.Changes, ev.Earlier} {
			for i := range cs {
				c := &cs[i]
				if !strings.EqualFold(c.Service, subj) || c.Kind == "deploy" || c.Timestamp.After(onset) || onset.Sub(c.Timestamp) > poolCapAge {
					continue
				}
				if last == nil || c.Timestamp.After(last.Timestamp) {
					last = c
				}
			}
		}
		if last != nil {
			f.setFact("change", fmt.Sprintf("the change of %s at %s: %s", subj, ts(last.Timestamp), quote(last.Description, 180)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("the last change of %s's settings before the onset, at %s: %s", subj, ts(last.Timestamp), quote(last.Description, 200)))
		}
		f.Summary = fmt.Sprintf("%s's request threads all busy at the maximum of %s its settings set (%s)", subj, st.maxThreads, name)
		out = append(out, f)
	}
	return out
}

// threadSetting finds the environment variable of subj's workload that
// sets its request threads to max (a Deployment's or a pod's container
// environment), and whether virtual threads are off there.
func threadSetting(ev *Gathered, subj, max string) (name, virtual string) {
	var envs [][]envVar
	for _, d := range ev.K8s.Deployments {
		if d.Name != subj {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			var e []envVar
			for _, v := range c.Env {
				e = append(e, envVar{v.Name, v.Value})
			}
			envs = append(envs, e)
		}
	}
	for _, p := range ev.K8s.Pods {
		if workloadOfPodName(p.Name) != subj {
			continue
		}
		for _, c := range p.Spec.Containers {
			var e []envVar
			for _, v := range c.Env {
				e = append(e, envVar{v.Name, v.Value})
			}
			envs = append(envs, e)
		}
	}
	for _, e := range envs {
		for _, v := range e {
			if matchLine(threadSettingRE, v.name) && strings.TrimSpace(v.value) == max && name == "" {
				name = v.name
			}
			if matchLine(virtualThreadsOffRE, v.name) && strings.EqualFold(strings.TrimSpace(v.value), "false") {
				virtual = "virtual threads off (" + v.name + "=false)"
			}
		}
		if name != "" {
			return name, virtual
		}
	}
	return "", ""
}

type envVar struct{ name, value string }
