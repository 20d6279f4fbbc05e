package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// A resolved alert whose series rose with the load and came back when the
// load ended (an autoscaler at its maximum, a CPU alert, a latency SLO)
// is explained by who sent that load: the client whose requests, in the
// access log in front of the service, fill the episode and are absent
// outside it. A load-testing tool (k6, Locust, JMeter, Gatling, Vegeta,
// Artillery, hey, wrk, ab, siege) names itself in its User-Agent and in
// the names or images of the pods that ran it; its load is a load test,
// planned and over, and the answer is that nothing needs raising: the
// autoscaler scaled out for it and back.

// loadToolRE is a load-testing tool, as its User-Agent, its pods' names
// or its images name it.
var loadToolRE = regexp.MustCompile(`(?i)(?:^|[^a-z0-9])(k6|locust|jmeter|gatling|vegeta|artillery|loadtest|load-test|hey|wrk|apachebench|siege|tsung|ghz)(?:[^a-z0-9]|$)`)

// episodeClient is the client that sent most of a service's requests
// while an alert's series rose and came back.
type episodeClient struct {
	Field, Key      string // what names it (user agent, client id, address)
	In, InAll       int    // its requests and all requests during the episode
	Out, OutAll     int    // outside it
	First, Last     time.Time
	Tool            string // the load-testing tool it names, "" for none
	Source          string
	OutRate, InRate float64 // its requests per minute outside and during
}

// loadOfEpisode finds, among the request lines the logs kept, the client
// whose requests make at least 40 % of those between the rise and the
// return of the series, at a rate at least five times its rate outside
// (none outside, for a load test).
func loadOfEpisode(ep *alertEpisode, logs []LogSet) *episodeClient {
	from, to := ep.Rise.Add(-5*time.Minute), ep.Back.Add(5*time.Minute)
	var best *episodeClient
	for i := range logs {
		set := &logs[i]
		if len(set.Lines) == 0 {
			continue
		}
		type count struct {
			in, out     int
			first, last time.Time
		}
		groups := map[string]map[string]*count{"client id": {}, "user agent": {}, "address": {}}
		inAll, outAll := 0, 0
		var inFirst, inLast, outFirst, outLast time.Time
		for _, l := range set.Lines {
			if l.Time.IsZero() {
				continue
			}
			r, ok := parseRequestLine(l.Text)
			if !ok || matchLine(platformAgentRE, r.Agent) {
				continue
			}
			in := !l.Time.Before(from) && !l.Time.After(to)
			if in {
				inAll++
				inFirst, inLast = earliest(inFirst, l.Time), later(inLast, l.Time)
			} else {
				outAll++
				outFirst, outLast = earliest(outFirst, l.Time), later(outLast, l.Time)
			}
			for field, key := range map[string]string{"client id": r.ClientID, "user agent": r.Agent, "address": r.Client} {
				if key == "" {
					continue
				}
				c := groups[field][key]
				if c == nil {
					c = &count{}
					groups[field][key] = c
				}
				if in {
					c.in++
					c.first, c.last = earliest(c.first, l.Time), later(c.last, l.Time)
				} else {
					c.out++
				}
			}
		}
		if inAll < 50 {
			continue
		}
		minutes := func(a, b time.Time) float64 { return max(b.Sub(a).Minutes(), 1) }
		for _, field := range []string{"client id", "user agent", "address"} {
			for key, c := range groups[field] {
				share := float64(c.in) / float64(inAll)
				if share < 0.4 {
					continue
				}
				inRate := float64(c.in) / minutes(inFirst, inLast)
				outRate := 0.0
				if outAll > 0 {
					outRate = float64(c.out) / minutes(outFirst, outLast)
				}
				if outRate*5 > inRate {
					continue
				}
				if best != nil && (c.in < best.In || c.in == best.In && key > best.Key) {
					continue
				}
				best = &episodeClient{Field: field, Key: key, In: c.in, InAll: inAll, Out: c.out, OutAll: outAll,
					First: c.first, Last: c.last, Source: orWord(set.Source, set.Subject), OutRate: outRate, InRate: inRate}
				if m := findSubmatch(loadToolRE, key); m != nil && field != "address" {
					best.Tool = toolName(m[1])
				}
			}
		}
	}
	return best
}

// toolName is how a load-testing tool is usually written.
func toolName(s string) string {
	switch l := strings.ToLower(s); l {
	case "k6", "hey", "wrk", "ghz":
		return l
	case "apachebench":
		return "ApacheBench"
	case "jmeter":
		return "JMeter"
	case "loadtest", "load-test":
		return "a load-test client"
	default:
		return strings.ToUpper(l[:1]) + l[1:]
	}
}

// loadTestPods names the pods of a load-testing tool that ran around the
// episode (created within an hour before its return): "qa-perf/k6-peak-1
// and 3 more (Completed)".
func loadTestPods(pods []corev1.Pod, ep *alertEpisode) (names, tool string) {
	var hit []string
	phase := ""
	for _, p := range pods {
		text := p.Name
		for _, c := range p.Spec.Containers {
			text += " " + c.Image
		}
		m := findSubmatch(loadToolRE, text)
		if m == nil {
			continue
		}
		if ct := p.CreationTimestamp.Time; !ct.IsZero() && (ct.After(ep.Back) || ct.Before(ep.Rise.Add(-time.Hour))) {
			continue
		}
		if tool == "" {
			tool = toolName(m[1])
		}
		hit = append(hit, p.Namespace+"/"+p.Name)
		if p.Status.Phase == corev1.PodSucceeded {
			phase = "Completed"
		}
	}
	if len(hit) == 0 {
		return "", ""
	}
	sort.Strings(hit)
	names = hit[0]
	if len(hit) > 1 {
		names += fmt.Sprintf(" and %d more", len(hit)-1)
	}
	if phase != "" {
		names += " (" + phase + ")"
	}
	return names, tool
}

// loadCause writes who drove the episode's load as its cause: "a load
// test (k6): user agent "k6/0.54.0" sent 5138 of the 5800 requests …".
func loadCause(ep *alertEpisode, c *episodeClient, pods, podTool string) {
	tool := orWord(c.Tool, podTool)
	what := fmt.Sprintf("%s %q sent %d of the %d requests read while the series was up (%.0f%%), %s of the %d read outside it",
		c.Field, clip(c.Key, 80), c.In, c.InAll, 100*float64(c.In)/float64(c.InAll), countWord(c.Out, "none"), c.OutAll)
	switch {
	case tool != "":
		ep.Cause = fmt.Sprintf("a load test (%s) drove the load and is over: %s", tool, what)
		ep.LoadTest = tool
	default:
		ep.Cause = "one client drove the load, and it stopped: " + what
	}
	if pods != "" {
		ep.Cause += "; its pods " + pods
	}
	ep.CauseAt, ep.CauseSource = c.First, c.Source
	ep.Load = true
}

func countWord(n int, zero string) string {
	if n == 0 {
		return zero
	}
	return fmt.Sprintf("%d", n)
}

// symptomOfEpisode reports whether a result that found no cause, only a
// symptom (latency, an error rate, saturation), found it within the
// episode: the symptom is the episode's, over with it.
func symptomOfEpisode(res *finding.Result, ep *alertEpisode) bool {
	if res == nil || res.Verdict != finding.VerdictInconclusive || len(res.Candidates) == 0 {
		return false
	}
	for _, c := range res.Candidates {
		if c.Score < 50 && infoOf(Kind(c.Kind)).class != classSymptom {
			continue // a weak cause nobody takes as the root
		}
		if infoOf(Kind(c.Kind)).class != classSymptom {
			return false
		}
		t, err := time.Parse(time.RFC3339, c.FirstSeen)
		if err != nil || t.Before(ep.Rise.Add(-30*time.Minute)) || t.After(ep.Back) {
			return false
		}
	}
	return true
}

// loadEpisodeRecommendations replace a symptom's actions when the load
// that caused it is over: nothing to scale, the alert's source to handle.
func loadEpisodeRecommendations(ep *alertEpisode, what string) []finding.Recommendation {
	if ep.LoadTest != "" {
		return []finding.Recommendation{
			{Priority: finding.PriorityLow, Action: fmt.Sprintf("No change needed on %s: its autoscaler scaled out for the %s load test and back, and the alert resolved when the test ended; keep its replica limits for real traffic", what, ep.LoadTest)},
			{Priority: finding.PriorityLow, Action: fmt.Sprintf("Run load tests against a staging copy of %s, or announce them and silence %s for their duration", what, ep.Alert)},
		}
	}
	return []finding.Recommendation{
		{Priority: finding.PriorityLow, Action: fmt.Sprintf("No change needed on %s now: the load that raised %s has stopped; if that client comes back, rate-limit it at the ingress", what, ep.Alert)},
	}
}
