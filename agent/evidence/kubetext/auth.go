package kubetext

import (
	"strings"
)

// Permission is one answer of kubectl auth can-i: whether a user (--as, or
// the operator's own credentials) may do a verb on a resource.
type Permission struct {
	Line      int    // 1-based line of the answer
	Command   string // the command line, without the prompt
	As        string // --as (system:serviceaccount:NS:NAME...); empty: the operator's own credentials
	Namespace string // -n; empty when the command did not say (or -A)
	Verb      string // get, list, create...; "*" for all
	Resource  string // secrets, pods/exec, deployments.apps...; a non-resource URL starts with "/"
	Name      string // the resource's name (TYPE/NAME or TYPE NAME), if given
	// Subresource is --subresource.
	Subresource string
	Allowed     bool
	// Reason is what the API server said after "no - " (an RBAC or
	// webhook message); empty when it said nothing.
	Reason string
}

// auth reads kubectl auth can-i answers ("yes", "no", "no - reason"); the
// output is kept as text too. Other auth subcommands (--list, whoami,
// reconcile) are kept as text only.
func (p *parser) auth(c *command, out []string, line int) {
	p.keepText(c.text, c, out, line)
	if len(c.args) < 2 || c.args[0] != "can-i" || c.flags["--list"] != "" || hasFlag(c, "--list") {
		return
	}
	perm := Permission{Command: c.text, As: c.flags["--as"], Namespace: c.ns(), Verb: c.args[1], Subresource: c.flags["--subresource"]}
	if c.all {
		perm.Namespace = ""
	}
	if len(c.args) > 2 {
		perm.Resource = c.args[2]
		if r, n, ok := strings.Cut(perm.Resource, "/"); ok && !strings.HasPrefix(perm.Resource, "/") {
			perm.Resource, perm.Name = r, n
		}
		if len(c.args) > 3 {
			perm.Name = c.args[3]
		}
	}
	for i := len(out) - 1; i >= 0; i-- {
		t := strings.TrimSpace(out[i])
		switch {
		case t == "yes":
			perm.Allowed = true
		case t == "no":
		case strings.HasPrefix(t, "no - "):
			perm.Reason = strings.TrimPrefix(t, "no - ")
		default:
			continue // warnings ("Warning: resource 'x' is not namespace scoped")
		}
		perm.Line = line + 1 + i
		if len(p.res.Permissions) < MaxAbsent {
			p.res.Permissions = append(p.res.Permissions, perm)
		}
		return
	}
	p.skip(line, c.text, "no yes or no answer in the auth can-i output (kept as text)")
}

func hasFlag(c *command, name string) bool {
	_, ok := c.flags[name]
	return ok
}
