// Package analysis holds the pure algorithms of an investigation: log
// template mining (online Drain and a batch pass by positional token
// frequency) with masking of variable values, robust statistics
// (median, MAD, robust z-scores) for metric anomaly bands, change-point
// detection, correlation of aligned series, and rate helpers for counters.
// Nothing here performs I/O; every function is deterministic.
package analysis

import (
	"bytes"
	"strings"
)

// Placeholder tokens written by Mask in place of variable values.
const (
	Wildcard = "<*>"   // a value Drain found to vary
	maskNum  = "<NUM>" // integers, decimals, sizes, durations
	maskHex  = "<HEX>" // hex strings and 0x literals
	maskUUID = "<UUID>"
	maskIP   = "<IP>" // IPv4 or IPv6, with optional port
	maskQuot = "<STR>"
	maskTime = "<TS>" // dates and times of day
)

// Tokens splits a log line on whitespace and masks variable values in each
// token (numbers, hex, UUIDs, IP addresses, durations, quoted values,
// timestamps), in the manner of Coroot's logparser, so that lines differing
// only by such values share a template. Quoted values spanning spaces become
// one token.
func Tokens(line string) []string {
	k := lineKey{key: make([]byte, 0, len(line)+16), ends: make([]int, 0, 16)}
	k.read(line)
	return k.tokens(make([]string, 0, len(k.ends)))
}

// lineKey is a line's masked tokens written one after another into key,
// separated by 0 bytes (the Miner's key of a distinct masked line), with
// the end of each in ends. A caller that tokenises line after line reuses
// one lineKey: a line costs no allocation until its tokens are needed as
// strings.
type lineKey struct {
	key   []byte
	ends  []int
	month bool // a token of letters begins as a month name does
}

// read sets k to the masked tokens of line.
func (k *lineKey) read(line string) {
	k.key, k.ends, k.month = k.key[:0], k.ends[:0], false
	i := 0
	n := len(line)
	request := false // the token before was a quoted HTTP request line
	for i < n {
		for i < n && byteClass[line[i]]&cSpace != 0 {
			i++
		}
		if i >= n {
			break
		}
		// A quoted value: up to the matching quote, masked as a whole.
		if q := line[i]; q == '"' || q == '\'' || q == '`' {
			if j := strings.IndexByte(line[i+1:], q); j >= 0 {
				quoted := line[i+1 : i+1+j]
				request = strings.Contains(quoted, " HTTP/")
				k.next()
				if m, _, ok := strings.Cut(quoted, " "); request && ok && isMethod(m) {
					// An HTTP request line: its method tells lines apart.
					k.key = append(append(append(append(append(k.key, q), m...), ' '), maskQuot...), q)
				} else {
					k.key = append(k.key, maskQuot...)
				}
				k.ends = append(k.ends, len(k.key))
				i += j + 2
				continue
			}
		}
		// The token's end, and the classes of its bytes.
		j, cls := i, uint16(0)
		for j < n {
			c := byteClass[line[j]]
			if c&cSpace != 0 {
				break
			}
			cls |= c
			j++
		}
		// The status code after an access log's request line ("GET /x
		// HTTP/1.1" 429) tells lines apart: a 429 or 503 is not a 200.
		tok := line[i:j]
		last := len(k.ends) - 1
		switch {
		case request && isStatusCode(tok):
			k.next()
			k.key = append(k.key, tok...)
		case last >= 0 && bytes.HasSuffix(k.key, []byte(maskNum)) && isUnit(tok):
			// A quantity and its unit are one value ("1.5 KB", "<1 sec"):
			// the token before is the key's last.
			k.key = append(append(k.key, ' '), tok...)
			k.ends = k.ends[:last]
		default:
			k.next()
			start := len(k.key)
			changed := false
			if cls&cDigit != 0 { // every masked kind holds a digit
				k.key, changed = appendMaskToken(k.key, tok)
			}
			if !changed {
				k.key = append(k.key, tok...)
				if cls&^(cLetter|cPunct|cDot) == 0 && monthPrefix(tok) && wordIn(monthNames, tok) {
					k.month = true // maybe a date in words
				}
			}
			if last >= 0 && strings.HasPrefix(tok, "(") && bytes.HasSuffix(k.key[start:], []byte(maskNum)) && j < n && parenUnit(line[j:]) {
				// A restated quantity in parentheses ("1344 bytes (1.31
				// KB)") joins the value before it.
				c := j + 1 + strings.IndexByte(line[j+1:], ')')
				k.key[start-1] = ' ' // the separator
				k.key = append(k.key, line[j:c+1]...)
				k.ends = k.ends[:last]
				j = c + 1
			}
		}
		k.ends = append(k.ends, len(k.key))
		request = false
		i = j
	}
	if k.month {
		k.maskDates()
	}
}

// next starts a token: a separator after the one before.
func (k *lineKey) next() {
	if len(k.ends) > 0 {
		k.key = append(k.key, 0)
	}
}

// token returns the bytes of token i.
func (k *lineKey) token(i int) []byte {
	start := 0
	if i > 0 {
		start = k.ends[i-1] + 1
	}
	return k.key[start:k.ends[i]]
}

// tokens appends the tokens to out[:0] as strings (substrings of one new
// string).
func (k *lineKey) tokens(out []string) []string {
	if len(k.ends) == 0 {
		return out[:0]
	}
	return k.tokensOf(string(k.key), out)
}

// tokensOf appends the tokens to out[:0] as substrings of s, the key as a
// string.
func (k *lineKey) tokensOf(s string, out []string) []string {
	out = out[:0]
	start := 0
	for _, end := range k.ends {
		out = append(out, s[start:end])
		start = end + 1
	}
	return out
}

// maskDates masks dates written in words (see maskDates), rewriting the
// key only for a line with a month name in it.
func (k *lineKey) maskDates() {
	month := false
	for i := range k.ends {
		if t := k.token(i); monthPrefix(string(t)) && wordIn(monthNames, string(t)) {
			month = true
			break
		}
	}
	if !month {
		return
	}
	toks := k.tokens(nil)
	maskDates(toks)
	k.key, k.ends = k.key[:0], k.ends[:0]
	for _, t := range toks {
		k.next()
		k.key = append(k.key, t...)
		k.ends = append(k.ends, len(k.key))
	}
}

var (
	monthNames = map[string]bool{"jan": true, "feb": true, "mar": true, "apr": true, "may": true, "jun": true, "jul": true, "aug": true,
		"sep": true, "sept": true, "oct": true, "nov": true, "dec": true, "january": true, "february": true, "march": true, "april": true,
		"june": true, "july": true, "august": true, "september": true, "october": true, "november": true, "december": true}
	dayNames = map[string]bool{"mon": true, "tue": true, "wed": true, "thu": true, "fri": true, "sat": true, "sun": true, "monday": true,
		"tuesday": true, "wednesday": true, "thursday": true, "friday": true, "saturday": true, "sunday": true}
)

// maskDates masks dates written in words inside a line ("at Fri Jun 17
// 20:55:07 2005"): a month name next to a masked number or time, and the
// day name before it, are parts of a timestamp.
func maskDates(toks []string) {
	for i, t := range toks {
		if !monthPrefix(t) || !wordIn(monthNames, t) {
			continue
		}
		next := i+1 < len(toks) && (strings.HasPrefix(toks[i+1], maskNum) || strings.HasPrefix(toks[i+1], maskTime))
		prev := i > 0 && (strings.HasSuffix(strings.TrimRight(toks[i-1], ","), maskNum))
		if !next && !prev {
			continue
		}
		toks[i] = maskTime
		if i > 0 && wordIn(dayNames, toks[i-1]) {
			toks[i-1] = maskTime
		}
	}
}

// monthPrefix reports whether t begins as a month name does (its first
// two letters, in any case): a cheap test before the set lookup, which
// most words fail.
func monthPrefix(t string) bool {
	return len(t) >= 3 && monthPrefix2(t[0], t[1])
}

// monthPrefix2 reports whether a word's first two letters are a month
// name's, in any case.
func monthPrefix2(a, b byte) bool {
	switch uint16(a|0x20)<<8 | uint16(b|0x20) {
	case 'j'<<8 | 'a', 'f'<<8 | 'e', 'm'<<8 | 'a', 'a'<<8 | 'p', 'j'<<8 | 'u', 'a'<<8 | 'u', 's'<<8 | 'e', 'o'<<8 | 'c', 'n'<<8 | 'o', 'd'<<8 | 'e':
		return true
	}
	return false
}

// wordIn reports whether a token of 3 to 9 ASCII letters (with a
// trailing ',' or '.') is in a set of lower-case words, without
// allocating.
func wordIn(set map[string]bool, t string) bool {
	if len(t) < 3 {
		return false // trimming only shortens it
	}
	for len(t) > 0 && (t[len(t)-1] == ',' || t[len(t)-1] == '.') {
		t = t[:len(t)-1]
	}
	if len(t) < 3 || len(t) > 9 {
		return false
	}
	var buf [9]byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c < 'a' || c > 'z':
			return false
		}
		buf[i] = c
	}
	return set[string(buf[:len(t)])]
}

var methods = map[string]bool{"GET": true, "POST": true, "PUT": true, "DELETE": true, "PATCH": true, "HEAD": true, "OPTIONS": true, "CONNECT": true, "TRACE": true}

func isMethod(s string) bool { return methods[s] }

// unitWord reports the units of quantities written apart from their
// number (lower case).
func unitWord(s string) bool {
	switch s {
	case "ms", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hour", "hours", "day", "days",
		"b", "byte", "bytes", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "%":
		return true
	}
	return false
}

func isUnit(tok string) bool {
	for len(tok) > 0 {
		switch tok[len(tok)-1] {
		case ',', ';', '.', ')':
			tok = tok[:len(tok)-1]
			continue
		}
		break
	}
	// Units are short ASCII words: lower-case them without allocating.
	var buf [8]byte
	if len(tok) > len(buf) {
		return false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c >= 0x80 {
			return unitWord(strings.ToLower(tok)) // non-ASCII: Unicode case rules
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return unitWord(string(buf[:len(tok)]))
}

// parenUnit reports whether s (after a "(number" token) continues with
// " unit)" and nothing else before the parenthesis closes.
func parenUnit(s string) bool {
	s = strings.TrimLeft(s, " ")
	k := strings.IndexByte(s, ')')
	if k <= 0 || strings.ContainsAny(s[:k], " \t(") {
		return false
	}
	return isUnit(s[:k])
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

func isSpace(c byte) bool { return byteClass[c]&cSpace != 0 }

// Classes of bytes (byteClass), for scanning a token once.
const (
	cSpace  = 1 << iota // ' ', '\t', '\n', '\r': tokens end
	cDigit              // '0' – '9'
	cHex                // 'a' – 'f', 'A' – 'F'
	cAlpha              // the other ASCII letters
	cPunct              // isPunct's but '.'
	cDot                // '.'
	cColon              // ':'
	cSlash              // '/'
	cOther              // any other byte ('-', '_', '=', non-ASCII...)
	cLetter = cHex | cAlpha
)

var byteClass = func() (t [256]uint16) {
	for c := range t {
		t[c] = cOther
	}
	for _, c := range " \t\n\r" {
		t[c] = cSpace
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = cDigit
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = cAlpha, cAlpha
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c], t[c-'a'+'A'] = cHex, cHex
	}
	for _, c := range "()[]{}<>,;\"'`!?" {
		t[c] = cPunct
	}
	t['.'], t[':'], t['/'] = cDot, cColon, cSlash
	return t
}()

// classes returns the classes of the bytes of s.
func classes(s string) (c uint16) {
	for i := 0; i < len(s); i++ {
		c |= byteClass[s[i]]
	}
	return c
}

// MaskToken masks one whitespace-free token. Leading and trailing punctuation
// is kept (so "(10.0.0.1:5432)," becomes "(<IP>),"); key=value tokens keep
// the key.
func MaskToken(tok string) string {
	b, changed := appendMaskToken(nil, tok)
	if !changed {
		return tok
	}
	return string(b)
}

// appendMaskToken appends the masked token to dst when masking changes
// it (changed true); otherwise it returns dst as it was.
func appendMaskToken(dst []byte, tok string) ([]byte, bool) {
	if tok == "" || !hasDigit(tok) {
		return dst, false // every masked kind holds a digit
	}
	// key=value and key:value with a variable value keep their key.
	if k := strings.IndexByte(tok, '='); k > 0 && k < len(tok)-1 {
		// An HTTP status (status=429) is what a line is about.
		if isStatusCode(trimQuotes(tok[k+1:], true)) && statusKeys[strings.ToLower(trimQuotes(tok[:k], false))] {
			return dst, false
		}
		n := len(dst)
		out, changed := appendMaskToken(append(dst, tok[:k+1]...), tok[k+1:])
		if !changed {
			return out[:n], false
		}
		return out, true
	}
	start, end := 0, len(tok)
	for start < end && isPunct(tok[start]) {
		start++
	}
	for end > start && (isPunct(tok[end-1]) || tok[end-1] == ':') {
		end--
	}
	core := tok[start:end]
	if core == "" {
		return dst, false
	}
	n := len(dst)
	out := append(dst, tok[:start]...)
	m := len(out)
	out = appendMaskCore(out, core)
	if string(out[m:]) == core {
		return out[:n], false
	}
	return append(out, tok[end:]...), true
}

// trimQuotes is strings.Trim(s, `"'`), or strings.Trim(s, `"',`) with
// comma, without building a cutset per call.
func trimQuotes(s string, comma bool) string {
	cut := func(c byte) bool { return c == '"' || c == '\'' || comma && c == ',' }
	for len(s) > 0 && cut(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && cut(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isPunct(c byte) bool { return byteClass[c]&(cPunct|cDot) != 0 }

// appendMaskCore classifies a token without surrounding punctuation: it
// appends the masked form of s (s itself when nothing in
// it is masked) to dst.
func appendMaskCore(dst []byte, s string) []byte {
	cls := classes(s)
	if len(s) != 36 && cls&(cDigit|cColon) == 0 {
		// Every kind below needs a digit, except a UUID (36 long) and an
		// IPv6 address (with a ':') written in hex letters only.
		return append(dst, s...)
	}
	if cls == cDigit { // all digits
		// What the cases below make of a plain integer: a long one reads
		// as hex (an id), the others as a number.
		if len(s) >= 12 {
			return append(dst, maskHex...)
		}
		return append(dst, maskNum...)
	}
	// The classes rule out most kinds before their scan: an IP address
	// has only hex digits and separators, a hex string only hex digits
	// (or a 0x), a number no ':' or '/', a time no hex letter.
	switch {
	case isUUID(s):
		return append(dst, maskUUID...)
	case (s[0] == '[' || cls&^(cDigit|cHex|cDot|cColon|cSlash) == 0 && cls&(cDot|cColon) != 0) && isIP(s):
		return append(dst, maskIP...)
	case (cls&^(cDigit|cHex) == 0 || s[0] == '0' && len(s) > 2 && s[1]|0x20 == 'x') && isHex(s):
		return append(dst, maskHex...)
	case cls&(cColon|cSlash) == 0 && isNumberish(s):
		return append(dst, maskNum...)
	case cls&cHex == 0 && isTimeish(s):
		return append(dst, maskTime...)
	}
	// host:port and path/segments with variable parts.
	if k := strings.LastIndexByte(s, ':'); k > 0 && k < len(s)-1 && allDigits(s[k+1:]) {
		host := s[:k]
		if isIP(host) {
			return append(dst, maskIP...)
		}
		return append(append(dst, s[:k+1]...), maskNum...)
	}
	// Identifiers with numeric parts (blk_-1608999687919862906,
	// job_1445144423722_0020, core.4721): the numbers go, the words stay.
	if out, ok := appendNumericParts(dst, s); ok {
		return out
	}
	if cls&cSlash != 0 && cls&cDigit != 0 {
		// Each segment masked on its own.
		start := 0
		for i := 0; i <= len(s); i++ {
			if i < len(s) && s[i] != '/' {
				continue
			}
			if p := s[start:i]; p != "" {
				dst = appendMaskCore(dst, p)
			}
			if i < len(s) {
				dst = append(dst, '/')
			}
			start = i + 1
		}
		return dst
	}
	return append(dst, s...)
}

// appendNumericParts appends the masked form of s by maskNumericParts when
// one of its parts is masked (ok), without building a string when no
// sign is in the way.
func appendNumericParts(dst []byte, s string) ([]byte, bool) {
	sep, signed := numericSeparators(s)
	if !sep {
		return dst, false
	}
	if signed {
		m, ok := maskNumericParts(s)
		if !ok {
			return dst, false
		}
		return append(dst, m...), true
	}
	n := len(dst)
	changed := false
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '_' && s[i] != '.' && s[i] != '-' && s[i] != '#' && s[i] != ',' {
			continue
		}
		if part := s[start:i]; allDigits(part) {
			dst = append(dst, maskNum...)
			changed = true
		} else {
			dst = append(dst, part...)
		}
		if i < len(s) {
			dst = append(dst, s[i])
		}
		start = i + 1
	}
	if !changed {
		return dst[:n], false
	}
	return dst, true
}

// numericSeparators reports whether s joins parts by '_', '.', '-', '#' or
// ',' (sep; never when s holds a '/'), and whether a '-' follows '_' or
// '.' (signed: "_-" or ".-", a sign a rewrite part by part may drop).
func numericSeparators(s string) (sep, signed bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '-':
			signed = signed || i > 0 && (s[i-1] == '_' || s[i-1] == '.')
			sep = true
		case '_', '.', '#', ',':
			sep = true
		case '/':
			return false, false
		}
	}
	return sep, signed
}

// maskNumericParts masks the all-digit parts of a token joined by '_',
// '.', '-', '#' or ',' (a '-' before digits belongs to them); ok when one
// was.
func maskNumericParts(s string) (string, bool) {
	sep, signed := numericSeparators(s)
	if !sep {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	changed := false
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '_' && s[i] != '.' && s[i] != '-' && s[i] != '#' && s[i] != ',' {
			continue
		}
		part := s[start:i]
		if allDigits(part) {
			b.WriteString(maskNum)
			changed = true
		} else {
			b.WriteString(part)
		}
		if i < len(s) {
			b.WriteByte(s[i])
		}
		start = i + 1
	}
	if !changed {
		return s, false
	}
	// A '-' between a separator and a number is its sign.
	out := b.String()
	if !signed {
		return out, true // parts are copied whole: no "_-" or ".-" without one in s
	}
	out = strings.ReplaceAll(out, "_-"+maskNum, "_"+maskNum)
	return strings.ReplaceAll(out, ".-"+maskNum, "."+maskNum), true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool { return byteClass[c]&(cDigit|cHex) != 0 }

// isHex: 0x literals, or runs of at least 6 hex digits holding a digit and
// a letter (commit SHAs, trace IDs, pod template hashes are shorter and left
// to Drain).
func isHex(s string) bool {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		for i := 2; i < len(s); i++ {
			if !isHexDigit(s[i]) {
				return false
			}
		}
		return true
	}
	if len(s) < 6 {
		return false
	}
	digit, letter := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isHexDigit(c) {
			return false
		}
		if c <= '9' {
			digit = true
		} else {
			letter = true
		}
	}
	return digit && (letter || len(s) >= 12)
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHexDigit(s[i]) {
				return false
			}
		}
	}
	return true
}

// isIP reports IPv4 (optionally with :port or /prefix) and IPv6 literals.
func isIP(s string) bool {
	if s == "" {
		return false
	}
	if s[0] != '[' {
		// Only hex digits and the separators of the forms below, with a
		// '.' or a ':' (IPv4 has dots, IPv6 colons).
		sep := false
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '.' || c == ':':
				sep = true
			case !isHexDigit(c) && c != '/':
				return false
			}
		}
		if !sep {
			return false
		}
	}
	if strings.HasPrefix(s, "[") {
		if k := strings.Index(s, "]"); k > 0 {
			return isIPv6(s[1:k])
		}
	}
	if k := indexColonSlash(s); k > 0 && strings.Count(s, ":") <= 1 {
		if isIPv4(s[:k]) && allDigits(s[k+1:]) {
			return true
		}
	}
	return isIPv4(s) || isIPv6(s)
}

// indexColonSlash is strings.IndexAny(s, ":/") without building a set.
func indexColonSlash(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' || s[i] == '/' {
			return i
		}
	}
	return -1
}

func isIPv4(s string) bool {
	parts := 0
	cur := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if cur == 0 || cur > 3 {
				return false
			}
			parts++
			cur = 0
			continue
		}
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		cur++
	}
	return parts == 4
}

func isIPv6(s string) bool {
	if !strings.Contains(s, "::") && strings.Count(s, ":") != 7 {
		return false
	}
	hexd := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ':' {
			continue
		}
		if !isHexDigit(c) && c != '.' {
			return false
		}
		hexd++
	}
	return hexd > 0
}

// isNumberish: integers, decimals, signed numbers, percentages, and numbers
// with a unit suffix (12ms, 1.5s, 256Mi, 10KB, 3x, 2h45m0s).
func isNumberish(s string) bool {
	i := 0
	if s[0] == '-' || s[0] == '+' {
		i = 1
	}
	if i >= len(s) || s[i] < '0' || s[i] > '9' {
		return false
	}
	digits, letters := 0, 0
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' || c == ',' || c == '%' || c == '_':
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == 'µ':
			letters++
		default:
			return false
		}
	}
	// Units are short; long alphanumeric runs are identifiers.
	return letters <= 3 || (letters <= 6 && digits >= letters)
}

// isTimeish: dates and clock times (2024-01-02, 10:42:00, 2024-01-02T10:42:00Z).
func isTimeish(s string) bool {
	if len(s) < 5 || s[0] < '0' || s[0] > '9' {
		return false
	}
	digits, seps := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '-' || c == ':' || c == '.' || c == 'T' || c == 'Z' || c == '+' || c == '/':
			seps++
		default:
			return false
		}
	}
	return digits >= 4 && seps >= 1
}

var statusKeys = map[string]bool{"status": true, "code": true, "status_code": true, "statuscode": true, "http_status": true, "response_code": true, "http.status_code": true}

// isStatusCode reports whether tok is an HTTP status code (100–599).
func isStatusCode(tok string) bool {
	return len(tok) == 3 && tok[0] >= '1' && tok[0] <= '5' && allDigits(tok)
}
