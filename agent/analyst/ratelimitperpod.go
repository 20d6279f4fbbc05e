package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A rate limit enforced per pod after the replicas were cut. A service
// limits each client's rate in each of its pods on its own (an in-process
// token bucket: RATE_LIMIT_SCOPE=local, a limiter with no shared store),
// so the limit a client gets is the per-pod limit times the replicas its
// calls spread over. A change cuts the replicas (an autoscaler's
// minReplicas lowered by a rightsizing, replicas scaled in) and the
// client's effective limit falls with them: a client sending well under
// its contract gets 429 Too Many Requests, though nobody changed its
// limit. Read from the service's own rate-limit rejections (its log's
// "rate limited" with the per-pod limit), the limit in its workload's
// environment, and the change that cut its replicas before the
// rejections; the replicas running now come from its pods.

// KindRateLimitPerPod is a per-pod rate limit whose total fell with the
// replicas.
const KindRateLimitPerPod Kind = "rate_limit_per_pod"

var (
	// selfLimitedRE is a service's own line rejecting a call for its rate.
	selfLimitedRE = regexp.MustCompile(`(?i)\brate[ -]?limit(?:ed|ing)?\b.*\b429\b|\b429\b.*\brate[ -]?limit|"msg":\s*"rate limited"|rate limit exceeded|too many requests`)
	// limitFieldRE is the per-pod limit such a line states.
	limitFieldRE = regexp.MustCompile(`(?i)"?\b(?:limit_rps|rps_limit|rate_limit|limit|rps)"?\s*[=:]\s*"?(\d+(?:\.\d+)?)\b`)
	// rateLimitEnvRE is a setting of a per-client rate limit.
	rateLimitEnvRE = regexp.MustCompile(`(?i)^\w*(?:RPS_LIMIT|RATE_LIMIT(?:_RPS|_PER_SECOND)?|LIMIT_RPS|REQUESTS_PER_SECOND|RATELIMIT_RPS)$`)
	// rateScopeEnvRE is a setting of where the limiter keeps its counts.
	rateScopeEnvRE = regexp.MustCompile(`(?i)^\w*RATE_?LIMIT_?(?:SCOPE|BACKEND|STORE|MODE)$`)
	// sharedScopeRE is a limiter whose counts are shared by the pods.
	sharedScopeRE = regexp.MustCompile(`(?i)redis|memcache|global|cluster|shared|distributed`)
	// replicasCutRE is a change that lowers a workload's replicas.
	replicasCutRE = regexp.MustCompile(`(?i)\b(min_?replicas|replicas|replica count|minReplicaCount)\s*[:=]?\s*(\d+)\s*(?:->|→|=>|to)\s*(\d+)\b`)
)

var rateLimitPerPod = &mechanism{
	kind:   KindRateLimitPerPod,
	class:  classCause,
	label:  "a per-pod rate limit whose total fell with the replicas",
	detect: detectRateLimitPerPod,
	// The throttled clients and the service's rejections.
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Subject == h.Subject || f.fact("caller") == h.Subject || f.fact("callee") == h.Subject
	}),
	// Only the cut of the replicas triggers it; the service's releases
	// near the onset are coincidences.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && matchLine(replicasCutRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s enforces its rate limit per pod (%s in each pod", h.Subject, h.fact("setting"))
		d += h.clause(", ", "scope") + ")"
		d += fmt.Sprintf(", so a client's limit is %s times the replicas: %s cut them from %s to %s, and each client's effective limit fell from %s to %s requests per second", h.fact("per_pod"), orWord(h.fact("change"), "a change"), h.fact("from"), h.fact("to"), h.fact("total_before"), h.fact("total_now"))
		d += "; clients sending more than that now get 429 Too Many Requests"
		d += h.lineClause(200)
		d += ". Nobody changed a client's limit: the replica count did"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Restore %s's replicas (%s back to %s) so each client's limit is what it was, or raise the per-pod limit to match the replicas (%s)", h.Subject, h.fact("field"), h.fact("from"), h.fact("setting"))
		r.med("Enforce client limits with a shared store (Redis, the gateway's global rate limiting) so they do not depend on the replica count, or derive the per-pod limit from the contract and the replicas")
		r.low("Alert on 429s per client against its contract, and check rate-limited services before rightsizing their replicas")
	},
}

// detectRateLimitPerPod finds a service that rejects calls for their
// rate with a per-pod limit, after a change cut its replicas.
func detectRateLimitPerPod(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, set := range ev.Logs {
		subj := set.Subject
		if subj == "" || set.Host || seen[subj] {
			continue
		}
		var line string
		var n int
		var onset time.Time
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			if l := templateLine(t, selfLimitedRE); l != "" {
				n += t.Incident
				line = orWord(line, l)
				if at := firstOf(t.FirstIncident, t.FirstSeen); onset.IsZero() || at.Before(onset) {
					onset = at
				}
			}
		}
		if n < 3 {
			continue
		}
		ws := workloadSettings(ev, subj)
		envs := append(ws.env, commandEnv(ev, subj)...)
		var setting, perPod, scope string
		for _, v := range envs {
			val := strings.Trim(strings.TrimSpace(v.value), `"'`)
			switch {
			case setting == "" && matchLine(rateLimitEnvRE, v.name):
				if _, err := strconv.ParseFloat(val, 64); err == nil {
					setting, perPod = v.name+"="+val, val
				}
			case scope == "" && matchLine(rateScopeEnvRE, v.name):
				scope = v.name + "=" + val
			}
		}
		if setting == "" {
			if m := findSubmatch(limitFieldRE, line); m != nil {
				perPod, setting = m[1], "a limit of "+m[1]+" per client"
			}
		}
		if perPod == "" || scope != "" && sharedScopeRE.MatchString(scope) {
			continue
		}
		c, field, from, to := replicasCut(ev, subj, onset)
		if c == nil {
			continue
		}
		running := 0
		for _, p := range ev.K8s.Pods {
			if workloadOfPodName(p.Name) == subj && p.Status.Phase == "Running" {
				running++
			}
		}
		if running == 0 {
			running = to
		}
		per, _ := strconv.ParseFloat(perPod, 64)
		seen[subj] = true
		f := Finding{Kind: KindRateLimitPerPod, Subject: subj, Object: "service " + subj, Namespace: orWord(set.Namespace, ws.ns), Source: SrcLogs, Time: onset, Severity: SevCritical, Weight: 0.9, Facts: map[string]string{}}
		f.setFact("setting", setting)
		f.setFact("per_pod", perPod)
		f.setFact("scope", scope)
		f.setFact("field", field)
		f.setFact("from", strconv.Itoa(from))
		f.setFact("to", strconv.Itoa(running))
		f.setFact("total_before", strconv.FormatFloat(per*float64(from), 'f', -1, 64))
		f.setFact("total_now", strconv.FormatFloat(per*float64(running), 'f', -1, 64))
		f.setFact("change", fmt.Sprintf("the change of %s at %s (%s)", subj, ts(c.Timestamp), quote(c.Description, 160)))
		f.setFact("line", line)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s rejects calls for their rate (%d lines from %s): %s", subj, n, hm(onset), quote(ReadableLine(line), 220)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's limit is set per pod (%s%s) and %d of its pods run", subj, setting, map[bool]string{true: ", " + scope, false: ""}[scope != ""], running))
		f.Evidence = append(f.Evidence, fmt.Sprintf("the change of %s at %s cut its replicas from %d to %d: %s", subj, ts(c.Timestamp), from, to, quote(c.Description, 200)))
		f.Summary = fmt.Sprintf("%s's per-pod rate limit of %s now totals %s per client on %d pods (was %s on %d)", subj, perPod, f.fact("total_now"), running, f.fact("total_before"), from)
		out = append(out, f)
	}
	return out
}

// replicasCut is the last change in the three days before the onset that
// cut subj's replicas: the change, the field, from and to.
func replicasCut(ev *Gathered, subj string, onset time.Time) (*evidence.Change, string, int, int) {
	var best *evidence.Change
	var field string
	var from, to int
	for _, cs := range [][]evidence.Change{ev.Changes, ev.Earlier} {
		for i := range cs {
			c := &cs[i]
			if c.Timestamp.After(onset) || onset.Sub(c.Timestamp) > 72*time.Hour {
				continue
			}
			for _, m := range findAllSubmatch(replicasCutRE, c.Description, -1) {
				a, _ := strconv.Atoi(m[2])
				b, _ := strconv.Atoi(m[3])
				if b >= a || b == 0 {
					continue
				}
				// The change names the service beside the field, or is its own.
				if !strings.EqualFold(c.Service, subj) && !namesWord(c.Description, subj) {
					continue
				}
				// Several workloads in one change: the cut named after subj.
				if i := strings.Index(strings.ToLower(c.Description), strings.ToLower(subj)); i >= 0 && strings.Index(c.Description, m[0]) < i {
					continue
				}
				if best == nil || c.Timestamp.After(best.Timestamp) {
					best, field, from, to = c, m[1], a, b
				}
				break
			}
		}
	}
	return best, field, from, to
}

// envPairRE is an environment variable as a workload's YAML prints it
// ("- name: X" then "value: Y").
var envPairRE = regexp.MustCompile(`^\s*-?\s*name:\s*([A-Za-z_][\w.]*)\s*$`)
var envValueRE = regexp.MustCompile(`^\s*value:\s*"?([^"]*)"?\s*$`)

// commandEnv reads the environment variables a transcript's command
// printed of subj's workload (a grep of its YAML).
func commandEnv(ev *Gathered, subj string) []envVar {
	var out []envVar
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, subj) {
			continue
		}
		for i := 0; i+1 < len(c.Lines); i++ {
			m := envPairRE.FindStringSubmatch(c.Lines[i])
			if m == nil {
				continue
			}
			if v := envValueRE.FindStringSubmatch(c.Lines[i+1]); v != nil {
				out = append(out, envVar{m[1], v[1]})
			}
		}
	}
	return out
}
