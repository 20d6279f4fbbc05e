package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A database refusing a client a privilege on an object, not its login:
// PostgreSQL's "permission denied for view customer_ltv" (SQLSTATE 42501,
// asyncpg's InsufficientPrivilegeError, psycopg's InsufficientPrivilege),
// MySQL's "SELECT command denied to user 'app'@'%' for table 'orders'"
// (1142), SQL Server's "The SELECT permission was denied on the object"
// (229). The client authenticated; its role lacks a GRANT on that object.
// Only the queries that touch it fail, the others succeed. The usual
// cause is an object dropped and created again (a dbt model rebuilt, a
// migration's DROP … CREATE, a CREATE OR REPLACE of a table): a new
// object carries only its owner's privileges, so the GRANT the old one
// had is gone unless the job that builds it grants it again. The
// rebuilding job's log, the object's ACL (psql \dp) and the change that
// moved or renamed the object say so.

// KindDBPrivilegeDenied is a client refused a privilege on a database
// object.
const KindDBPrivilegeDenied Kind = "db_privilege_denied"

var dbPrivilegeDenied = &mechanism{
	kind:   KindDBPrivilegeDenied,
	class:  classCause,
	label:  "database privilege missing on an object (GRANT lost or never given)",
	detect: detectDBPrivilegeDenied,
	related: func(h *Hypothesis, f *Finding) bool {
		return refusalOf(h, f, matchLine(privilegeDeniedRE, f.fact("line")))
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		text := strings.ToLower(changeText(c))
		for _, o := range strings.Fields(h.fact("objects")) {
			if containsToken(text, strings.ToLower(o)) {
				return true
			}
		}
		return matchLine(grantChangeRE, text)
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		objs := strings.Join(strings.Fields(h.fact("objects")), ", ")
		role := ""
		if r := h.fact("role"); r != "" {
			role = " (role " + r
			if m := h.fact("member_of"); m != "" {
				role += ", member of " + m
			}
			role += ")"
		}
		d := fmt.Sprintf("the database refuses %s%s a privilege on %s: permission denied (insufficient privilege, %s) from %s UTC — %s. Its login works and its other queries succeed; its role lacks a GRANT on %s",
			h.Subject, role, objs, h.fact("code"), h.fact("denied_from"), quote(ReadableLine(h.fact("line")), 160), objs)
		if r := h.fact("recreated"); r != "" {
			d += fmt.Sprintf(". The object was recreated shortly before (%s), and a recreated object carries only its owner's privileges: the grant the old one had was lost", quote(ReadableLine(r), 160))
		}
		if a := h.fact("acl"); a != "" {
			d += fmt.Sprintf("; its access privileges now list only %s", a)
		}
		if c := h.fact("change"); c != "" {
			d += fmt.Sprintf("; the change that moved it: %s", quote(c, 180))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		objs := strings.Join(strings.Fields(h.fact("objects")), ", ")
		grantee := orWord(h.fact("member_of"), orWord(h.fact("role"), "the client's role"))
		r.high("GRANT SELECT ON %s TO %s now; no rollback of %s is needed", objs, grantee, h.Subject)
		r.med("Make the job that builds %s grant it on every rebuild (dbt grants config or post-hook, the migration's GRANT), or set ALTER DEFAULT PRIVILEGES for the owner so new objects carry the grant", objs)
		r.low("Test the reading role's access to each object after every rebuild and alert on permission-denied errors (SQLSTATE 42501)")
	},
}

var (
	// A privilege refused on an object: PostgreSQL 42501, MySQL 1142,
	// SQL Server 229.
	privilegeDeniedRE = regexp.MustCompile(`(?i)permission denied for (?:materialized view|table|view|relation|sequence|schema|function) "?([\w.$]+)"?|\b(?:SELECT|INSERT|UPDATE|DELETE|EXECUTE) command denied to user '([^']*)'@'[^']*' for table [\x60']?(?:[\w$]+[\x60']?\.[\x60']?)?([\w$]+)[\x60']?|The (?:SELECT|INSERT|UPDATE|DELETE|EXECUTE) permission was denied on the object '([^']+)'`)
	// The role the server names in its log line prefix or message.
	// ("user=reports_api,db=…", RDS's "%u@%d" prefix ":reports_api@analytics:[").
	privilegeRoleRE = regexp.MustCompile(`(?i)\buser=([\w.$-]+)|:([\w.$-]+)@[\w.$-]+:\[`)
	// A change about grants and privileges.
	grantChangeRE = regexp.MustCompile(`(?i)\bgrants?\b|\bprivileges?\b|\brevoke\b`)
	// An object created, replaced or rebuilt: dbt's "OK created sql view
	// model schema.name", DDL, a migration's log.
	recreatedRE = regexp.MustCompile(`(?i)\bOK created sql (?:view|table|incremental|materialized view) model\b|\bCREATE (?:OR REPLACE )?(?:MATERIALIZED VIEW|VIEW|TABLE)\b|\b(?:re)?created (?:view|table)\b|\bDROP (?:VIEW|TABLE)\b`)
	// A role's memberships in psql \du: "reports_api | | {reporting_ro}".
	memberOfRE = regexp.MustCompile(`^\s*([\w.$-]+)\s*\|[^|]*\|\s*\{([^}]+)\}`)
	// An ACL entry: grantee=privileges/grantor.
	aclEntryRE = regexp.MustCompile(`([\w.$-]*)=([a-zA-Z*]+)/([\w.$-]+)`)
)

// deniedObject reads the object (its name without schema) and the role of
// a refused privilege.
func deniedObject(line string) (object, role string) {
	m := findSubmatch(privilegeDeniedRE, line)
	if m == nil {
		return "", ""
	}
	object = orWord(m[1], orWord(m[3], m[4]))
	if i := strings.LastIndexByte(object, '.'); i >= 0 {
		object = object[i+1:]
	}
	role = m[2]
	if r := findSubmatch(privilegeRoleRE, line); r != nil && role == "" {
		role = orWord(r[1], r[2])
	}
	return strings.Trim(object, `"'`), role
}

// deniedPart is the line of a multi-line entry (a traceback, an
// exception with its causes) that holds the refusal.
func deniedPart(line string) string {
	for _, part := range strings.Split(strings.ReplaceAll(line, `\n`, "\n"), "\n") {
		if matchLine(privilegeDeniedRE, part) {
			return strings.Trim(strings.TrimSpace(part), `"}`)
		}
	}
	return line
}

// deniedCode is the error code a refusal's dialect gives it.
func deniedCode(line string) string {
	low := strings.ToLower(line)
	switch {
	case strings.Contains(low, "command denied to user"):
		return "MySQL error 1142"
	case strings.Contains(low, "permission was denied on the object"):
		return "SQL Server error 229"
	}
	return "SQLSTATE 42501"
}

// detectDBPrivilegeDenied finds a client refused a privilege on database
// objects, and what recreated them.
func detectDBPrivilegeDenied(ev *Gathered, _ []Finding) []Finding {
	clients := map[string]*refusedClient{}
	objects := map[string]bool{}
	var role string
	var first time.Time
	for x := range incidentMatches(ev, privilegeDeniedRE) {
		set, at := x.set, orTime(x.t.FirstSeen, x.t.FirstIncident)
		obj, r := deniedObject(x.line)
		if obj == "" {
			continue
		}
		objects[obj] = true
		if role == "" {
			role = r
		}
		first = earliest(first, at)
		if dbServerLog(set) {
			continue // the server's own log
		}
		if c := tallyRefusal(clients, set, at, x.t.LastSeen, x.t.Incident); c.line == "" {
			c.line = deniedPart(x.line)
		}
	}
	if len(clients) == 0 {
		return nil
	}
	names := rankClients(clients, ev.Scope.Service, func(c *refusedClient) int { return c.n })
	name := names[0]
	c := clients[name]
	objs := slices.Sorted(func(yield func(string) bool) {
		for o := range objects {
			if !yield(o) {
				return
			}
		}
	})
	f := Finding{Kind: KindDBPrivilegeDenied, Subject: name, Namespace: c.ns, Time: first, Severity: SevCritical, Weight: 0.86,
		Source: SrcLogs, Object: "workload " + name}
	f.setFact("objects", strings.Join(objs, " "))
	f.setFact("role", role)
	f.setFact("code", deniedCode(c.line))
	f.setFact("line", c.line)
	f.setFact("denied_from", first.UTC().Format("15:04:05"))
	f.addCount(c.n)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %d lines of a privilege refused from %s: %s", name, c.n, ts(c.first), quote(ReadableLine(c.line), 200)))
	names1 := func(line string) bool {
		low := strings.ToLower(line)
		for _, o := range objs {
			if containsToken(low, strings.ToLower(o)) {
				return true
			}
		}
		return false
	}
	// What recreated the objects: a job's or a migration's log line.
	airflowLines(ev, func(line string, cmd *evidence.CommandOutput) {
		if f.fact("recreated") == "" && matchLine(recreatedRE, line) && names1(line) && !matchLine(privilegeDeniedRE, line) {
			f.setFact("recreated", strings.TrimSpace(line))
			f.Weight = 0.92
			f.Evidence = append(f.Evidence, fmt.Sprintf("the object was recreated: %s", quote(ReadableLine(line), 200)))
		}
		if cmd == nil {
			return
		}
		// The object's ACL (psql \dp) and the role's memberships (\du).
		if m := findSubmatch(memberOfRE, line); m != nil && role != "" && m[1] == role && f.fact("member_of") == "" {
			f.setFact("member_of", strings.TrimSpace(m[2]))
		}
		if names1(line) && f.fact("acl") == "" {
			if es := findAllSubmatch(aclEntryRE, line, -1); len(es) == 1 && es[0][1] == es[0][3] {
				f.setFact("acl", fmt.Sprintf("its owner %s", es[0][3]))
				f.Evidence = append(f.Evidence, fmt.Sprintf("access privileges of the object: %s", quote(strings.Join(strings.Fields(line), " "), 200)))
			}
		}
	})
	// The change that moved or renamed them.
	for _, ch := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if !ch.Timestamp.After(first) && first.Sub(ch.Timestamp) <= 7*24*time.Hour && names1(ch.Description) {
			f.setFact("change", fmt.Sprintf("%s (%s, %s)", ch.Description, ch.Service, ts(ch.Timestamp)))
		}
	}
	f.Summary = fmt.Sprintf("%s is refused the privilege on %s from %s", name, strings.Join(objs, ", "), hm(first))
	return []Finding{f}
}
