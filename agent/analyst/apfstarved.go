package analyst

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/finding"
)

// A controller or client slowed by the API server's API Priority and
// Fairness (APF). The API server sorts every request by FlowSchema into a
// priority level with a fixed share of its concurrency; when one client
// sends more than its level can serve (a new exporter LISTing every pod of
// the cluster every few seconds from several replicas), the level's
// queues fill, its requests wait, and once a queue is full the API server
// answers 429 to every client of that level, however little it asks. The
// victims (Flux, Argo CD, an operator, a CI job) log client-go's retry:
//
//	the server has received too many requests and has asked us to try again later (get deployments.apps search-api)
//	Too many requests, please try again later.
//	429 Too Many Requests
//
// The API server shows it in apiserver_flowcontrol_rejected_requests_total
// and apiserver_flowcontrol_current_inqueue_requests (and
// request_wait_duration_seconds) by priority_level and flow_schema, and in
// its debug tables (kubectl get --raw
// /debug/api_priority_and_fairness/dump_priority_levels, dump_requests):
// the level with rejected and waiting requests, and the users (the flow
// distinguisher of a ByUser FlowSchema) whose requests fill it. The
// heaviest ServiceAccount is the load source, and the change that deployed
// it is the trigger.

// KindAPFStarved is a client's requests queued and rejected by an API
// server priority level another client fills.
const KindAPFStarved Kind = "apf_starved"

var (
	// apfRejectRE is a client told to come back by the API server (429).
	apfRejectRE = regexp.MustCompile(`(?i)has received too many requests and has asked us to try again later|too many requests, please try again later|\b429 too many requests|\bstatus(?:code)?[=: "]+429\b.*(?:apiserver|kube|/apis?/)|reason[=: "]+TooManyRequests`)
	// apfUserRE is a ServiceAccount user (the flow distinguisher).
	apfUserRE = regexp.MustCompile(`system:serviceaccount:([a-z0-9.-]+):([a-z0-9.-]+)`)
	// apfCountRE is a count before a user (sort | uniq -c).
	apfCountRE = regexp.MustCompile(`^\s*(\d+)\s+(\S+)\s*$`)
	// apfLevelLabels are the labels naming a priority level.
	apfLevelLabels = []string{"priority_level", "priorityLevel", "priority-level"}
)

var apfStarved = &mechanism{
	kind:   KindAPFStarved,
	class:  classCause,
	label:  "API server priority level (API Priority and Fairness) full: requests queued and rejected with 429",
	detect: detectAPFStarved,
	// The queueing, rejection and saturation seen on the API server's flow
	// control and the victim's throttled lines are what the full level
	// produces; so are the heaviest client's own retries.
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Subject == h.Subject || f.Subject == h.fact("caller") {
			return true
		}
		t := strings.ToLower(f.Summary + " " + f.Object + " " + strings.Join(f.Evidence, " "))
		return strings.Contains(t, "flowcontrol") || strings.Contains(t, "priority_level")
	},
	// Only the change that brought the heaviest client (or names the
	// priority level, a FlowSchema) triggers this: a change to the victim
	// near the onset is a coincidence.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if cl := h.fact("caller"); cl != "" && (c.Subject == cl || containsToken(changeText(c), strings.ToLower(cl))) {
			return true
		}
		t := changeText(c)
		return strings.Contains(t, "flowschema") || strings.Contains(t, "prioritylevelconfiguration") ||
			h.fact("priority_level") != "" && containsToken(t, strings.ToLower(h.fact("priority_level")))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		level := orWord(h.fact("priority_level"), "a shared priority level")
		d := fmt.Sprintf("%s is slowed by the API server's API Priority and Fairness (flow control): its requests fall in priority level %s", h.Subject, level)
		if fs := h.fact("flow_schema"); fs != "" {
			d += fmt.Sprintf(" (FlowSchema %s)", fs)
		}
		d += ", whose queues are full, so the API server queues them and rejects them with 429 Too Many Requests"
		d += h.wrapped(" (", "level_state", ")")
		if l := h.fact("line"); l != "" {
			d += "; " + h.Subject + " logs " + quote(l, 200)
		}
		d += h.clause(". ", "load_source")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		level := orWord(h.fact("priority_level"), "the saturated priority level")
		if cl := h.fact("caller"); cl != "" {
			r.high("Cut %s's load on the API server: scale it down or lengthen its interval, and make it watch through an informer (shared cache) instead of LISTing the cluster", cl)
			if c := h.Trigger; c != nil && c.Kind == KindDeploy {
				r.add(finding.PriorityHigh, rollbackAction(c))
			}
			r.med("Give %s a FlowSchema of its own (matching its ServiceAccount) on a priority level apart from %s, so it can no longer starve %s", cl, level, h.Subject)
		} else {
			r.high("Find the heaviest users of %s (kubectl get --raw /debug/api_priority_and_fairness/dump_requests) and cut their load", level)
		}
		r.med("Check apiserver_flowcontrol_rejected_requests_total and current_inqueue_requests of %s fall back to zero", level)
		r.low("Alert on apiserver_flowcontrol_rejected_requests_total by priority_level")
	},
}

// apfLevel is what was read of one priority level.
type apfLevel struct {
	name, schema     string
	rejected, queued float64 // peak rate of rejections, peak of waiting requests
	onset            time.Time
	fromTable        string // the debug table's row, said
}

// detectAPFStarved finds a client rejected by the API server's flow
// control and follows it to the priority level (metrics, debug tables) and
// the users that fill it.
func detectAPFStarved(ev *Gathered, found []Finding) []Finding {
	// The victims' 429 lines.
	type victim struct {
		subject, ns, line string
		at                time.Time
	}
	var victims []victim
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host {
			continue
		}
		for _, t := range set.Templates {
			if matchLine(apfRejectRE, t.Example) {
				victims = append(victims, victim{set.Subject, set.Namespace, apfQuoted(t.Example), orTime(t.FirstIncident, t.FirstSeen)})
				break
			}
		}
	}
	levels := apfLevelsFromMetrics(ev)
	for _, l := range apfLevelsFromTables(ev) {
		if x := levels[l.name]; x != nil {
			x.fromTable = l.fromTable
			x.rejected = math.Max(x.rejected, l.rejected)
			x.queued = math.Max(x.queued, l.queued)
		} else {
			levels[l.name] = l
		}
	}
	var level *apfLevel
	for _, l := range levels {
		if l.rejected <= 0 && l.queued <= 0 {
			continue
		}
		if level == nil || l.rejected > level.rejected || l.rejected == level.rejected && l.queued > level.queued {
			level = l
		}
	}
	if level == nil || len(victims) == 0 && level.rejected <= 0 {
		return nil
	}
	users := apfUsers(ev, level.name)

	// The victim: the asked service among those rejected, else the first
	// rejected that is not the heaviest user.
	var v victim
	for _, x := range victims {
		if strings.EqualFold(x.subject, ev.Scope.Service) {
			v = x
			break
		}
	}
	if v.subject == "" && len(victims) > 0 {
		v = victims[0]
	}
	var top apfUser
	for _, u := range users {
		if u.name != v.subject {
			top = u
			break
		}
	}
	subject := orWord(v.subject, orWord(ev.Scope.Service, top.name))
	if subject == "" {
		return nil
	}
	f := Finding{Kind: KindAPFStarved, Subject: subject, Namespace: orWord(v.ns, ev.Scope.Namespace), Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9}
	f.Object = "priority level " + level.name
	f.Time = earliest(level.onset, v.at)
	if f.Time.IsZero() {
		f.Time = ev.Window.Start
	}
	f.setFact("priority_level", level.name)
	f.setFact("flow_schema", level.schema)
	f.setFact("current", "true")
	if level.fromTable != "" {
		f.setFact("level_state", level.fromTable)
	} else {
		f.setFact("level_state", fmt.Sprintf("rejections up to %.3g/s, up to %.0f requests waiting", level.rejected, level.queued))
	}
	if v.line != "" {
		f.setFact("line", v.line)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s is refused by the API server (429): %s", v.subject, quote(v.line, 240)))
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("API server priority level %s is full: %s", level.name, orWord(level.fromTable, f.fact("level_state"))))
	if top.name != "" {
		f.setFact("caller", top.name)
		f.setFact("client", top.user)
		s := fmt.Sprintf("The heaviest client of %s is ServiceAccount %s/%s (%s): %s fills the level", level.name, top.ns, top.name, top.share, top.name)
		f.setFact("load_source", s)
		f.setFact("why", fmt.Sprintf("%s fills priority level %s", top.user, level.name))
		f.Evidence = append(f.Evidence, s)
	} else {
		f.setFact("state_only", "true")
	}
	f.Summary = fmt.Sprintf("%s's API requests queued and rejected (429) by priority level %s", subject, level.name)
	return []Finding{f}
}

// apfLevelsFromMetrics reads the API server's flow control series by
// priority level: rejections and waiting requests that rose.
func apfLevelsFromMetrics(ev *Gathered) map[string]*apfLevel {
	out := map[string]*apfLevel{}
	for _, set := range ev.Metrics {
		n := strings.ToLower(set.Name)
		rej, queue := strings.Contains(n, "flowcontrol_rejected_requests"), strings.Contains(n, "flowcontrol_current_inqueue_requests") || strings.Contains(n, "flowcontrol_current_inqueue_seats")
		if !rej && !queue {
			continue
		}
		for _, s := range set.Series {
			name := firstLabel(s.Labels, apfLevelLabels...)
			if name == "" || name == "exempt" {
				continue
			}
			sh, ok := seriesShift(s, ev.Window)
			if !ok || !sh.up || sh.peak <= 0 {
				continue
			}
			l := out[name]
			if l == nil {
				l = &apfLevel{name: name}
				out[name] = l
			}
			if fs := firstLabel(s.Labels, "flow_schema", "flowSchema"); fs != "" && l.schema == "" {
				l.schema = fs
			}
			if rej {
				l.rejected = math.Max(l.rejected, sh.peak)
			} else {
				l.queued = math.Max(l.queued, sh.peak)
			}
			l.onset = earliest(l.onset, sh.start)
		}
	}
	return out
}

// apfLevelsFromTables reads dump_priority_levels tables (comma-separated,
// with a header naming PriorityLevelName and the counters).
func apfLevelsFromTables(ev *Gathered) []*apfLevel {
	var out []*apfLevel
	for _, c := range ev.Commands {
		var cols map[string]int
		for _, l := range c.Lines {
			fields := splitCSV(l)
			if len(fields) > 1 && fields[0] == "PriorityLevelName" {
				cols = map[string]int{}
				for i, f := range fields {
					cols[f] = i
				}
				if _, ok := cols["RejectedRequests"]; !ok {
					if _, ok := cols["WaitingRequests"]; !ok {
						cols = nil
					}
				}
				continue
			}
			if cols == nil || len(fields) < len(cols) || fields[0] == "exempt" {
				continue
			}
			num := func(k string) float64 {
				i, ok := cols[k]
				if !ok {
					return 0
				}
				v, _ := strconv.ParseFloat(fields[i], 64)
				return v
			}
			rej, wait := num("RejectedRequests"), num("WaitingRequests")
			if rej <= 0 && wait <= 0 {
				continue
			}
			said := fmt.Sprintf("dump_priority_levels: %.0f waiting, %.0f executing, %.0f rejected, %.0f timed out", wait, num("ExecutingRequests"), rej, num("TimedoutRequests"))
			out = append(out, &apfLevel{name: fields[0], rejected: rej, queued: wait, fromTable: said})
		}
	}
	return out
}

// apfQuoted is the part of a line that says what was refused: from a
// little before the 429.
func apfQuoted(l string) string {
	r := strings.TrimSpace(ReadableLine(l))
	loc := apfRejectRE.FindStringIndex(r)
	if loc == nil || loc[0] < 120 {
		return r
	}
	return "…" + strings.ToValidUTF8(strings.TrimSpace(r[loc[0]-100:]), "")
}

func splitCSV(l string) []string {
	fs := strings.Split(l, ",")
	for i := range fs {
		fs[i] = strings.TrimSpace(fs[i])
	}
	return fs
}

// apfUser is one ServiceAccount's share of a level's requests.
type apfUser struct {
	user, ns, name, share string
	n                     int
}

// apfUsers counts the ServiceAccount users of a priority level's requests
// from what was handed over: counted lines (uniq -c) or dump_requests
// rows of the level; heaviest first.
func apfUsers(ev *Gathered, level string) []apfUser {
	counts := map[string]int{}
	total := 0
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "api_priority_and_fairness") && !strings.Contains(c.Command, "flowcontrol") {
			continue
		}
		for _, l := range c.Lines {
			m := findString(apfUserRE, l)
			if m == "" {
				continue
			}
			if cm := findSubmatch(apfCountRE, l); cm != nil && cm[2] == m {
				n, _ := strconv.Atoi(cm[1])
				counts[m] += n
				total += n
				continue
			}
			// A dump_requests row: counted when it is of the level.
			if fs := splitCSV(l); len(fs) > 1 && fs[0] == level {
				counts[m]++
				total++
			}
		}
	}
	var out []apfUser
	for u, n := range counts {
		m := findSubmatch(apfUserRE, u)
		out = append(out, apfUser{user: u, ns: m[1], name: m[2], n: n, share: fmt.Sprintf("%d of %d requests seen", n, total)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n || out[i].n == out[j].n && out[i].user < out[j].user })
	// The heaviest must stand out: at least a third of what was seen.
	if len(out) > 0 && out[0].n*3 < total {
		return nil
	}
	return out
}
