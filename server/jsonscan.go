package server

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// checkJSONAmbiguity refuses what encoding/json would accept but silently
// resolve one way: an object with the same key twice (the last one wins,
// so two readers of the same body may disagree; keys that differ only in
// case count, since struct fields match case-insensitively), and a \u
// escape of a lone UTF-16 surrogate (replaced with U+FFFD, so what is
// stored differs from what was sent). It expects a body that is valid
// UTF-8; syntax errors are left to the decoder.
func checkJSONAmbiguity(b []byte) error {
	type frame struct {
		object    bool
		expectKey bool
		keys      map[string]string // folded key → key as sent
	}
	var stack []*frame
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{':
			stack = append(stack, &frame{object: true, expectKey: true, keys: map[string]string{}})
		case '[':
			stack = append(stack, &frame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].expectKey = true
			}
		case '"':
			s, end, err := scanJSONString(b, i)
			if err != nil {
				return err
			}
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				top := stack[n-1]
				folded := strings.ToLower(s)
				if prev, dup := top.keys[folded]; dup {
					if prev == s {
						return fmt.Errorf("duplicate key %q in a JSON object (byte offset %d)", s, i)
					}
					return fmt.Errorf("duplicate key %q in a JSON object: %q differs only in case (byte offset %d)", s, prev, i)
				}
				top.keys[folded] = s
				top.expectKey = false
			}
			i = end
		}
	}
	return nil
}

// scanJSONString decodes the string starting at b[start] (a '"') and
// returns its value and the offset of its closing quote. A lone surrogate
// escape is an error naming the offset.
func scanJSONString(b []byte, start int) (string, int, error) {
	var sb strings.Builder
	for i := start + 1; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			return sb.String(), i, nil
		case c != '\\':
			sb.WriteByte(c)
			continue
		}
		if i+1 >= len(b) {
			return sb.String(), len(b), nil
		}
		i++
		switch b[i] {
		case 'u':
			r, ok := hex4(b, i+1)
			if !ok {
				return sb.String(), i, nil // a syntax error: the decoder names it
			}
			i += 4
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00:
				// A high surrogate must be followed by a low one.
				if i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
					if lo, ok := hex4(b, i+3); ok && lo >= 0xDC00 && lo <= 0xDFFF {
						sb.WriteRune(utf16.DecodeRune(r, lo))
						i += 6
						continue
					}
				}
				return "", 0, fmt.Errorf("invalid JSON string: \\u%04x at byte offset %d is a lone UTF-16 surrogate", r, i-5)
			case utf16.IsSurrogate(r):
				return "", 0, fmt.Errorf("invalid JSON string: \\u%04x at byte offset %d is a lone UTF-16 surrogate", r, i-5)
			}
			var buf [utf8.UTFMax]byte
			sb.Write(buf[:utf8.EncodeRune(buf[:], r)])
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		default:
			sb.WriteByte(b[i])
		}
	}
	return sb.String(), len(b), nil
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}
