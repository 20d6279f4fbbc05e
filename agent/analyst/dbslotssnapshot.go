package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Who holds a database's connection slots, read from the server's session
// list at the time of the refusals rather than from a series: an operator
// counts the sessions per client while its clients are refused (psql's
// "select usename, application_name, state, count(*) from
// pg_stat_activity group by ...", MySQL's "select user, count(*) from
// information_schema.processlist group by user"), and one client holds
// most of them — a service scaled out by its autoscaler, each replica
// opening a full pool, or a job whose pool keeps every connection open —
// while the refused client holds a handful. That client, matched to the
// service it belongs to by name, is the one that took the slots; the
// refused clients are its victims (databaseslotstaken.go tells it).

// sessionCountCols are the columns a grouped session count is printed in.
var sessionCountCols = []string{"count", "count(*)", "connections", "sessions", "conns", "total", "n"}

// conninfoHostRE is the server of a libpq connection string or URI
// ("host=db.example user=x", "postgres://u@db.example:5432/x").
var conninfoHostRE = regexp.MustCompile(`(?:^|[\s"'])host=([A-Za-z0-9][A-Za-z0-9.-]*)|(?:postgres(?:ql)?|mysql)://(?:[^@\s/]*@)?([A-Za-z0-9][A-Za-z0-9.-]*)`)

// slotsSnapshot is one server's sessions counted per client.
type slotsSnapshot struct {
	server   string
	counts   map[string]int
	maxConns string
}

// readSlotsSnapshots reads, per database server, the sessions its SQL
// clients' outputs count per client, and its max_connections.
func readSlotsSnapshots(cmds []evidence.CommandOutput) []*slotsSnapshot {
	byServer := map[string]*slotsSnapshot{}
	var order []string
	for _, c := range cmds {
		run := orWord(c.Run, c.Command)
		if !matchLine(sqlClientRE, run) && !matchLine(sqlClientRE, c.Command) {
			continue
		}
		server, _ := sqlInstanceOf(c)
		if m := findSubmatch(conninfoHostRE, run); server == "" && m != nil {
			server = orWord(m[1], m[2])
		}
		server = shortDBHost(strings.ToLower(server))
		s := byServer[server]
		if s == nil {
			s = &slotsSnapshot{server: server, counts: map[string]int{}}
			byServer[server] = s
			order = append(order, server)
		}
		for _, t := range sqlTables(c.Lines) {
			s.read(t)
		}
	}
	var out []*slotsSnapshot
	for _, k := range order {
		if s := byServer[k]; len(s.counts) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// read takes one result table: a max_connections setting or sessions
// counted per client (summed over the states it splits them by).
func (s *slotsSnapshot) read(t sqlTable) {
	col := func(names []string) string {
		for _, n := range names {
			if slices.Contains(t.cols, n) {
				return n
			}
		}
		return ""
	}
	if slices.Contains(t.cols, "max_connections") && len(t.rows) > 0 {
		s.maxConns = t.cell(0, "max_connections")
		return
	}
	if slices.Contains(t.cols, "variable_name") && slices.Contains(t.cols, "value") {
		for r := range t.rows {
			if strings.EqualFold(t.cell(r, "variable_name"), "max_connections") {
				s.maxConns = t.cell(r, "value")
			}
		}
		return
	}
	cc := col(sessionCountCols)
	if cc == "" {
		return
	}
	var labels []string
	for _, l := range clientLabels {
		if slices.Contains(t.cols, l) {
			labels = append(labels, l)
		}
	}
	if len(labels) == 0 {
		return
	}
	for r := range t.rows {
		n, err := strconv.Atoi(t.cell(r, cc))
		if err != nil {
			continue
		}
		client := ""
		for _, l := range labels {
			if client = t.cell(r, l); client != "" {
				break
			}
		}
		if client != "" {
			s.counts[client] += n
		}
	}
}

// slotsHolder is the client holding most of a server's sessions when it
// holds far more than any other: at least ten, three times the next
// client's and half of all the sessions counted.
func (s *slotsSnapshot) slotsHolder() (client string, held, rest int, others []string) {
	type cc struct {
		client string
		n      int
	}
	var cs []cc
	total := 0
	for c, n := range s.counts {
		cs = append(cs, cc{c, n})
		total += n
	}
	if len(cs) < 2 {
		return "", 0, 0, nil
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].n > cs[j].n || cs[i].n == cs[j].n && cs[i].client < cs[j].client })
	top := cs[0]
	if top.n < 10 || top.n < 3*cs[1].n || 2*top.n < total {
		return "", 0, 0, nil
	}
	for _, o := range cs[1:] {
		others = append(others, fmt.Sprintf("%s %d", o.client, o.n))
	}
	return top.client, top.n, total - top.n, others
}

// detectSlotsSnapshot names the client holding a server's connection slots
// from its session list, when clients are refused for lack of slots and
// no series of sessions per client was handed over.
func detectSlotsSnapshot(ev *Gathered, refusal string, victims []string, at time.Time) []Finding {
	var out []Finding
	for _, s := range readSlotsSnapshots(ev.Commands) {
		client, held, rest, others := s.slotsHolder()
		if client == "" {
			continue
		}
		subject := clientOwner(ev, client)
		// The refused client holding most sessions took no one's slots.
		if slices.ContainsFunc(victims, func(v string) bool { return strings.EqualFold(v, subject) || strings.EqualFold(v, client) }) {
			continue
		}
		affects := slotsAffected(ev, s.server, subject, victims)
		of := ""
		if s.maxConns != "" {
			of = " of max_connections " + s.maxConns
		}
		f := Finding{Kind: KindDBSlotsTaken, Subject: subject, Source: SrcLogs, Time: at, Severity: SevCritical, Weight: 0.9,
			Related: affects,
			Summary: fmt.Sprintf("database client %s holds %d of the sessions on %s%s while clients are refused for lack of slots", client, held, orWord(s.server, "the database"), of),
			Evidence: []string{fmt.Sprintf("sessions on %s counted per client: %s %d, all others %d (%s)%s", orWord(s.server, "the database"), client, held, rest, strings.Join(others, ", "), of),
				"refused: " + quote(ReadableLine(refusal), 200)}}
		f.setFact("client", client)
		f.setFact("server", s.server)
		f.setFact("held", strconv.Itoa(held))
		f.setFact("rest", strconv.Itoa(rest))
		f.setFact("others", strings.Join(others, ", "))
		f.setFact("affects", strings.Join(affects, ", "))
		f.setFact("affected", strings.Join(append([]string{subject}, victims...), ","))
		f.setFact("victims", strings.Join(victims, ", "))
		f.setFact("refusal", refusal)
		f.setFact("max_connections", s.maxConns)
		if p := poolLine(ev, subject); p != "" {
			f.setFact("pool", p)
			f.Evidence = append(f.Evidence, fmt.Sprintf("logs %s: %s", subject, quote(p, 200)))
		}
		out = append(out, f)
	}
	return out
}
