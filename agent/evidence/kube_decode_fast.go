package evidence

import (
	"bytes"
	"encoding/json"
)

// Reading a file of kubectl output with encoding/json's stream decoder
// scans every item's bytes six times: the decoder reads the item into a
// json.RawMessage (two scans), its head (kind, apiVersion, name) is
// unmarshalled from it (a validation scan and a decoding scan), and the
// typed object again (two more). A file that is one valid JSON value —
// nearly every file of a bundle — is checked once with json.Valid, its
// top level and items are then walked by the plain byte skipper below, and
// each item's head is read by the same skipper, so that only the typed
// object is unmarshalled by encoding/json. Whatever the skipper cannot
// read exactly as encoding/json would (a key or string with an escape or
// a non-ASCII byte, a value of an unexpected type) sends the file, or the
// item's head, back to the decoder: the items, lines and errors are the
// same either way.

// validJSONFast turns the skipper on (tests compare it with the decoder).
var validJSONFast = true

// lineCounter returns the 1-based line of a byte offset in data (LineAt),
// or lineBase for every offset when lineBase is not 0. Offsets asked in
// increasing order, as the items of a file are, are counted on from the
// last one instead of from the start.
func lineCounter(data []byte, lineBase int) func(int64) int {
	if lineBase > 0 {
		return func(int64) int { return lineBase }
	}
	var lastOff int64
	lastLine := 1
	return func(off int64) int {
		off = max(0, min(off, int64(len(data))))
		if off < lastOff {
			return LineAt(data, off)
		}
		lastLine += bytes.Count(data[lastOff:off], []byte{'\n'})
		lastOff = off
		return lastLine
	}
}

// decodeJSONValid reads data as decodeJSONStream does when data is one
// valid JSON object; ok is false, and fn has received nothing, when it is
// not, or when the walk meets something the skipper leaves to the decoder.
func decodeJSONValid(file string, data []byte, hintKind string, line func(int64) int, fn func(KubeItem)) (err error, ok bool) {
	if !json.Valid(data) {
		return nil, false
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	start := i
	var kind, apiVersion string
	var items []rawItem
	isList := false
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] != '}' {
		key, next, ok := plainString(data, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(data, skipSpace(data, next)+1) // past the colon
		switch key {
		case "kind", "apiVersion":
			var s string
			switch data[i] {
			case '"':
				v, next, ok := plainString(data, i)
				if !ok {
					return nil, false
				}
				s, i = v, next
			case 'n': // null: the decoder leaves the string empty
				i += len("null")
			default:
				return nil, false
			}
			if key == "kind" {
				kind = s
			} else {
				apiVersion = s
			}
		case "items":
			isList = true
			switch data[i] {
			case 'n':
				i += len("null")
			case '[':
				i = skipSpace(data, i+1)
				for data[i] != ']' {
					end := skipJSON(data, i)
					items = append(items, rawItem{raw: data[i:end:end], off: int64(i)})
					i = skipSpace(data, end)
					if data[i] == ',' {
						i = skipSpace(data, i+1)
					}
				}
				i++
			default:
				return nil, false
			}
		default:
			i = skipJSON(data, i)
		}
		i = skipSpace(data, i)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	end := int64(i + 1)
	return emitObject(file, data, int64(start), end, kind, apiVersion, isList, items, hintKind, line, fn), true
}

// readItemHead reads an item's kind, apiVersion and metadata's name and
// namespace as json.Unmarshal into an itemHead does (keys matched without
// regard to case, the last of repeated keys winning, null leaving a field
// as it is). ok is false when raw is not an object or holds something the
// decoder would read differently or refuse.
func readItemHead(raw []byte) (h itemHead, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return h, false
	}
	ok = true
	i = walkObject(raw, i, func(key string, v int) int {
		switch {
		case equalFoldASCII(key, "kind"):
			return plainField(raw, v, &h.Kind, &ok)
		case equalFoldASCII(key, "apiVersion"):
			return plainField(raw, v, &h.APIVersion, &ok)
		case equalFoldASCII(key, "metadata"):
			switch raw[v] {
			case 'n':
				return v + len("null")
			case '{':
				end := walkObject(raw, v, func(key string, v int) int {
					switch {
					case equalFoldASCII(key, "name"):
						return plainField(raw, v, &h.Metadata.Name, &ok)
					case equalFoldASCII(key, "namespace"):
						return plainField(raw, v, &h.Metadata.Namespace, &ok)
					}
					return skipJSON(raw, v)
				})
				if end > 0 {
					return end
				}
			}
			ok = false
		}
		return skipJSON(raw, v)
	})
	return h, ok && i > 0
}

// walkObject calls field with each key of the object whose '{' is at
// data[i] and the offset of its value; field returns the offset after the
// value. walkObject returns the offset after the object, or -1 when a key
// is not a plain string.
func walkObject(data []byte, i int, field func(key string, v int) int) int {
	i = skipSpace(data, i+1)
	for data[i] != '}' {
		key, next, ok := plainString(data, i)
		if !ok {
			return -1
		}
		v := skipSpace(data, skipSpace(data, next)+1)
		i = skipSpace(data, field(key, v))
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return i + 1
}

// plainField reads a string or null value at data[v] into *dst (null
// leaves it as it is); any other value, or a string that is not plain,
// clears *ok.
func plainField(data []byte, v int, dst *string, ok *bool) int {
	switch data[v] {
	case '"':
		s, next, plain := plainString(data, v)
		if plain {
			*dst = s
			return next
		}
	case 'n':
		return v + len("null")
	}
	*ok = false
	return skipJSON(data, v)
}

// plainString reads the string whose opening quote is at data[i] when it
// holds neither an escape nor a non-ASCII byte (it then reads the same as
// encoding/json reads it); next is the offset after its closing quote.
func plainString(data []byte, i int) (s string, next int, ok bool) {
	if data[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return string(data[i+1 : j]), j + 1, true
		case c == '\\' || c >= 0x80:
			return "", 0, false
		}
	}
	return "", 0, false
}

// skipJSON returns the offset after the JSON value starting at data[i];
// data must be valid JSON.
func skipJSON(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = skipString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
		j++
	}
	return j
}

// skipString returns the offset after the string whose opening quote is
// at data[i].
func skipString(data []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return len(data)
		}
		j += k
		n := 0
		for b := j - 1; b > i && data[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// equalFoldASCII is strings.EqualFold for ASCII s and t, as encoding/json
// matches a key to a field's name.
func equalFoldASCII(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
