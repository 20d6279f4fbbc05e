package kubetext

// get reads kubectl get output: -o yaml|json as structured objects, tables
// otherwise.
func (p *parser) get(c *command, out []string, first int) {
	switch {
	case c.output == "yaml" || c.output == "json":
		p.structured(c, out, first)
	case c.output == "" || c.output == "wide":
		ts := c.targets()
		if len(ts) > 0 && ts[0].kind == "Event" {
			p.eventsTable(c, out, first)
			return
		}
		p.getTable(c, out, first)
	default:
		p.skip(first-1, c.text, "kubectl get -o "+c.output+" is not read")
	}
}
