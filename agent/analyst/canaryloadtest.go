package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A canary analysis failed by its own load test: the progressive-delivery
// controller (Flagger, Argo Rollouts) drives synthetic load at the canary
// through a load-test webhook (hey, vegeta, wrk, ab, k6 run by Flagger's
// loadtester) and judges the canary on its success rate. When that load is
// more than one canary pod can take, the canary sheds it (503 from an
// in-flight limiter or a full queue, 429), the success rate falls
// ("Halt podinfo.test advancement success rate 70.88% < 99%") and the
// controller rolls back every attempt, whatever the release. Read from the
// controller's halt or rollback, the load command (its rate: hey's -q per
// worker times -c workers, vegeta's -rate) and what the load got back:
// hey's or vegeta's status code distribution, mostly 503 or 429, or the
// canary's own log shedding requests of the load tool's user agent.
// Failures other than overload answers (500s, timeouts of a broken
// endpoint) are the release's, not this.

// KindCanaryLoadTest is a canary analysis failed by its own load test.
const KindCanaryLoadTest Kind = "canary_load_test"

var canaryLoadTest = &mechanism{
	kind:   KindCanaryLoadTest,
	class:  classCause,
	label:  "a canary analysis failed by its own load test",
	detect: func(ev *Gathered, _ []Finding) []Finding { return detectCanaryLoadTest(ev) },
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) && f.Kind != KindDeploy && f.Kind != KindConfigChange
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.EqualFold(c.Subject, h.Subject) && c.Kind == KindDeploy
	},
	describe:  describeCanaryLoadTest,
	recommend: recommendCanaryLoadTest,
}

var (
	// canaryHaltRE: Flagger halting or rolling back a canary on its
	// success rate; Argo Rollouts' metric assessed Failed.
	canaryHaltRE     = regexp.MustCompile(`(?i)halt (?:advancement )?([a-z0-9][a-z0-9-]*)\.([a-z0-9-]+) advancement (?:request )?success rate ([\d.]+)% < ([\d.]+)%|Metric "([^"]*success[^"]*)" assessed Failed`)
	canaryRollbackRE = regexp.MustCompile(`(?i)rolling back ([a-z0-9][a-z0-9-]*)\.[a-z0-9-]+ failed checks threshold reached (\d+)|RolloutAborted|Rollout aborted`)
	// loadCmdRE: a load generator's command line with its target.
	// (vegeta reads its target from its input: "echo GET URL | vegeta
	// attack -rate=900").
	loadCmdRE = regexp.MustCompile(`(?:(https?://[\w.:/-]+)[^|]*\|\s*)?\b(hey|vegeta attack|wrk|ab|k6 run)\s(?:[^"\\|]*?(https?://[\w.:/-]+)|[^"\\|]*)`)
	heyRateRE = regexp.MustCompile(`\s-q\s+(\d+)`)
	heyConcRE = regexp.MustCompile(`\s-c\s+(\d+)`)
	vegRateRE = regexp.MustCompile(`-rate[= ](\d+)`)
	// heyStatusRE: hey's "Status code distribution: [200] 18904 responses".
	heyStatusRE = regexp.MustCompile(`\[(\d{3})\]\s+(\d+) responses`)
	// vegetaStatusRE: vegeta report's "Status Codes  [code:count]  200:18904  503:45402".
	vegetaStatusRE = regexp.MustCompile(`\b([1-5]\d\d):(\d+)\b`)
	// loadAgentRE: the user agents of load tools in a service's log.
	loadAgentRE = regexp.MustCompile(`(?i)\b(hey|vegeta|wrk|ApacheBench|k6)/[\d.]+`)
	// shedStatusRE: an overload answer in a request's log line.
	shedStatusRE = regexp.MustCompile(`(?i)"status"\s*:\s*(?:503|429)\b|\bstatus=(?:503|429)\b|\s(?:503|429)\s`)
	// loadChangeRE: a change that speaks of the load test.
	loadChangeRE2 = regexp.MustCompile(`(?i)load[ -]?test|\bhey\b|\bvegeta\b|\bk6\b|webhook`)
)

// loadTestRun is what one load test of a canary read.
type loadTestRun struct {
	canary, command, target string
	rate                    int // requests per second asked, 0 when not read
	ok, shed, failed, total int // shed: 503 and 429; failed: other 4xx/5xx
}

// readLoadTest reads the load command and its outcome from the lines.
func readLoadTest(lines []string) *loadTestRun {
	var r *loadTestRun
	done := false
	for _, l := range lines {
		if m := findSubmatch(loadCmdRE, l); m != nil && r == nil && m[1]+m[3] != "" {
			r = &loadTestRun{command: strings.TrimSpace(m[0]), target: m[1] + m[3]}
			switch m[2] {
			case "hey":
				q, c := findSubmatch(heyRateRE, m[0]), findSubmatch(heyConcRE, m[0])
				if q != nil {
					n, _ := strconv.Atoi(q[1])
					w := 50 // hey's default workers
					if c != nil {
						w, _ = strconv.Atoi(c[1])
					}
					r.rate = n * w
				}
			case "vegeta attack":
				if v := findSubmatch(vegRateRE, m[0]); v != nil {
					r.rate, _ = strconv.Atoi(v[1])
				}
			}
		}
		if r == nil || done {
			continue
		}
		// One report: its counts on one line (a log's JSON output) or on
		// the lines of its block (hey printed on a terminal).
		counts := heyStatusRE.FindAllStringSubmatch(l, -1)
		if len(counts) == 0 && strings.Contains(l, "Status Codes") {
			counts = vegetaStatusRE.FindAllStringSubmatch(l, -1)
		}
		if len(counts) == 0 {
			done = r.total > 0
			continue
		}
		for _, c := range counts {
			code, _ := strconv.Atoi(c[1])
			n, _ := strconv.Atoi(c[2])
			r.total += n
			switch {
			case code < 400:
				r.ok += n
			case code == 503 || code == 429:
				r.shed += n
			default:
				r.failed += n
			}
		}
	}
	return r
}

// canaryOfTarget is the canary a load target's host names
// ("quotes-api-canary.quotes:8080" is quotes-api's).
func canaryOfTarget(target string) string {
	host := strings.TrimPrefix(strings.TrimPrefix(target, "http://"), "https://")
	host, _, _ = strings.Cut(host, "/")
	host, _, _ = strings.Cut(host, ":")
	host, _, _ = strings.Cut(host, ".")
	return strings.TrimSuffix(host, "-canary")
}

func detectCanaryLoadTest(ev *Gathered) []Finding {
	var lines []string
	for _, c := range ev.Commands {
		lines = append(lines, c.Command)
		lines = append(lines, c.Lines...)
	}
	airflowLines(ev, func(l string, c *evidence.CommandOutput) {
		if c == nil {
			lines = append(lines, l)
		}
	})
	times := make([]time.Time, len(lines))
	for i, l := range lines {
		times[i] = evidence.ParseLogTime(l, ev.Window.End)
	}
	for i := range ev.K8s.Events {
		lines = append(lines, ev.K8s.Events[i].Message)
		first, _ := eventTime(&ev.K8s.Events[i])
		times = append(times, first)
	}
	var canary, rate, threshold string
	var rollbacks int
	var halted time.Time
	for i, l := range lines {
		if m := findSubmatch(canaryHaltRE, l); m != nil {
			if canary == "" && m[1] != "" {
				canary, rate, threshold = m[1], m[3], m[4]
			}
			if t := times[i]; !t.IsZero() && (halted.IsZero() || t.Before(halted)) {
				halted = t
			}
		}
		if m := findSubmatch(canaryRollbackRE, l); m != nil {
			rollbacks++
			if canary == "" && m[1] != "" {
				canary = m[1]
			}
		}
	}
	if rate == "" && rollbacks == 0 {
		return nil
	}
	run := readLoadTest(lines)
	if run == nil {
		return nil
	}
	run.canary = canaryOfTarget(run.target)
	if canary == "" {
		canary = run.canary
	}
	if !strings.EqualFold(canary, run.canary) {
		return nil
	}
	// What the load got back: overload answers, from the tool's report or
	// the canary's own log shedding the tool's requests.
	var shedLine string
	for _, l := range lines {
		if matchLine(loadAgentRE, l) && matchLine(shedStatusRE, l) {
			shedLine = l
			break
		}
	}
	overloaded := run.total > 0 && run.shed*10 >= run.total && run.failed*4 < run.shed
	if !overloaded && (run.total > 0 && run.failed > 0 || shedLine == "") {
		return nil
	}
	f := Finding{Kind: KindCanaryLoadTest, Subject: canary, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.88,
		Source: SrcLogs, Time: ev.Window.End, Object: "canary " + canary}
	if !halted.IsZero() {
		f.Time = halted
	}
	f.setFact("command", run.command)
	if run.rate > 0 {
		f.setFact("rate", strconv.Itoa(run.rate))
	}
	if rate != "" {
		f.setFact("success_rate", rate+"% < "+threshold+"%")
	}
	if rollbacks > 0 {
		f.setFact("rollbacks", strconv.Itoa(rollbacks))
	}
	f.Evidence = []string{fmt.Sprintf("the canary's load test runs %q", run.command)}
	if run.total > 0 {
		f.setFact("outcome", fmt.Sprintf("%d of %d answered 503/429 (%d%%), %d OK", run.shed, run.total, run.shed*100/run.total, run.ok))
		f.Evidence = append(f.Evidence, "the load test got "+f.fact("outcome"))
	}
	if shedLine != "" {
		f.setFact("shed_line", strings.TrimSpace(shedLine))
		f.Evidence = append(f.Evidence, "the canary sheds the load tool's requests: "+quote(strings.TrimSpace(shedLine), 240))
	}
	if rate != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the analysis halts %s: success rate %s", canary, f.fact("success_rate")))
	}
	for _, cs := range [][]evidence.Change{ev.Earlier, ev.Changes} {
		for _, c := range cs {
			if strings.EqualFold(c.Service, canary) && matchLine(loadChangeRE2, c.Description) {
				delete(f.Facts, "load_change")
				f.setFact("load_change", fmt.Sprintf("the change of %s at %s: %q", c.Service, ts(c.Timestamp), c.Description))
			}
		}
	}
	if c := f.fact("load_change"); c != "" {
		f.Evidence = append(f.Evidence, "the load test was set by "+c)
	}
	f.Summary = fmt.Sprintf("the canary analysis of %s fails on its own load test (%s)", canary, quote(run.command, 120))
	return []Finding{f}
}

func describeCanaryLoadTest(h *Hypothesis, sc Scope) string {
	s := fmt.Sprintf("the canary analysis of %s fails on its own load test, not on the release: the load-test webhook runs %q against the canary", h.Subject, h.fact("command"))
	if r := h.fact("rate"); r != "" {
		s += fmt.Sprintf(" (%s requests/s asked)", r)
	}
	s += ", more than the canary takes, so it sheds the excess as overload"
	if o := h.fact("outcome"); o != "" {
		s += " (" + o + ")"
	}
	if l := h.fact("shed_line"); l != "" {
		s += ": " + quote(l, 200)
	}
	if r := h.fact("success_rate"); r != "" {
		s += "; the success rate the analysis reads measures the load test (" + r + ")"
	}
	s += " and the controller rolls the canary back"
	if n := h.fact("rollbacks"); n != "" && n != "1" {
		s += " at every attempt"
	}
	s += h.clause("; the load was raised by ", "load_change")
	return s
}

func recommendCanaryLoadTest(h *Hypothesis, sc Scope, r *recommender) {
	r.high("Scale the canary's load test to what one canary pod takes (hey's -q per worker times -c workers), or weigh its requests out of the success-rate check, then rerun the canary of %s", h.Subject)
	r.med("Do not roll back or patch the release for this: the failing requests are the load test's own, shed as overload")
	r.low("Size load tests against the canary's replicas and its in-flight or rate limits, and alert when a canary fails on 503/429 only")
}
