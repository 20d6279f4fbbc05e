package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A log search may ask where its matches come from ("are the 504s spread
// across the API or coming from one route? Which one, and since when?").
// It is answered by searching the raw lines for what it asks (the status)
// and grouping the matching requests by the field it asks about (route,
// upstream, client, method), with what the matches of the largest group
// share: the upstream they went to, the proxy's response flags (UT: an
// upstream timeout), the time they took.

// groupQuestion is a log search that groups its matches.
type groupQuestion struct {
	what   string // as asked: "504s", "5xx responses"
	lo, hi int    // status range searched
	field  string // route, upstream, client, method
}

var (
	statusAskRE = regexp.MustCompile(`(?i)\b([1-5](?:\d\d|xx))(s?)\b`)
	statusNouns = regexp.MustCompile(`(?i)^\s*(?:errors?|responses?|status(?:es)?|codes?|replies|answers)\b`)
	statusLead  = regexp.MustCompile(`(?i)\b(?:http|status|code|returns?|returning|answer(?:s|ing)?|getting|seeing|got)\s*$`)
	groupCueRE  = regexp.MustCompile(`(?i)\b(which|spread|across|concentrat\w*|single|one|same|per|by|breakdown|where|mostly|all)\b`)
	groupFields = []struct {
		field string
		re    *regexp.Regexp
	}{
		{"route", regexp.MustCompile(`(?i)\b(routes?|paths?|endpoints?|urls?|uris?|apis?|handlers?)\b`)},
		{"upstream", regexp.MustCompile(`(?i)\b(upstreams?|backends?|clusters?|services?|targets?)\b`)},
		{"client", regexp.MustCompile(`(?i)\b(clients?|callers?|ips?|addresses|source)\b`)},
		{"method", regexp.MustCompile(`(?i)\b(methods?|verbs?)\b`)},
	}
)

// parseGroupQuestion reads a question that asks where responses of some
// status come from; ok is false for any other question.
func parseGroupQuestion(text string) (groupQuestion, bool) {
	var q groupQuestion
	for _, m := range statusAskRE.FindAllStringSubmatchIndex(text, -1) {
		code := strings.ToLower(text[m[2]:m[3]])
		plural := m[5] > m[4]
		before, after := text[:m[0]], text[m[1]:]
		// A time (09:58), a share (504%) or a quantity (500 ms) is no
		// status.
		if strings.HasSuffix(before, ":") || strings.HasPrefix(after, ":") || strings.HasPrefix(after, "%") || strings.HasPrefix(after, ".") && len(after) > 1 && after[1] >= '0' && after[1] <= '9' {
			continue
		}
		if !plural && !matchLine(statusNouns, after) && !matchLine(statusLead, before) {
			continue
		}
		if strings.HasSuffix(code, "xx") {
			d := int(code[0] - '0')
			q.lo, q.hi = d*100, d*100+99
		} else {
			n, _ := strconv.Atoi(code)
			q.lo, q.hi = n, n
		}
		q.what = text[m[2]:m[1]]
		if !plural {
			if s := findString(statusNouns, after); s != "" {
				q.what += " " + strings.TrimSpace(s)
			}
		}
		break
	}
	if q.lo == 0 || !matchLine(groupCueRE, text) {
		return q, false
	}
	for _, g := range groupFields {
		if matchLine(g.re, text) {
			q.field = g.field
			return q, true
		}
	}
	// "Check the edge log: where do the 504s come from?": by route.
	if strings.Contains(strings.ToLower(text), "log") {
		q.field = "route"
		return q, true
	}
	return q, false
}

// statusPattern is the RE2 pattern of the status range a question asks
// about, for a log search.
func (q groupQuestion) statusPattern() string {
	if q.lo == q.hi {
		return fmt.Sprintf(`\b%d\b`, q.lo)
	}
	return fmt.Sprintf(`\b%d\d\d\b`, q.lo/100)
}

// groupKey is the value of the field asked about in one request.
func (q groupQuestion) groupKey(r requestLine) string {
	switch q.field {
	case "upstream":
		return r.Upstream
	case "client":
		return r.Client
	case "method":
		return r.Method
	}
	return strings.TrimSpace(r.Method + " " + r.Route)
}

// matchedRequest is one request a group search matched.
type matchedRequest struct {
	r    requestLine
	at   time.Time
	text string
}

// detectLogGroups answers a question that asks where responses of a status
// come from, over the raw lines the investigation read.
func detectLogGroups(ev *Gathered) []Finding {
	q, ok := parseGroupQuestion(ev.Scope.Message + " " + ev.Scope.Hint)
	if !ok {
		return nil
	}
	var best *LogSet
	var bestM []matchedRequest
	for i := range ev.Logs {
		set := &ev.Logs[i]
		var ms []matchedRequest
		for _, l := range set.Lines {
			if !l.Time.IsZero() && !ev.Window.BaselineStart.IsZero() && (l.Time.Before(ev.Window.BaselineStart) || l.Time.After(ev.Window.End)) {
				continue
			}
			r, ok := parseRequestLine(l.Text)
			if !ok || r.Status < q.lo || r.Status > q.hi {
				continue
			}
			ms = append(ms, matchedRequest{r, l.Time, l.Text})
		}
		if len(ms) > len(bestM) {
			best, bestM = set, ms
		}
	}
	if len(bestM) == 0 {
		return nil
	}
	return []Finding{groupFinding(q, best, bestM)}
}

// groupFinding groups one source's matching requests by the field asked
// about and describes the largest group.
func groupFinding(q groupQuestion, set *LogSet, ms []matchedRequest) Finding {
	type group struct {
		key         string
		n           int
		first, last time.Time
		ms          []matchedRequest
	}
	byKey := map[string]*group{}
	var groups []*group
	for _, m := range ms {
		k := orWord(q.groupKey(m.r), "(not logged)")
		g := byKey[k]
		if g == nil {
			g = &group{key: k}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.n++
		g.first = earliest(g.first, m.at)
		if m.at.After(g.last) {
			g.last = m.at
		}
		g.ms = append(g.ms, m)
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].n > groups[j].n })
	top := groups[0]
	share := float64(top.n) / float64(len(ms))
	f := Finding{Kind: KindLogMatch, Subject: set.Subject, Object: set.Origin + " " + set.Source, Namespace: set.Namespace,
		Time: top.first, Severity: SevWarning, Weight: 0.9, Source: set.Origin}
	if share < 0.6 {
		f.Weight = 0.7
		f.Time = ms[0].at
		for _, m := range ms {
			f.Time = earliest(f.Time, m.at)
		}
	}
	f.setFact("phrase", q.what)
	f.setFact("group_field", q.field)
	f.setFact("group", top.key)
	f.setFact("group_lines", strconv.Itoa(top.n))
	f.setFact("lines", strconv.Itoa(len(ms)))
	f.setFact("source", set.Source)
	f.setFact("caller", set.Subject)
	f.setFact("line", top.ms[len(top.ms)-1].text)
	f.setFact("first", ts(top.first))
	f.setFact("last", ts(top.last))
	var others []string
	for _, g := range groups[1:] {
		if len(others) == 4 {
			others = append(others, "…")
			break
		}
		others = append(others, fmt.Sprintf("%s (%d)", g.key, g.n))
	}
	f.setFact("groups", strings.Join(others, ", "))
	// What the largest group's requests share.
	ups, flags, statuses := map[string]int{}, map[string]int{}, map[int]int{}
	var durs []float64
	for _, m := range top.ms {
		if m.r.Upstream != "" {
			ups[m.r.Upstream]++
		}
		if m.r.Flags != "" {
			flags[m.r.Flags]++
		}
		statuses[m.r.Status]++
		if m.r.Duration >= 0 {
			durs = append(durs, m.r.Duration)
		}
	}
	if u, n := mostCommon(ups); n*5 >= top.n*4 {
		f.setFact("upstream", u)
		// The requests went to one upstream other than the log's own
		// service: that is where they failed.
		if share >= 0.6 && q.field != "upstream" && !strings.EqualFold(u, set.Subject) && !strings.ContainsAny(u, ":") {
			f.Subject = u
			f.Related = []string{set.Subject}
		}
	}
	if q.field == "upstream" && share >= 0.6 && !strings.ContainsAny(top.key, ":") && top.key != "(not logged)" && !strings.EqualFold(top.key, set.Subject) {
		f.Subject = top.key
		f.Related = []string{set.Subject}
	}
	if fl, n := mostCommon(flags); n*5 >= top.n*4 {
		f.setFact("flags", fl)
		f.setFact("flags_meaning", flagsMeaning(fl))
	}
	if len(durs) > 0 {
		f.setFact("duration", seconds(median(durs)))
	}
	if len(statuses) == 1 {
		for s := range statuses {
			f.setFact("status", strconv.Itoa(s))
		}
	}
	ev := fmt.Sprintf("%s %s: %d of the %d %s are on %s %s, from %s to %s", set.Origin, set.Source, top.n, len(ms), q.what, q.field, top.key, ts(top.first), ts(top.last))
	f.Evidence = []string{ev, fmt.Sprintf("%s %s logged: %s", set.Origin, set.Source, quote(ReadableLine(top.ms[len(top.ms)-1].text), 260))}
	if len(others) > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("other %ss with %s: %s", q.field, q.what, strings.Join(others, ", ")))
	}
	f.Summary = fmt.Sprintf("%s logs %s: %d of %d on %s %s", set.Subject, q.what, top.n, len(ms), q.field, top.key)
	return f
}

// describeGroup answers a grouped log search.
func describeGroup(h *Hypothesis) string {
	total, _ := strconv.Atoi(h.fact("lines"))
	n, _ := strconv.Atoi(h.fact("group_lines"))
	field, what, src := h.fact("group_field"), h.fact("phrase"), orWord(h.fact("caller"), h.Subject)
	var d string
	if total > 0 && n*10 >= total*6 {
		if n == total {
			d = fmt.Sprintf("the %s in %s's log come from one %s: %s (all %d, from %s to %s)", what, src, field, h.fact("group"), n, h.fact("first"), h.fact("last"))
		} else {
			d = fmt.Sprintf("the %s in %s's log come mostly from one %s: %s (%d of %d, from %s to %s; the others: %s)", what, src, field, h.fact("group"), n, total, h.fact("first"), h.fact("last"), h.fact("groups"))
		}
	} else {
		d = fmt.Sprintf("the %s in %s's log are spread across %ss: %s (%d of %d), %s", what, src, field, h.fact("group"), n, total, h.fact("groups"))
	}
	var shared []string
	if u := h.fact("upstream"); u != "" && field != "upstream" {
		shared = append(shared, "sent to upstream "+u)
	}
	if fm := h.fact("flags_meaning"); fm != "" {
		shared = append(shared, "ended by the proxy as "+fm)
	}
	if du := h.fact("duration"); du != "" {
		shared = append(shared, "after "+du+" (median)")
	}
	if len(shared) > 0 {
		d += "; they were " + strings.Join(shared, ", ")
		if strings.Contains(h.fact("flags"), "UT") || strings.Contains(h.fact("status"), "504") {
			d += fmt.Sprintf(": %s does not answer within the route's timeout", orWord(h.fact("upstream"), "the upstream"))
		}
	}
	return d
}

// mostCommon is the most frequent key of a count map and its count.
func mostCommon(m map[string]int) (string, int) {
	keys := slices.Sorted(maps.Keys(m))
	best, n := "", 0
	for _, k := range keys {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	return best, n
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// lineSearch is the pattern of the raw lines a question needs read: the
// status a grouped log search asks about, the per-call times a latency
// question needs (durationLinePattern); "" when templates answer it.
func lineSearch(sc Scope) string {
	var pats []string
	if q, ok := parseGroupQuestion(sc.Message + " " + sc.Hint); ok {
		pats = append(pats, q.statusPattern())
	}
	if p := durationLinePattern(sc); p != "" {
		pats = append(pats, p)
	}
	if p := retryLinePattern(sc); p != "" {
		pats = append(pats, p)
	}
	if p := loadLinePattern(sc); p != "" {
		pats = append(pats, p)
	}
	if p := groupLinePattern(sc); p != "" {
		pats = append(pats, p)
	}
	return strings.Join(pats, "|")
}

// maxQuestionLines bounds the raw lines kept per log set for a question.
const maxQuestionLines = 2000

// keepQuestionLines keeps the lines of a pod log that a question needs.
func keepQuestionLines(re *regexp.Regexp, lines []evidence.LogLine, into []evidence.LogLine) []evidence.LogLine {
	for _, l := range lines {
		if len(into) >= maxQuestionLines {
			break
		}
		if matchLine(re, l.Text) {
			into = append(into, l)
		}
	}
	return into
}
