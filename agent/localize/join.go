package localize

import (
	"math/bits"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// MaxJoinSpans bounds the spans indexed for joining log lines to their
// spans (about 125 bytes each); spans beyond it join nothing.
const MaxJoinSpans = 1_000_000

// SpanJoin indexes the window's spans by span id, for what each operation
// (a service's span name) logs and calls per call: log lines carrying a
// span id are counted at their span's operation, and child spans at their
// parent's.
type SpanJoin struct {
	ids    spanTable // span id (its key) → span
	spans  []joinSpan
	parent []uint64 // parent span's key per span (0: none)
	opIdx  map[string]int32
	ops    [][2]string // service, operation
	lastOp int32       // the last span's
	calls  map[int32]map[int64]int
	events map[opEventKey]map[int64]int
	evIdx  map[string]int32
	evs    []string
	// formEv remembers the event of a line's tokens by the address of
	// its first token: a template miner hands over the same stored
	// tokens for every line of a form (analysis.Miner.Tokens), whose
	// event is then made once. An entry holds a copy of the tokens it was
	// made of and serves only tokens equal to them.
	formEv map[*string]formEvent
	// mu guards the events while lines are added from several
	// goroutines (the spans all indexed before, or the lines kept until
	// they are: Defer).
	mu     sync.Mutex
	joined bool // the child spans are counted
	// While deferring (Defer until SpansDone), lines wait for the spans:
	// their span keys and events are kept in pending (guarded by mu).
	deferring atomic.Bool
	pending   []*pendingLines
	nPending  int
	drained   *sync.Cond // signalled when the pending lines are joined
}

// pendingLines is a chunk of lines kept while the spans are read: span
// key and event per line.
type pendingLines struct {
	keys [pendingChunk]uint64
	evs  [pendingChunk]int32
	n    int
}

const pendingChunk = 1 << 15

// maxDeferredLines bounds the lines kept while the spans are read (12
// bytes each, 48 MB); a line beyond it waits for SpansDone.
var maxDeferredLines = 4_000_000

// formEvent is a remembered event (-1: none, the events being full) and
// the tokens it was made of (the first twelve, as the event).
type formEvent struct {
	toks []string
	ev   int32
}

// maxFormEvents bounds the remembered events of tokens.
const maxFormEvents = 100_000

type joinSpan struct {
	op     int32
	minute int64
}

type opEventKey struct{ op, ev int32 }

// NewSpanJoin returns an empty index.
func NewSpanJoin() *SpanJoin {
	return &SpanJoin{opIdx: map[string]int32{}, calls: map[int32]map[int64]int{},
		events: map[opEventKey]map[int64]int{}, evIdx: map[string]int32{}, formEv: map[*string]formEvent{}}
}

// Spans is how many spans are indexed.
func (j *SpanJoin) Spans() int {
	if j == nil {
		return 0
	}
	return len(j.spans)
}

// Defer lets lines be added while the spans are still being added (from
// other goroutines than the one adding spans): until SpansDone, a line's
// span key and event are kept, and joined when SpansDone is called. A
// caller reads its logs alongside its spans this way.
func (j *SpanJoin) Defer() {
	if j == nil {
		return
	}
	j.mu.Lock()
	if j.drained == nil {
		j.drained = sync.NewCond(&j.mu)
	}
	j.mu.Unlock()
	j.deferring.Store(true)
}

// SpansDone ends a Defer: the lines kept are joined to the spans added,
// and later lines are joined as they come. It is called on the goroutine
// that added the spans, after the last.
func (j *SpanJoin) SpansDone() {
	if j == nil || !j.deferring.Load() {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range j.pending {
		for k := range c.n {
			if si, ok := j.ids.get(c.keys[k]); ok {
				j.count(si, c.evs[k])
			}
		}
	}
	j.pending, j.nPending = nil, 0
	j.deferring.Store(false)
	j.drained.Broadcast()
}

// keep adds a line to the pending ones (with mu held).
func (j *SpanJoin) keep(key uint64, ev int32) {
	if ev < 0 {
		return
	}
	var c *pendingLines
	if n := len(j.pending); n > 0 && j.pending[n-1].n < pendingChunk {
		c = j.pending[n-1]
	} else {
		c = new(pendingLines)
		j.pending = append(j.pending, c)
	}
	c.keys[c.n], c.evs[c.n] = key, ev
	c.n++
	j.nPending++
}

// Add indexes one span. Spans are added before any line (or, after Defer,
// before SpansDone), from one goroutine.
func (j *SpanJoin) Add(s *evidence.Span) {
	if j == nil || s.SpanID == "" || s.Service == "" || s.Name == "" || len(j.spans) >= MaxJoinSpans {
		return
	}
	id := spanKey(s.SpanID)
	if id == 0 || !j.ids.add(id, int32(len(j.spans))) {
		return // none, or a duplicate
	}
	// Spans come grouped by service and operation: the last one's is
	// checked first.
	op := j.lastOp
	if len(j.ops) == 0 || j.ops[op][0] != s.Service || j.ops[op][1] != s.Name {
		key := s.Service + "\x00" + s.Name
		var ok bool
		if op, ok = j.opIdx[key]; !ok {
			op = int32(len(j.ops))
			j.opIdx[key] = op
			j.ops = append(j.ops, [2]string{s.Service, s.Name})
		}
		j.lastOp = op
	}
	minute := s.Start.Unix() / 60
	j.spans = append(j.spans, joinSpan{op: op, minute: minute})
	var parent uint64
	if s.ParentSpanID != "" {
		parent = spanKey(s.ParentSpanID)
	}
	j.parent = append(j.parent, parent)
	c := j.calls[op]
	if c == nil {
		c = map[int64]int{}
		j.calls[op] = c
	}
	c[minute]++
}

// event returns the index of an event (-1 when it is new and the events
// are full).
func (j *SpanJoin) event(event []byte) int32 {
	ev, ok := j.evIdx[string(event)]
	if !ok {
		if len(j.evs) >= 100_000 {
			return -1
		}
		ev = int32(len(j.evs))
		j.evIdx[string(event)] = ev
		j.evs = append(j.evs, string(event))
	}
	return ev
}

// spanTable maps span keys (never 0) to spans: open addressing with
// linear probing over one array, a lookup touching one cache line or two
// (a million spans are looked up once per line carrying an id).
type spanTable struct {
	slots []spanSlot
	n     int
	shift uint // 64 - log2(len(slots))
}

type spanSlot struct {
	key uint64 // 0: empty
	val int32
}

// slot is where the probe for key begins (Fibonacci hashing: span ids
// are often sequential).
func (t *spanTable) slot(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> t.shift }

// get returns the span of key.
func (t *spanTable) get(key uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(key); ; i = (i + 1) & mask {
		switch s := &t.slots[i]; s.key {
		case key:
			return s.val, true
		case 0:
			return 0, false
		}
	}
}

// add sets key's span unless key is there already (false).
func (t *spanTable) add(key uint64, val int32) bool {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key {
			return false
		}
		if s.key == 0 {
			s.key, s.val = key, val
			t.n++
			return true
		}
	}
}

// grow doubles the slots (at least 1024) and puts the keys back.
func (t *spanTable) grow() {
	old := t.slots
	size := max(2*len(old), 1024)
	t.slots, t.n = make([]spanSlot, size), 0
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	for _, s := range old {
		if s.key != 0 {
			t.add(s.key, s.val)
		}
	}
}

// count adds one event at the operation of span i.
func (j *SpanJoin) count(i, ev int32) {
	if ev < 0 {
		return
	}
	sp := j.spans[i]
	k := opEventKey{sp.op, ev}
	m := j.events[k]
	if m == nil {
		m = map[int64]int{}
		j.events[k] = m
	}
	m[sp.minute]++
}

// eventToks are the tokens an event is made of: the first twelve.
func eventToks(toks []string) []string {
	if len(toks) > 12 {
		return toks[:12]
	}
	return toks
}

// rememberedEvent returns the remembered event of tokens, if any.
func (j *SpanJoin) rememberedEvent(toks []string) (int32, bool) {
	toks = eventToks(toks)
	if len(toks) == 0 {
		return 0, false
	}
	e, ok := j.formEv[&toks[0]]
	if !ok || len(e.toks) != len(toks) {
		return 0, false
	}
	for i, t := range toks {
		if e.toks[i] != t { // equal stored strings compare by address first
			return 0, false
		}
	}
	return e.ev, true
}

// remember keeps the event of tokens, unless their address serves other
// tokens already (a caller's reused scratch slice).
func (j *SpanJoin) remember(toks []string, ev int32) {
	toks = eventToks(toks)
	if len(toks) == 0 || len(j.formEv) >= maxFormEvents {
		return
	}
	if _, ok := j.formEv[&toks[0]]; !ok {
		j.formEv[&toks[0]] = formEvent{toks: append([]string(nil), toks...), ev: ev}
	}
}

// spanKey is a span id's key: the 64-bit value of a 16-digit hex id (W3C
// Trace Context, every OpenTelemetry SDK), else an FNV-1a hash of its
// lower-cased text. 0 for none.
func spanKey(id string) uint64 {
	if len(id) == 16 {
		var v uint64
		ok := true
		for i := 0; i < 16 && ok; i++ {
			c := id[i]
			switch {
			case c >= '0' && c <= '9':
				v = v<<4 | uint64(c-'0')
			case c >= 'a' && c <= 'f':
				v = v<<4 | uint64(c-'a'+10)
			case c >= 'A' && c <= 'F':
				v = v<<4 | uint64(c-'A'+10)
			default:
				ok = false
			}
		}
		if ok {
			return v
		}
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// Trace and span ids in log lines: key-value and JSON forms (TraceID: …,
// trace_id=…, "traceId":"…", span_id=…) and Spring Sleuth's
// [app,traceId,spanId,exportable] prefix.
var (
	logSpanSleuth = regexp.MustCompile(`\[[\w.-]*,([0-9a-f]{16,32}),([0-9a-f]{16})(?:,\w*)?\]`)
)

// spanOfLine returns the span id a log line carries, lower-cased ("" for
// none).
func spanOfLine(text string) string {
	return strings.ToLower(rawSpanOfLine(text))
}

// rawSpanOfLine returns the span id a log line carries as written (16 hex
// digits in any case), or "".
func rawSpanOfLine(text string) string {
	// The key-value forms, read by hand: span, an optional separator,
	// id, an optional quote, a ':' or '=', an optional quote, 16 hex
	// digits (a regular expression over the whole line backtracks at
	// every position).
	for off := 0; off < len(text); {
		i := indexPan(text[off:])
		if i < 0 {
			break
		}
		i += off
		off = i + 3
		if i < 1 || text[i-1] != 's' && text[i-1] != 'S' || i >= 2 && isWordByte(text[i-2]) {
			continue
		}
		if id := kvSpanID(text[i+3:]); id != "" {
			return id
		}
	}
	if strings.IndexByte(text, ',') >= 0 && strings.IndexByte(text, '[') >= 0 {
		if m := logSpanSleuth.FindStringSubmatch(text); m != nil {
			return m[2]
		}
	}
	return ""
}

// kvSpanID reads what follows "span" in a key-value span id: an optional
// '_', '.' or '-', "id", an optional quote, spaces, ':' or '=', spaces, an
// optional quote and 16 hex digits not followed by a word character.
func kvSpanID(s string) string {
	i := 0
	if i < len(s) && (s[i] == '_' || s[i] == '.' || s[i] == '-') {
		i++
	}
	if i+2 > len(s) || s[i]|0x20 != 'i' || s[i+1]|0x20 != 'd' {
		return ""
	}
	i += 2
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) || s[i] != ':' && s[i] != '=' {
		return ""
	}
	i++
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	if i+16 > len(s) {
		return ""
	}
	for k := i; k < i+16; k++ {
		if c := s[k] | 0x20; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
	}
	if i+16 < len(s) && isWordByte(s[i+16]) {
		return ""
	}
	return s[i : i+16]
}

// isWordByte reports whether c is a regular-expression word character.
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// indexPan returns the index of the first "pan" in s in any case, or -1.
// The 'p's and 'P's are found with strings.IndexByte (vectorised), most
// lines having few.
func indexPan(s string) int {
	lo, up := strings.IndexByte(s, 'p'), strings.IndexByte(s, 'P')
	for lo >= 0 || up >= 0 {
		i := lo
		if i < 0 || up >= 0 && up < i {
			i = up
		}
		if i+3 > len(s) {
			return -1
		}
		if s[i+1]|0x20 == 'a' && s[i+2]|0x20 == 'n' {
			return i
		}
		if i == lo {
			if lo = strings.IndexByte(s[i+1:], 'p'); lo >= 0 {
				lo += i + 1
			}
		} else if up = strings.IndexByte(s[i+1:], 'P'); up >= 0 {
			up += i + 1
		}
	}
	return -1
}

// lineEvent is a log line's event: its first masked tokens (values,
// identifiers and timestamps masked), enough to tell one log statement
// from another.
func lineEvent(text string) string {
	return string(appendEvent(nil, analysis.Tokens(text)))
}

// appendEvent appends the event of a line's masked tokens (analysis.Tokens)
// to b: its first twelve. A token that reads as a value is one, as the
// template miner reads it, and so is a number glued to a word by a
// separator the masking does not split at ("time：175"): one statement is
// one event.
func appendEvent(b []byte, toks []string) []byte {
	if len(toks) > 12 {
		toks = toks[:12]
	}
	for i, t := range toks {
		if i > 0 {
			b = append(b, ' ')
		}
		// A plain word (no digit, dot or mask in it) is no value: most
		// tokens, checked cheaply.
		if !strings.HasPrefix(t, "<") && digitDotOrMask(t) {
			if t = maskGluedNumbers(t); analysis.ValueLike(t) {
				t = "<*>"
			}
		}
		b = append(b, t...)
	}
	return b
}

// digitDotOrMask reports whether t holds a digit, a '.' or a '<'.
func digitDotOrMask(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; c-'0' <= 9 || c == '.' || c == '<' {
			return true
		}
	}
	return false
}

// maskGluedNumbers masks each run of digits in a token that touches no
// letter ("time：175" → "time：<*>"; "v2" and "D1345" stay words).
func maskGluedNumbers(t string) string {
	isDigit := func(r rune) bool { return r >= '0' && r <= '9' }
	ascii, digit := true, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		ascii = ascii && c < utf8.RuneSelf
		digit = digit || c-'0' <= 9
	}
	if !digit {
		return t
	}
	if ascii {
		return maskGluedASCII(t)
	}
	rs := []rune(t)
	var b strings.Builder
	for i := 0; i < len(rs); {
		if !isDigit(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		for j < len(rs) && isDigit(rs[j]) {
			j++
		}
		if i > 0 && unicode.IsLetter(rs[i-1]) || j < len(rs) && unicode.IsLetter(rs[j]) {
			b.WriteString(string(rs[i:j]))
		} else {
			b.WriteString("<*>")
		}
		i = j
	}
	return b.String()
}

// maskGluedASCII is maskGluedNumbers for an ASCII token, whose letters are
// ASCII letters: it allocates only when a run is masked.
func maskGluedASCII(t string) string {
	letter := func(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
	var b []byte
	for i := 0; i < len(t); {
		if t[i]-'0' > 9 {
			if b != nil {
				b = append(b, t[i])
			}
			i++
			continue
		}
		j := i
		for j < len(t) && t[j]-'0' <= 9 {
			j++
		}
		if i > 0 && letter(t[i-1]) || j < len(t) && letter(t[j]) {
			if b != nil {
				b = append(b, t[i:j]...)
			}
		} else {
			if b == nil {
				b = append(make([]byte, 0, len(t)+4), t[:i]...)
			}
			b = append(b, "<*>"...)
		}
		i = j
	}
	if b == nil {
		return t
	}
	return string(b)
}

// joinChildren counts each span as an event of its parent's operation:
// what each operation calls.
func (j *SpanJoin) joinChildren() {
	if j.joined {
		return
	}
	j.joined = true
	for i, p := range j.parent {
		if p == 0 {
			continue
		}
		pi, ok := j.ids.get(p)
		if !ok {
			continue
		}
		child := j.ops[j.spans[i].op]
		// The child's minute is its parent's: a call belongs to the call
		// that made it.
		ev, ok := j.evIdx["\x01"+child[0]+"\x00"+child[1]]
		if !ok {
			ev = int32(len(j.evs))
			j.evIdx["\x01"+child[0]+"\x00"+child[1]] = ev
			j.evs = append(j.evs, "\x01"+child[0]+"\x00"+child[1])
		}
		k := opEventKey{j.spans[pi].op, ev}
		m := j.events[k]
		if m == nil {
			m = map[int64]int{}
			j.events[k] = m
		}
		m[j.spans[pi].minute]++
	}
}

// AddLine counts a log line at the operation of the span whose id it
// carries (nothing for a line without one, or of a span not indexed). It
// may be called from several goroutines once every span is added.
func (j *SpanJoin) AddLine(text string) { j.addLine(text, nil) }

// AddLineTokens is AddLine for a line already tokenised with
// analysis.Tokens (the template miner's Tokens): the line is not
// tokenised again.
func (j *SpanJoin) AddLineTokens(text string, toks []string) {
	if toks != nil {
		j.addLine(text, toks)
	}
}

func (j *SpanJoin) addLine(text string, toks []string) {
	if j == nil {
		return
	}
	deferred := j.deferring.Load()
	if !deferred && len(j.spans) == 0 {
		return
	}
	id := rawSpanOfLine(text)
	if id == "" {
		return
	}
	key := spanKey(id)
	var si int32
	if !deferred {
		var ok bool
		if si, ok = j.ids.get(key); !ok {
			return
		}
	}
	j.mu.Lock()
	ev, ok := j.rememberedEvent(toks)
	if !ok {
		j.mu.Unlock()
		given := toks != nil
		if !given {
			toks = analysis.Tokens(text)
		}
		var buf [256]byte
		e := appendEvent(buf[:0], toks)
		j.mu.Lock()
		ev = j.event(e)
		if given {
			j.remember(toks, ev)
		}
	}
	if deferred {
		for j.deferring.Load() && j.nPending >= maxDeferredLines {
			j.drained.Wait()
		}
		if j.deferring.Load() {
			j.keep(key, ev)
			j.mu.Unlock()
			return
		}
		// The spans are all in since: the line joins now.
		if si, ok = j.ids.get(key); !ok {
			j.mu.Unlock()
			return
		}
	}
	j.count(si, ev)
	j.mu.Unlock()
}

// OpEvents returns, per operation and event, the operation's calls and the
// event's occurrences per minute (the child spans counted first).
func (j *SpanJoin) OpEvents() []OpEvent {
	if j == nil {
		return nil
	}
	j.SpansDone()
	j.joinChildren()
	keys := make([]opEventKey, 0, len(j.events))
	for k := range j.events {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].op != keys[b].op {
			return keys[a].op < keys[b].op
		}
		return keys[a].ev < keys[b].ev
	})
	// A service's log covers the minutes in which a line joined one of
	// its spans: logs are often kept for less time than traces, and calls
	// in a minute without its log say nothing about what it logs per call.
	covered := map[string]map[int64]bool{}
	for k, m := range j.events {
		if strings.HasPrefix(j.evs[k.ev], "\x01") {
			continue
		}
		svc := j.ops[k.op][0]
		if covered[svc] == nil {
			covered[svc] = map[int64]bool{}
		}
		for minute := range m {
			covered[svc][minute] = true
		}
	}
	logCalls := map[int32]map[int64]int{}
	var out []OpEvent
	for _, k := range keys {
		op := j.ops[k.op]
		ev := j.evs[k.ev]
		e := OpEvent{Service: op[0], Operation: op[1], Calls: j.calls[k.op], Counts: j.events[k]}
		if !strings.HasPrefix(ev, "\x01") {
			lc, ok := logCalls[k.op]
			if !ok {
				lc = map[int64]int{}
				for minute, n := range j.calls[k.op] {
					if covered[op[0]][minute] {
						lc[minute] = n
					}
				}
				logCalls[k.op] = lc
			}
			e.Calls = lc
		}
		if child, ok := strings.CutPrefix(ev, "\x01"); ok {
			svc, name, _ := strings.Cut(child, "\x00")
			e.Event = name
			if svc != op[0] {
				e.Event = svc + " " + name
			}
			e.Error = ErrorHandlerSpan(name)
		} else {
			e.Event, e.Log, e.Error = ev, true, analysis.ErrorLike(ev)
		}
		out = append(out, e)
	}
	return out
}
