package analysis

import (
	"maps"
	"sort"
	"strings"
	"time"
)

// Drain mines log templates with the Drain algorithm (He et al., "Drain: An
// Online Log Parsing Approach with Fixed Depth Tree", ICWS 2017): lines are
// routed through a tree keyed first by token count and then by their
// leading tokens, and at the leaf joined to the most similar cluster when
// the share of equal tokens reaches the similarity threshold; positions
// that differ become wildcards. Values are masked first (see Tokens).
//
// A Drain is not safe for concurrent use.
type Drain struct {
	// Depth is the tree depth as in Drain3: the root, the length layer, the
	// leading-token layers and the leaf; Depth-3 leading tokens (at least
	// one) route a line.
	Depth int
	// Similarity is the share of equal tokens needed to join a cluster.
	Similarity float64
	// MaxChildren bounds the children of an inner node; further tokens go
	// to a wildcard branch.
	MaxChildren int
	// MaxClusters bounds memory; lines that would open a cluster beyond it
	// are counted in the nearest cluster of their leaf, or dropped.
	MaxClusters int

	root     map[int]*drainNode
	clusters []*Cluster
}

// Cluster is one template with the lines it has absorbed.
type Cluster struct {
	ID     int
	Tokens []string
	Count  int
}

// Template returns the cluster's template text.
func (c *Cluster) Template() string { return strings.Join(c.Tokens, " ") }

type drainNode struct {
	children map[string]*drainNode
	clusters []*Cluster
}

// NewDrain returns a Drain with the usual parameters: depth 4 (one
// leading token routes a line), similarity 0.5, 100 children, 20,000
// clusters.
func NewDrain() *Drain {
	return &Drain{Depth: 4, Similarity: 0.5, MaxChildren: 100, MaxClusters: 20000}
}

// Clusters returns the clusters in creation order.
func (d *Drain) Clusters() []*Cluster { return d.clusters }

// Add routes one line and returns its cluster (nil only when the line is
// empty or the cluster limit was reached with no cluster to join).
func (d *Drain) Add(line string) *Cluster {
	return d.AddTokens(Tokens(line))
}

// AddTokens is Add for an already tokenised and masked line.
func (d *Drain) AddTokens(toks []string) *Cluster {
	if len(toks) == 0 {
		return nil
	}
	if d.root == nil {
		d.root = map[int]*drainNode{}
	}
	leaf := d.leaf(toks)
	best, bestSim, bestParams := (*Cluster)(nil), -1.0, -1
	for _, c := range leaf.clusters {
		sim, params := similarity(c.Tokens, toks)
		if sim > bestSim || (sim == bestSim && params > bestParams) {
			best, bestSim, bestParams = c, sim, params
		}
	}
	if best != nil && bestSim >= d.Similarity {
		for i, t := range toks {
			if best.Tokens[i] != t && best.Tokens[i] != Wildcard {
				best.Tokens[i] = Wildcard
			}
		}
		best.Count++
		return best
	}
	if d.MaxClusters > 0 && len(d.clusters) >= d.MaxClusters {
		if best != nil {
			best.Count++
		}
		return best
	}
	c := &Cluster{ID: len(d.clusters) + 1, Tokens: append([]string(nil), toks...), Count: 1}
	d.clusters = append(d.clusters, c)
	leaf.clusters = append(leaf.clusters, c)
	return c
}

func (d *Drain) leaf(toks []string) *drainNode {
	n := d.root[len(toks)]
	if n == nil {
		n = &drainNode{}
		d.root[len(toks)] = n
	}
	depth := max(d.Depth-3, 1)
	for i := 0; i < depth && i < len(toks); i++ {
		key := toks[i]
		if hasDigitOrMask(key) {
			key = Wildcard
		}
		if n.children == nil {
			n.children = map[string]*drainNode{}
		}
		next := n.children[key]
		if next == nil {
			if key != Wildcard && d.MaxChildren > 0 && len(n.children) >= d.MaxChildren-1 {
				key = Wildcard
				next = n.children[key]
			}
			if next == nil {
				next = &drainNode{}
				n.children[key] = next
			}
		}
		n = next
	}
	return n
}

// hasMask reports whether a token holds a masked value.
func hasMask(s string) bool {
	i := strings.IndexByte(s, '<')
	return i >= 0 && strings.IndexByte(s[i:], '>') > 1
}

func hasDigitOrMask(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			return true
		}
	}
	// A masked value (<NUM>, <IP>, <*>...) inside the token.
	i := strings.IndexByte(s, '<')
	return i >= 0 && strings.IndexByte(s[i:], '>') > 1
}

// similarity returns the share of positions where the template equals the
// line (wildcards do not count as equal) and the number of wildcards.
func similarity(tmpl, toks []string) (float64, int) {
	same, params, masked := 0, 0, 0
	for i, t := range tmpl {
		if t == Wildcard {
			params++
			continue
		}
		if t == toks[i] {
			if hasMask(t) {
				// Equal masked values (two UUIDs) say little about the
				// template: the share is taken over the other positions.
				masked++
				continue
			}
			same++
		} else if isStatusCode(t) && isStatusCode(toks[i]) {
			// An unmasked HTTP status (kept by Tokens) separates lines:
			// 429s are not 200s.
			return 0, params
		}
	}
	if masked == len(tmpl) {
		return 1, params
	}
	return float64(same) / float64(len(tmpl)-masked), params
}

// LogTemplate is a log template with its counts in a baseline window and an
// incident window (the result of the get_log_signatures tool).
type LogTemplate struct {
	Template  string    `json:"template"`
	Count     int       `json:"count"`    // lines in both windows (and undated ones)
	Baseline  int       `json:"baseline"` // lines in the baseline window
	Incident  int       `json:"incident"` // lines in the incident window
	FirstSeen time.Time `json:"first_seen,omitzero"`
	LastSeen  time.Time `json:"last_seen,omitzero"`
	// FirstIncident is the first line of the template in the incident window.
	FirstIncident time.Time `json:"first_incident,omitzero"`
	Example       string    `json:"example"`           // the first line seen (unmasked)
	Last          string    `json:"last,omitempty"`    // the last line seen, when it differs
	Source        string    `json:"source,omitempty"`  // source of the example
	Sources       []string  `json:"sources,omitempty"` // every source it was seen in (at most 10)
	// Onset is the change point of the template's rate: the minute from
	// which it runs at several times its earlier rate (zero when its rate
	// never jumps within the windows, or jumps at its first line).
	Onset time.Time `json:"onset,omitzero"`
	// New: seen in the incident window and never in a baseline that had lines.
	New bool `json:"new,omitempty"`
	// Surge is the incident-window rate over the baseline rate (with one
	// line added to the baseline to avoid division by zero); 0 when either
	// window is empty.
	Surge float64 `json:"surge,omitempty"`
	// PerMinute counts the template's dated lines per unix minute, for
	// callers that compare rates bin by bin (not serialised).
	PerMinute map[int64]int `json:"-"`
}

// Miner counts log templates of timestamped lines in a baseline window
// [BaselineStart, IncidentStart) and an incident window [IncidentStart,
// IncidentEnd]. Lines outside both windows are ignored; lines without a
// timestamp count in the incident window.
//
// The Miner counts each distinct masked line (a form) as it arrives and
// groups the forms into templates when Templates is called, with the batch
// miner (BatchGroups), which sees the whole batch and so is not misled by
// variables in leading positions. Beyond MaxForms distinct forms it falls
// back to online Drain: the forms seen so far are replayed into a Drain
// tree and later lines are routed through it.
type Miner struct {
	BaselineStart, IncidentStart, IncidentEnd time.Time
	// MaxForms bounds the distinct masked lines kept for the batch pass
	// (NewMiner: 20,000); 0 means no bound.
	MaxForms int

	forms     map[string]int // masked line -> index in units (batch mode)
	formToks  [][]string
	toks      []string // the last line's tokens (a form's, or scratch)
	scratch   []string // Add's scratch tokens (after the fallback)
	key       lineKey  // Add's scratch form key
	drain     *Drain   // set once the miner fell back to online Drain
	units     []*minerUnit
	baseLines int
	incLines  int
	seq       int
}

// minerUnit holds the counts of one form (batch mode) or one Drain
// cluster (after the fallback).
type minerUnit struct {
	t       LogTemplate
	minutes map[int64]int
	// Lines come in time order mostly: the count of the current minute
	// is kept here and added to minutes when the minute changes (flush).
	curMinute int64
	curLines  int
	first     int // sequence number of the first line
	last      int // sequence number of the last line
	lastText  string
}

// NewMiner returns a Miner over the given windows. A zero baselineStart
// means there is no baseline.
func NewMiner(baselineStart, incidentStart, incidentEnd time.Time) *Miner {
	return &Miner{BaselineStart: baselineStart, IncidentStart: incidentStart, IncidentEnd: incidentEnd,
		MaxForms: 20000, forms: map[string]int{}}
}

// Lines returns how many lines fell in the baseline and incident windows.
func (m *Miner) Lines() (baseline, incident int) { return m.baseLines, m.incLines }

// Tokens returns the masked tokens of the last line Add mined (true was
// returned), valid until the next Add and not to be modified (a known
// form's tokens are its stored ones): a caller that needs the same line's
// tokens does not tokenise it twice.
func (m *Miner) Tokens() []string { return m.toks }

// Add counts one line; it reports whether the line fell in a window.
func (m *Miner) Add(t time.Time, source, text string) bool {
	inBase, inInc := m.window(t)
	if !inBase && !inInc {
		return false
	}
	// Most lines repeat a form already seen: the key is built in scratch
	// space and the tokens made strings only for a new form.
	m.key.read(text)
	if len(m.key.ends) == 0 {
		m.toks = m.toks[:0]
		return false
	}
	var u *minerUnit
	if m.drain == nil {
		if i, ok := m.forms[string(m.key.key)]; ok {
			u = m.units[i]
			m.toks = m.formToks[i]
		} else if m.MaxForms <= 0 || len(m.units) < m.MaxForms {
			// The key is the tokens joined by 0 bytes: one string holds both.
			key := string(m.key.key)
			m.toks = m.key.tokensOf(key, make([]string, 0, len(m.key.ends)))
			m.forms[key] = len(m.units)
			m.formToks = append(m.formToks, m.toks)
			u = m.newUnit(text, source)
		} else {
			m.fallBack()
		}
	}
	if m.drain != nil {
		m.scratch = m.key.tokens(m.scratch)
		m.toks = m.scratch
		c := m.drain.AddTokens(m.toks)
		if c == nil {
			return false
		}
		for len(m.units) < c.ID {
			m.units = append(m.units, nil)
		}
		if u = m.units[c.ID-1]; u == nil {
			u = m.newUnit(text, source)
			m.units[c.ID-1] = u
		}
	}
	m.seq++
	s := &u.t
	if text != s.Example {
		u.lastText = text
		u.last = m.seq
	}
	s.Count++
	if inBase {
		s.Baseline++
		m.baseLines++
	} else {
		s.Incident++
		m.incLines++
		if !t.IsZero() && (s.FirstIncident.IsZero() || t.Before(s.FirstIncident)) {
			s.FirstIncident = t
		}
	}
	if !t.IsZero() {
		if minute := t.Unix() / 60; u.curLines > 0 && minute == u.curMinute {
			u.curLines++
		} else {
			u.flush()
			u.curMinute, u.curLines = minute, 1
		}
		if s.FirstSeen.IsZero() || t.Before(s.FirstSeen) {
			s.FirstSeen = t
		}
		if t.After(s.LastSeen) {
			s.LastSeen = t
		}
	}
	if source != "" && len(s.Sources) < 10 && !containsString(s.Sources, source) {
		s.Sources = append(s.Sources, source)
	}
	return true
}

// flush adds the current minute's lines to the unit's minutes.
func (u *minerUnit) flush() {
	if u.curLines == 0 {
		return
	}
	if u.minutes == nil {
		u.minutes = map[int64]int{}
	}
	u.minutes[u.curMinute] += u.curLines
	u.curLines = 0
}

// flush adds every unit's current minute to its minutes.
func (m *Miner) flush() {
	for _, u := range m.units {
		if u != nil {
			u.flush()
		}
	}
}

func (m *Miner) newUnit(text, source string) *minerUnit {
	u := &minerUnit{t: LogTemplate{Example: text, Source: source}, first: m.seq + 1}
	if m.drain == nil {
		m.units = append(m.units, u)
	}
	return u
}

// fallBack replays the forms into a Drain tree, merging their counts per
// cluster; later lines go through the tree.
func (m *Miner) fallBack() {
	m.flush()
	m.drain = NewDrain()
	forms := m.units
	m.units = nil
	for i, toks := range m.formToks {
		c := m.drain.AddTokens(toks)
		if c == nil {
			continue
		}
		for len(m.units) < c.ID {
			m.units = append(m.units, nil)
		}
		if m.units[c.ID-1] == nil {
			m.units[c.ID-1] = forms[i]
		} else {
			mergeUnit(m.units[c.ID-1], forms[i])
		}
	}
	m.forms, m.formToks = nil, nil
}

// mergeUnit adds the counts of b into a.
func mergeUnit(a, b *minerUnit) {
	s, o := &a.t, &b.t
	// The example is the first line of either; the last line is the
	// latest one that differs from it.
	type seen struct {
		text string
		seq  int
	}
	lines := [4]seen{{s.Example, a.first}, {a.lastText, a.last}, {o.Example, b.first}, {b.lastText, b.last}}
	if b.first < a.first {
		a.first = b.first
		s.Example, s.Source = o.Example, o.Source
	}
	a.lastText, a.last = "", 0
	for _, l := range lines {
		if l.text != "" && l.text != s.Example && l.seq > a.last {
			a.lastText, a.last = l.text, l.seq
		}
	}
	s.Count += o.Count
	s.Baseline += o.Baseline
	s.Incident += o.Incident
	if !o.FirstIncident.IsZero() && (s.FirstIncident.IsZero() || o.FirstIncident.Before(s.FirstIncident)) {
		s.FirstIncident = o.FirstIncident
	}
	if !o.FirstSeen.IsZero() && (s.FirstSeen.IsZero() || o.FirstSeen.Before(s.FirstSeen)) {
		s.FirstSeen = o.FirstSeen
	}
	if o.LastSeen.After(s.LastSeen) {
		s.LastSeen = o.LastSeen
	}
	for _, src := range o.Sources {
		if len(s.Sources) < 10 && !containsString(s.Sources, src) {
			s.Sources = append(s.Sources, src)
		}
	}
	if len(b.minutes) > 0 && a.minutes == nil {
		a.minutes = map[int64]int{}
	}
	for k, v := range b.minutes {
		a.minutes[k] += v
	}
}

func (m *Miner) window(t time.Time) (base, inc bool) {
	if t.IsZero() {
		return false, true
	}
	if !m.IncidentEnd.IsZero() && t.After(m.IncidentEnd) {
		return false, false
	}
	if m.IncidentStart.IsZero() || !t.Before(m.IncidentStart) {
		return false, true
	}
	if !m.BaselineStart.IsZero() && !t.Before(m.BaselineStart) {
		return true, false
	}
	return false, false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// groups returns the template units with their template text: the batch
// miner's groups of forms, or the Drain clusters after a fallback.
func (m *Miner) groups() ([]*minerUnit, []string) {
	m.flush()
	if m.drain != nil {
		var us []*minerUnit
		var texts []string
		for _, c := range m.drain.Clusters() {
			if c.ID-1 < len(m.units) && m.units[c.ID-1] != nil {
				us = append(us, m.units[c.ID-1])
				texts = append(texts, c.Template())
			}
		}
		return us, texts
	}
	weights := make([]int, len(m.units))
	for i, u := range m.units {
		weights[i] = u.t.Count
	}
	group, tmpls := BatchGroups(m.formToks, weights)
	us := make([]*minerUnit, len(tmpls))
	for i, g := range group {
		if g < 0 {
			continue
		}
		if us[g] == nil {
			c := *m.units[i]
			c.t.Sources = append([]string(nil), c.t.Sources...)
			if len(c.minutes) > 0 {
				c.minutes = maps.Clone(c.minutes)
			}
			us[g] = &c
		} else {
			mergeUnit(us[g], m.units[i])
		}
	}
	texts := make([]string, len(tmpls))
	for g, t := range tmpls {
		texts[g] = strings.Join(t, " ")
	}
	return us, texts
}

// Templates returns the templates, most incident lines first (then most
// lines, then template text), with New and Surge computed.
func (m *Miner) Templates() []LogTemplate {
	baseDur := m.IncidentStart.Sub(m.BaselineStart).Seconds()
	incDur := m.IncidentEnd.Sub(m.IncidentStart).Seconds()
	us, texts := m.groups()
	out := make([]LogTemplate, 0, len(us))
	for i, u := range us {
		if u == nil {
			continue
		}
		t := u.t
		t.Template = texts[i]
		t.Onset = m.changePoint(u.minutes, t.FirstSeen)
		t.PerMinute = u.minutes
		if u.lastText != t.Example {
			t.Last = u.lastText
		}
		if t.Incident > 0 && m.baseLines > 0 {
			t.New = t.Baseline == 0
			if baseDur > 0 && incDur > 0 {
				t.Surge = (float64(t.Incident) / incDur) / (float64(t.Baseline+1) / baseDur)
			}
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Incident != out[j].Incident {
			return out[i].Incident > out[j].Incident
		}
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Template < out[j].Template
	})
	return out
}

// Surging reports whether a template rose markedly in the incident window:
// new with at least minLines lines, or at least factor times its baseline
// rate with at least minLines lines.
func (t LogTemplate) Surging(factor float64, minLines int) bool {
	if t.Incident < minLines {
		return false
	}
	return t.New || t.Surge >= factor
}

// Lines returns the template's kept lines that are not empty, in order: its
// example and its last line (kept only when it differs from the example).
func (t LogTemplate) Lines() []string {
	switch {
	case t.Last == "" && t.Example == "":
		return nil
	case t.Last == "":
		return []string{t.Example}
	case t.Example == "":
		return []string{t.Last}
	}
	return []string{t.Example, t.Last}
}

// errorWords mark a log line as error-like (matched case-insensitively).
var errorWords = []string{"error", "exception", "fail", "fatal", "panic", "refused", "timeout", "timed out",
	"denied", "expired", "x509", "unavailable", "killed", "crit", "traceback", "unreachable", "no such host", "out of memory"}

// ErrorLike reports whether a log line reads as an error or failure.
func ErrorLike(s string) bool {
	l := strings.ToLower(s)
	for _, w := range errorWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// RankTemplates orders templates by interest: surging or new in the
// incident window first, then error-like ones, then by incident lines, so
// that a cut keeps rare errors ahead of routine chatter.
func RankTemplates(ts []LogTemplate) []LogTemplate {
	rank := func(t LogTemplate) int {
		r := 0
		if t.Surging(3, 3) {
			r += 2
		}
		if ErrorLike(t.Example) || ErrorLike(t.Template) {
			r++
		}
		return r
	}
	sort.SliceStable(ts, func(i, j int) bool {
		ri, rj := rank(ts[i]), rank(ts[j])
		if ri != rj {
			return ri > rj
		}
		return ts[i].Incident > ts[j].Incident
	})
	return ts
}

// changePoint finds the minute from which a template's rate jumps: the
// split of its per-minute counts (over both windows, from the first
// window start or its first line) that maximises the rate after over the
// rate before, when the rate after is at least 3× the rate before and
// carries at least 5 lines and 3 minutes. Zero when there is no such
// jump after the template's first minute.
func (m *Miner) changePoint(mm map[int64]int, first time.Time) time.Time {
	if len(mm) < 3 || first.IsZero() {
		return time.Time{}
	}
	start := m.BaselineStart
	if start.IsZero() {
		start = m.IncidentStart
	}
	if start.IsZero() || first.Before(start) {
		start = first
	}
	lo := start.Unix() / 60
	var hi int64
	for k := range mm {
		hi = max(hi, k)
	}
	if !m.IncidentEnd.IsZero() {
		hi = max(hi, m.IncidentEnd.Unix()/60)
	}
	n := int(hi - lo + 1)
	if n < 6 || n > 7*24*60 {
		return time.Time{}
	}
	counts := make([]int, n)
	total := 0
	for k, v := range mm {
		if i := int(k - lo); i >= 0 && i < n {
			counts[i] += v
			total += v
		}
	}
	firstIdx := int(first.Unix()/60 - lo)
	best, bestRatio := -1, 0.0
	before := 0
	for k := 1; k < n-2; k++ {
		before += counts[k-1]
		after := total - before
		if k <= firstIdx || after < 5 {
			continue
		}
		rb := (float64(before) + 0.5) / float64(k)
		ra := float64(after) / float64(n-k)
		if r := ra / rb; r >= 3 && r > bestRatio*1.2 {
			best, bestRatio = k, r
		}
	}
	if best < 0 {
		return time.Time{}
	}
	for best < n-1 && counts[best] == 0 {
		best++ // the jump begins with its first line
	}
	return time.Unix((lo+int64(best))*60, 0).UTC()
}

// Group mines a batch of lines with Drain and returns each line's
// template group (a cluster id).
func Group(lines []string) []int {
	d := NewDrain()
	out := make([]int, len(lines))
	for i, l := range lines {
		if c := d.Add(l); c != nil {
			out[i] = c.ID
		}
	}
	return out
}
