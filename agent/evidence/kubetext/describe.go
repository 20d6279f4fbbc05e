package kubetext

import (
	"strings"
)

// dnode is one line of a describe page and the lines indented under it.
// "Key:  value" lines have a key; other lines (list items, table rows)
// only text. Lines aligned under a value continue it (labels,
// annotations, taints, tolerations): they are kept in more.
type dnode struct {
	indent int
	key    string
	val    string
	hasKey bool
	raw    string
	line   int
	valCol int // rune column of the value, -1 when there is none
	more   []string
	kids   []*dnode
}

// values returns the value and its continuation lines, without "<none>".
func (n *dnode) values() []string {
	if n == nil {
		return nil
	}
	var out []string
	for _, v := range append([]string{n.val}, n.more...) {
		if v = strings.TrimSpace(v); v != "" && !unset(v) {
			out = append(out, v)
		}
	}
	return out
}

// unset reports the placeholders kubectl prints for an empty field.
func unset(v string) bool {
	switch v {
	case "<none>", "<unset>", "<nil>", "<unknown>", "<invalid>", "":
		return true
	}
	return false
}

// child returns the first direct child with the key.
func (n *dnode) child(key string) *dnode {
	if n == nil {
		return nil
	}
	for _, k := range n.kids {
		if k.hasKey && strings.EqualFold(k.key, key) {
			return k
		}
	}
	return nil
}

// get returns the value of the child with the key, "" when unset.
func (n *dnode) get(key string) string {
	c := n.child(key)
	if c == nil || unset(strings.TrimSpace(c.val)) {
		return ""
	}
	return strings.TrimSpace(c.val)
}

// lines returns the raw lines under n, in order.
func (n *dnode) lines() (out []string, first int) {
	first = -1
	var walk func(*dnode)
	walk = func(d *dnode) {
		for _, k := range d.kids {
			if first < 0 {
				first = k.line
			}
			out = append(out, k.raw)
			out = append(out, k.more...)
			walk(k)
		}
	}
	walk(n)
	return out, first
}

// table reads the lines under n as a table (describe's Events, Conditions).
func (n *dnode) table(maxRows int) *table {
	if n == nil {
		return nil
	}
	ls, first := n.lines()
	if len(ls) == 0 {
		return nil
	}
	// Columns are relative to the table's indentation.
	ind := indentOf(ls[0])
	for i, l := range ls {
		if indentOf(l) >= ind {
			ls[i] = string([]rune(l)[ind:])
		} else {
			ls[i] = strings.TrimLeft(l, " ")
		}
	}
	return parseTable(ls, first, maxRows)
}

func indentOf(s string) int {
	n := 0
	for _, c := range s {
		if c != ' ' {
			break
		}
		n++
	}
	return n
}

// splitKey finds "Key:" at the start of a line: a colon followed by a space
// or the end of line, with no run of two spaces before it.
func splitKey(s string) (key, val string, valCol int, ok bool) {
	ind := indentOf(s)
	r := []rune(s)
	for i := ind; i < len(r); i++ {
		if r[i] == ' ' && i+1 < len(r) && r[i+1] == ' ' {
			return "", "", -1, false
		}
		if r[i] != ':' {
			continue
		}
		if i+1 < len(r) && r[i+1] != ' ' {
			continue
		}
		if i == ind {
			return "", "", -1, false
		}
		key = string(r[ind:i])
		j := i + 1
		for j < len(r) && r[j] == ' ' {
			j++
		}
		if j >= len(r) {
			return key, "", -1, true
		}
		return key, string(r[j:]), j, true
	}
	return "", "", -1, false
}

// parseDescribe builds the tree of one describe page. lines start at line
// number first.
// maxEventLines bounds the lines of one event message read.
const maxEventLines = 200

func parseDescribe(lines []string, first int) *dnode {
	root := &dnode{indent: -1, valCol: -1}
	stack := []*dnode{root}
	var lastVal *dnode // the last line with a value, for continuations
	var events *dnode  // the Events: section, the page's last
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := indentOf(l)
		if ind == 0 && events != nil && len(events.kids) > 0 {
			// An event's message that holds newlines is printed as it
			// is: its later lines start at the margin, under its row.
			last := events.kids[len(events.kids)-1]
			if len(last.more) < maxEventLines {
				last.more = append(last.more, strings.TrimSpace(l))
			}
			continue
		}
		if lastVal != nil && lastVal.valCol > 0 && ind == lastVal.valCol && ind > lastVal.indent {
			lastVal.more = append(lastVal.more, strings.TrimSpace(l))
			continue
		}
		n := &dnode{indent: ind, raw: l, line: first + i, valCol: -1}
		if k, v, col, ok := splitKey(l); ok {
			n.key, n.val, n.valCol, n.hasKey = k, strings.TrimSpace(v), col, true
		} else {
			n.val = strings.TrimSpace(l)
		}
		for len(stack) > 1 && stack[len(stack)-1].indent >= ind {
			stack = stack[:len(stack)-1]
		}
		parent := stack[len(stack)-1]
		parent.kids = append(parent.kids, n)
		stack = append(stack, n)
		if ind == 0 && n.hasKey && n.key == "Events" {
			events = n
		}
		if n.valCol > 0 {
			lastVal = n
		} else {
			lastVal = nil
		}
	}
	return root
}

// splitPages cuts a describe output into one page per object: each page
// starts with a "Name:" line at column 0.
func splitPages(lines []string) (pages [][]string, starts []int) {
	for i, l := range lines {
		if strings.HasPrefix(l, "Name:") {
			pages = append(pages, nil)
			starts = append(starts, i)
		}
		if len(pages) > 0 {
			pages[len(pages)-1] = append(pages[len(pages)-1], l)
		}
	}
	return pages, starts
}

// labelMap reads "k=v" items (labels, selectors, node selectors).
func labelMap(items []string) map[string]string {
	var m map[string]string
	for _, it := range items {
		for _, kv := range strings.Split(it, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				continue
			}
			if m == nil {
				m = map[string]string{}
			}
			m[k] = v
		}
	}
	return m
}

// annotationItems returns the "k: v" items of an Annotations: node. kubectl
// prints a long or multi-line value on its own lines under its key
// ("kubernetes.io/limit-ranger:" then, two columns further in, "LimitRanger
// plugin set: ..."): a line deeper than the values continues the item
// before it; a line at the values' column after it is an item again.
func annotationItems(n *dnode) []string {
	items := n.values()
	var walk func(k *dnode)
	walk = func(k *dnode) {
		line := strings.Join(append([]string{strings.TrimSpace(k.raw)}, k.more...), " ")
		if last := len(items) - 1; last >= 0 && k.indent > n.valCol {
			items[last] += " " + line
		} else {
			items = append(items, line)
		}
		for _, kk := range k.kids {
			walk(kk)
		}
	}
	if n != nil && n.valCol > 0 {
		for _, k := range n.kids {
			walk(k)
		}
	}
	return items
}

// annotationMap reads "k: v" items.
func annotationMap(items []string) map[string]string {
	var m map[string]string
	for _, it := range items {
		k, v, ok := strings.Cut(it, ":")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}

// children returns the lines under n (none for a nil node).
func (n *dnode) children() []*dnode {
	if n == nil {
		return nil
	}
	return n.kids
}
