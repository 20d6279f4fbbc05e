package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A database refusing connections after its instance was made smaller:
// RDS and Aurora PostgreSQL/MySQL derive the default max_connections from
// the instance's memory (LEAST(DBInstanceClassMemory/9531392, 5000),
// {DBInstanceClassMemory/12582880}), so a rightsizing to a smaller class
// (applied at the next maintenance window, hours after the change was
// made) lowers the connection limit without any change to the parameter
// group. The clients' pools, sized for the old limit, exhaust it at the
// next peak: "remaining connection slots are reserved", "too many
// connections". The change is the instance class, not the clients.

// KindDBClassDownsized is a database refusing connections after a change
// to a smaller instance class lowered its connection limit.
const KindDBClassDownsized Kind = "db_class_downsized"

var dbClassDownsized = &mechanism{
	kind:   KindDBClassDownsized,
	class:  classCause,
	label:  "database instance class downsized, connection limit lowered",
	detect: detectDBClassDownsized,
	related: func(h *Hypothesis, f *Finding) bool {
		return (f.Kind == KindDatabase || f.Kind == KindSaturation || f.Kind == KindLogErrors) && matchLine(slotsRefusedRE, f.fact("line")+" "+strings.Join(f.Evidence, " "))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		return fmt.Sprintf("the database instance %s was downsized from instance class %s to the smaller %s (%s), and its default max_connections, derived from the instance's memory, fell with it: from %s UTC the database refuses new connections, the connection limit is reached (%s)",
			h.Subject, h.fact("from_class"), h.fact("to_class"), quote(h.fact("change"), 180), h.fact("refused_from"), quote(ReadableLine(h.fact("line")), 180))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Restore %s's connection capacity: scale the instance back to %s, or set max_connections explicitly in its parameter group for the smaller class", h.Subject, h.fact("from_class"))
		r.med("Size the clients' pools to the database's connection limit (pods at the autoscaler's maximum times the pool size), or put a pooler (RDS Proxy, PgBouncer) in front of it")
		r.low("Check the connection limit a smaller instance class implies before rightsizing, and alert on connections near max_connections")
	},
}

var (
	// classChangeRE is an instance class changed: Terraform's
	// instance_class, a console or CLI modification.
	classChangeRE = regexp.MustCompile(`(?i)instance[_ ]?class\S*\s*(?:from\s+|[:=]\s*)?"?(db\.[\w.]+)"?\s*(?:->|→|=>|to)\s*"?(db\.[\w.]+)`)
	// classSizes orders the size suffixes of instance classes.
	classSizes = []string{"nano", "micro", "small", "medium", "large", "xlarge"}
)

// classRank is the size of an instance class ("db.r6g.2xlarge"), -1 when
// unknown.
func classRank(class string) float64 {
	parts := strings.Split(class, ".")
	size := parts[len(parts)-1]
	mult := 1.0
	if strings.HasSuffix(size, "xlarge") && len(size) > len("xlarge") {
		var n float64
		if _, err := fmt.Sscanf(strings.TrimSuffix(size, "xlarge"), "%g", &n); err == nil {
			mult, size = n, "xlarge"
		}
	}
	for i, s := range classSizes {
		if s == size {
			return float64(i) * mult
		}
	}
	if size == "metal" {
		return 1000
	}
	return -1
}

// detectDBClassDownsized finds connections refused by a database within
// two days after a change to a smaller instance class.
func detectDBClassDownsized(ev *Gathered, _ []Finding) []Finding {
	var first time.Time
	var line, ns string
	n := 0
	for x := range incidentMatches(ev, slotsRefusedRE) {
		at := orTime(x.t.FirstSeen, x.t.FirstIncident)
		if first.IsZero() || at.Before(first) {
			first, line, ns = at, x.line, x.set.Namespace
		}
		n += x.t.Incident
	}
	if first.IsZero() {
		return nil
	}
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		m := findSubmatch(classChangeRE, c.Description)
		if m == nil || c.Timestamp.After(first) || first.Sub(c.Timestamp) > 48*time.Hour {
			continue
		}
		from, to := classRank(m[1]), classRank(m[2])
		if from < 0 || to < 0 || to >= from {
			continue
		}
		subject := orWord(c.Service, "database")
		f := Finding{Kind: KindDBClassDownsized, Subject: subject, Namespace: ns, Time: first, Severity: SevCritical, Weight: 0.85,
			Source: SrcLogs, Object: "database " + subject}
		f.setFact("from_class", m[1])
		f.setFact("to_class", m[2])
		f.setFact("change", c.Description)
		f.setFact("line", line)
		f.setFact("refused_from", first.UTC().Format("15:04:05"))
		f.addCount(n)
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("change of %s at %s: %s", subject, ts(c.Timestamp), quote(c.Description, 200)),
			fmt.Sprintf("%d lines of refused connections from %s: %s", n, ts(first), quote(ReadableLine(line), 200)))
		f.Summary = fmt.Sprintf("%s refuses connections from %s after its instance class went from %s to %s", subject, hm(first), m[1], m[2])
		return []Finding{f}
	}
	return nil
}
