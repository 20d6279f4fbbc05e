package otlpjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Decode reads one OTLP/JSON document (an ExportTraceServiceRequest) and
// calls fn with each span, flattened. A span whose trace or span id is not
// a valid id, or that ends before it starts, is an error.
//
// It is a single-pass reader of just the fields spans need (a bundle of a
// million spans is several hundred megabytes of JSON); it accepts what
// json.Unmarshal into Request accepts and skips every other field.
func Decode(data []byte, fn func(*evidence.Span) error) error {
	d := &decoder{b: data}
	d.ws()
	if d.null() {
		return d.end()
	}
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "resourceSpans", "batches":
			return d.array(func() error { return d.resourceSpans(fn) })
		}
		return d.skip()
	})
	if err != nil {
		return err
	}
	return d.end()
}

type decoder struct {
	b []byte
	i int
}

var errEOF = errors.New("unexpected end of JSON input")

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{d.i}, args...)...)
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) end() error {
	d.ws()
	if d.i != len(d.b) {
		return d.errorf("invalid character %q after the top-level value", d.b[d.i])
	}
	return nil
}

// null consumes a null literal (after whitespace) and reports whether it did.
func (d *decoder) null() bool {
	if d.i+4 <= len(d.b) && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// open consumes the opening byte c of a container (after whitespace) and
// reports whether elements follow: false for null and for an empty
// container, whose closing byte close it consumes too. what names the
// container in errors.
func (d *decoder) open(c, close byte, what string) (bool, error) {
	d.ws()
	if d.null() {
		return false, nil
	}
	if d.i >= len(d.b) {
		return false, errEOF
	}
	if d.b[d.i] != c {
		return false, d.errorf("want %s, got %q", what, d.b[d.i])
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == close {
		d.i++
		return false, nil
	}
	return true, nil
}

// next consumes what follows a container's element: a comma (true: another
// element follows) or the closing byte close (false). after names the
// element in errors.
func (d *decoder) next(close byte, after string) (bool, error) {
	d.ws()
	if d.i >= len(d.b) {
		return false, errEOF
	}
	switch d.b[d.i] {
	case ',':
		d.i++
		return true, nil
	case close:
		d.i++
		return false, nil
	}
	return false, d.errorf("invalid character %q after %s", d.b[d.i], after)
}

// object calls fn with each key, positioned at its value, which fn must
// consume. null is an empty object.
func (d *decoder) object(fn func(key []byte) error) error {
	more, err := d.open('{', '}', "an object")
	for more && err == nil {
		d.ws()
		var key []byte
		if key, err = d.rawString(); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return errEOF
		}
		if d.b[d.i] != ':' {
			return d.errorf("want ':' after an object key")
		}
		d.i++
		d.ws()
		if err = fn(key); err != nil {
			return err
		}
		more, err = d.next('}', "an object value")
	}
	return err
}

// array calls fn for each element, positioned at it. null is empty.
func (d *decoder) array(fn func() error) error {
	more, err := d.open('[', ']', "an array")
	for more && err == nil {
		d.ws()
		if err = fn(); err != nil {
			return err
		}
		more, err = d.next(']', "an array element")
	}
	return err
}

// rawString reads a string and returns its bytes, unescaped (a copy only
// when it had escapes). The slice may alias the input.
func (d *decoder) rawString() ([]byte, error) {
	if d.i >= len(d.b) {
		return nil, errEOF
	}
	if d.b[d.i] != '"' {
		return nil, d.errorf("want a string, got %q", d.b[d.i])
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return d.b[start:j], nil
		case c == '\\':
			return d.escapedString(start)
		case c < 0x20:
			d.i = j
			return nil, d.errorf("control character in a string")
		}
	}
	d.i = len(d.b)
	return nil, errEOF
}

func (d *decoder) escapedString(start int) ([]byte, error) {
	out := make([]byte, 0, 64)
	j := start
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			return out, nil
		case c < 0x20:
			d.i = j
			return nil, d.errorf("control character in a string")
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(d.b) {
			break
		}
		switch e := d.b[j+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := d.hex4(j + 2)
			if n < 0 {
				d.i = j
				return nil, d.errorf("bad \\u escape")
			}
			j += 6
			if utf16.IsSurrogate(r) {
				if r2, n2 := d.hex4(j + 2); n2 >= 0 && j+1 < len(d.b) && d.b[j] == '\\' && d.b[j+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						j += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			d.i = j
			return nil, d.errorf("bad escape \\%c", e)
		}
		j += 2
	}
	d.i = len(d.b)
	return nil, errEOF
}

func (d *decoder) hex4(at int) (rune, int) {
	if at+4 > len(d.b) {
		return 0, -1
	}
	v, err := strconv.ParseUint(string(d.b[at:at+4]), 16, 32)
	if err != nil {
		return 0, -1
	}
	return rune(v), 4
}

// str reads a string (or null, as "") as a Go string; invalid UTF-8 is
// replaced as encoding/json does.
func (d *decoder) str() (string, error) {
	if d.null() {
		return "", nil
	}
	b, err := d.rawString()
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return string([]rune(string(b))), nil
	}
	return string(b), nil
}

// literal reads a number, true, false or null and returns its text.
func (d *decoder) literal() ([]byte, error) {
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
		d.i++
	}
	lit := d.b[start:d.i]
	if len(lit) == 0 {
		if d.i >= len(d.b) {
			return nil, errEOF
		}
		return nil, d.errorf("invalid character %q looking for a value", d.b[d.i])
	}
	switch string(lit) {
	case "true", "false", "null":
		return lit, nil
	}
	if !json.Valid(lit) {
		d.i = start
		return nil, d.errorf("invalid literal %q", lit)
	}
	return lit, nil
}

// skip consumes any value.
func (d *decoder) skip() error {
	d.ws()
	if d.i >= len(d.b) {
		return errEOF
	}
	switch d.b[d.i] {
	case '{':
		return d.object(func([]byte) error { return d.skip() })
	case '[':
		return d.array(d.skip)
	case '"':
		_, err := d.rawString()
		return err
	}
	_, err := d.literal()
	return err
}

// scalar reads a number or a string holding one (or null) and returns its
// text.
func (d *decoder) scalar() ([]byte, error) {
	if d.i < len(d.b) && d.b[d.i] == '"' {
		return d.rawString()
	}
	return d.literal()
}

func (d *decoder) uint64v() (uint64, error) {
	lit, err := d.scalar()
	if err != nil {
		return 0, err
	}
	if string(lit) == "null" || len(lit) == 0 {
		return 0, nil
	}
	v, err := strconv.ParseUint(string(lit), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an unsigned integer, got %s", lit)
	}
	return v, nil
}

func (d *decoder) enum() (int, error) {
	lit, err := d.scalar()
	if err != nil {
		return 0, err
	}
	if v, ok := enumNames[string(lit)]; ok {
		return v, nil
	}
	if string(lit) == "null" {
		return 0, nil
	}
	v, err := strconv.Atoi(string(lit))
	if err != nil || v < 0 || v > 100 {
		return 0, fmt.Errorf("want an enum number or name, got %s", lit)
	}
	return v, nil
}

// anyValue reads an AnyValue object and renders it as AnyValue.String does.
func (d *decoder) anyValue() (string, error) {
	var out string
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "stringValue", "bytesValue":
			out, err = d.str()
		case "boolValue":
			var lit []byte
			if lit, err = d.literal(); err == nil && string(lit) != "null" {
				if string(lit) != "true" && string(lit) != "false" {
					return fmt.Errorf("boolValue: want true or false, got %s", lit)
				}
				out = string(lit)
			}
		case "intValue":
			var lit []byte
			if lit, err = d.scalar(); err == nil && string(lit) != "null" {
				v, perr := strconv.ParseInt(string(lit), 10, 64)
				if perr != nil {
					return fmt.Errorf("want an integer, got %s", lit)
				}
				out = strconv.FormatInt(v, 10)
			}
		case "doubleValue":
			var lit []byte
			if lit, err = d.literal(); err == nil && string(lit) != "null" {
				v, perr := strconv.ParseFloat(string(lit), 64)
				if perr != nil {
					return fmt.Errorf("doubleValue: want a number, got %s", lit)
				}
				out = strconv.FormatFloat(v, 'g', -1, 64)
			}
		case "arrayValue", "kvlistValue":
			// Rare: read the value the slow, exact way.
			start := d.i
			if err = d.skip(); err == nil {
				var v AnyValue
				raw := append([]byte(`{"`+string(key)+`":`), d.b[start:d.i]...)
				if err = json.Unmarshal(append(raw, '}'), &v); err == nil {
					out = v.String()
				}
			}
		default:
			err = d.skip()
		}
		return err
	})
	return out, err
}

// attributes reads a list of KeyValue, calling fn with each.
func (d *decoder) attributes(fn func(key, value string)) error {
	return d.array(func() error {
		var k, v string
		err := d.object(func(key []byte) error {
			var err error
			switch string(key) {
			case "key":
				k, err = d.str()
			case "value":
				v, err = d.anyValue()
			default:
				err = d.skip()
			}
			return err
		})
		if err == nil {
			fn(k, v)
		}
		return err
	})
}

func (d *decoder) resourceSpans(fn func(*evidence.Span) error) error {
	var res struct{ svc, pod, ns, node string }
	// The resource usually comes first, but JSON objects are unordered:
	// spans read before it are held back until the object ends.
	var held []*evidence.Span
	seenRes := false
	emit := func(s *evidence.Span) error {
		if !seenRes {
			held = append(held, s)
			return nil
		}
		s.Service, s.Pod, s.Namespace, s.Node = res.svc, res.pod, res.ns, res.node
		return fn(s)
	}
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "resource":
			seenRes = true
			return d.object(func(key []byte) error {
				if string(key) != "attributes" {
					return d.skip()
				}
				return d.attributes(func(k, v string) {
					switch k {
					case "service.name":
						res.svc = v
					case "k8s.pod.name":
						res.pod = v
					case "k8s.namespace.name":
						res.ns = v
					case "k8s.node.name":
						res.node = v
					}
				})
			})
		case "scopeSpans", "instrumentationLibrarySpans":
			return d.array(func() error {
				return d.object(func(key []byte) error {
					if string(key) != "spans" {
						return d.skip()
					}
					return d.array(func() error {
						s, err := d.span()
						if err != nil {
							return err
						}
						return emit(s)
					})
				})
			})
		}
		return d.skip()
	})
	if err != nil {
		return err
	}
	seenRes = true
	for _, s := range held {
		if err := emit(s); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) span() (*evidence.Span, error) {
	var (
		tid, sid, pid, name, msg string
		kind, code               int
		start, end               uint64
		attrs                    map[string]string
	)
	err := d.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "traceId":
			tid, err = d.str()
		case "spanId":
			sid, err = d.str()
		case "parentSpanId":
			pid, err = d.str()
		case "name":
			name, err = d.str()
		case "kind":
			kind, err = d.enum()
		case "startTimeUnixNano":
			start, err = d.uint64v()
		case "endTimeUnixNano":
			end, err = d.uint64v()
		case "attributes":
			err = d.attributes(func(k, v string) {
				if attrs == nil {
					attrs = map[string]string{}
				}
				attrs[k] = v
			})
		case "status":
			code, msg = 0, ""
			err = d.object(func(key []byte) error {
				var err error
				switch string(key) {
				case "code":
					code, err = d.enum()
				case "message":
					msg, err = d.str()
				default:
					err = d.skip()
				}
				return err
			})
		default:
			err = d.skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s := SpanJSON{TraceID: tid, SpanID: sid, ParentSpanID: pid, Name: name, Kind: Enum(kind), Start: Uint64(start), End: Uint64(end), Status: Status{Code: Enum(code), Message: msg}}
	sp, err := s.flatten()
	if err != nil {
		return nil, err
	}
	sp.Attributes = attrs
	return sp, nil
}
