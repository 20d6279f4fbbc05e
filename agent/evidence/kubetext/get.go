package kubetext

import "strings"

// get reads kubectl get output: -o yaml|json as structured objects, tables
// otherwise.
func (p *parser) get(c *command, out []string, first int) {
	switch {
	case c.output == "yaml" || c.output == "json":
		p.structured(c, out, first)
	case c.output == "" || c.output == "wide":
		ts := c.targets()
		unknown := len(ts) > 0
		for _, t := range ts {
			unknown = unknown && t.kind == "" && !strings.Contains(t.word, ",") && t.word != "all"
		}
		if unknown && p.keepUnknown(c, out, first-1) {
			// a custom resource's table (certificates, virtualservices)
			p.skip(first-1, c.text, "get of a kind not read (kept as text)")
			return
		}
		if len(ts) > 0 && ts[0].kind == "Event" {
			p.eventsTable(c, out, first)
			return
		}
		p.getTable(c, out, first)
	default:
		if strings.HasPrefix(c.output, "custom-columns") {
			// Read as a table of its own columns; the text is kept too.
			if p.customColumnsTable(c, out, first) {
				p.keepUnknown(c, out, first-1)
				return
			}
		}
		if p.keepUnknown(c, out, first-1) {
			p.skip(first-1, c.text, "kubectl get -o "+c.output+" is not read into objects (kept as text)")
			return
		}
		p.skip(first-1, c.text, "kubectl get -o "+c.output+" is not read")
	}
}

// keepUnknown keeps as text the output of a get or describe that is not
// read into objects (a custom resource, -o jsonpath), unless it may show a
// secret's values. It reports whether it kept it.
func (p *parser) keepUnknown(c *command, out []string, line int) bool {
	for _, t := range c.targets() {
		if t.kind == "Secret" || strings.Contains(strings.ToLower(t.word), "secret") {
			return false
		}
	}
	p.keepText(c.text, c, out, line)
	return true
}
