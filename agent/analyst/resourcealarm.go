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
	"github.com/rootcause/rootcause/finding"
)

// A server that blocks its clients' writes because one of its resources
// crossed a limit states it in its own log: RabbitMQ's free-disk or memory
// alarm ("Publishers will be blocked until this alarm clears"),
// Elasticsearch's flood-stage disk watermark (indices made read-only),
// Redis refusing writes (MISCONF, OOM command not allowed); PostgreSQL
// refusing writes to avoid wraparound is xidwraparound.go's. The clients
// see only their side: publishes that time out, writes rejected,
// "connection.blocked". The server's own statement is the root; the
// clients are affected systems.

// KindResourceAlarm is a server blocking its clients' writes on a
// resource alarm.
const KindResourceAlarm Kind = "resource_alarm"

var resourceAlarm = &mechanism{
	kind:   KindResourceAlarm,
	class:  classCause,
	label:  "server resource alarm blocking writes",
	detect: detectResourceAlarms,
	// Only a change to the server itself (its host, its configuration)
	// triggers its alarm: a client's deploy does not fill the server.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		for _, f := range h.Primary {
			if c.Subject == f.Subject || c.Subject != "" && c.Subject == f.fact("host") {
				return true
			}
		}
		return false
	},
	strictTriggers: true,
	// The clients whose logs show them blocked (not Related: a host's
	// related names are renamed after the host, attachHosts) suffer it.
	related: listedIn("clients", ", "),
	describe: func(h *Hypothesis, sc Scope) string {
		what := h.Subject
		if dom := h.fact("domain"); dom != "" {
			what = "the search domain " + dom
		} else if host := h.fact("host"); host != "" && host != h.Subject {
			what = fmt.Sprintf("the %s server %s", h.Subject, host)
		} else if server := h.fact("server"); server != "" {
			what = fmt.Sprintf("the %s server %s", server, h.Subject)
		}
		res := h.fact("resource")
		d := fmt.Sprintf("%s raised its %s alarm and blocks its clients' %s until it clears", what, alarmPhrase(res), orWord(h.fact("blocks"), "writes"))
		d += h.wrapped(" (", "level", ")")
		if searchReadOnly(h.fact("line")) {
			d += " (its disk use passed the flood-stage watermark, so its indices were made read-only: index.blocks.read_only_allow_delete, cluster_block_exception to every write)"
		}
		if l := h.fact("line"); l != "" {
			d += ": " + quote(blockReason(l), 200)
		}
		d += h.clause("; ", "why") + h.clause("; ", "growing") + h.clause("; ", "grew") + h.clause("; ", "held")
		if c := h.fact("clients"); c != "" {
			d += fmt.Sprintf(". Its clients are blocked: %s", c)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		host := orWord(h.fact("host"), h.Subject)
		switch h.fact("resource") {
		case "memory":
			if h.fact("no_ttl") != "" {
				r.high("Make room on %s now (raise maxmemory, or delete the keys that need no keeping), then give the keys a TTL where they are written (SET ... EX) and choose an eviction policy that fits (volatile-ttl, allkeys-lru) instead of noeviction", host)
				break
			}
			r.high("Free memory on %s (drain or purge what grows, add consumers) so the memory alarm clears; raise the memory limit only as a stopgap", host)
		default:
			r.high("Free disk space on %s (purge or consume what fills it, delete old data, grow the volume) so the %s alarm clears", host, alarmPhrase(h.fact("resource")))
		}
		if q := h.fact("queue"); q != "" {
			r.high("Drain the queue %s that fills %s: restore its consumer or purge it", q, host)
		}
		if h.fact("grew") != "" {
			r.high("Bring the data kept on %s back under its disk (shorter retention, fewer replicas, or more or larger data nodes), then clear the block (PUT */_settings {\"index.blocks.read_only_allow_delete\": null} where the server does not lift it itself)", host)
		}
		r.med("Find what fills %s and why it is not consumed (a consumer scaled to zero, a dead-letter queue nobody reads)", host)
		r.add(finding.PriorityLow, fmt.Sprintf("Alert on the resource alarms of %s before they block clients (free disk and memory against their limits)", h.Subject))
	},
}

func alarmPhrase(res string) string {
	switch res {
	case "memory":
		return "memory"
	case "disk":
		return "free-disk"
	}
	return "resource"
}

var (
	// A server stating that it blocks writes on a resource limit.
	alarmLineRE = regexp.MustCompile(`(?i)\b(disk|memory) resource limit alarm set|Publishers will be blocked until this alarm clears|Free disk space is insufficient|vm_memory_high_watermark set|memory_high_watermark set|flood[ -]stage disk watermark \[[^\]]*\] exceeded|index read-only / allow delete|FORBIDDEN/12/index read-only|disk usage exceeded flood[ -]stage watermark|read-only-allow-delete block|TOO_MANY_REQUESTS/12/|MISCONF Redis is configured to save RDB snapshots|Background saving error|Write error saving DB on disk|Failed opening the (?:temp )?RDB file|Can't save in background|Error writing to the AOF file|(?:OOM )?command not allowed when used memory`)
	// The alarm cleared again.
	alarmClearedRE = regexp.MustCompile(`(?i)resource limit alarm cleared|alarm cleared|watermark (?:\[[^\]]*\] )?no longer exceeded|below the flood[ -]stage`)
	// A client told it is blocked, with the server's reason.
	blockedClientRE = regexp.MustCompile(`(?i)connection\.blocked|ConnectionBlocked|connection (?:is |was )?blocked|blocked by (?:the )?(?:broker|server)|cluster_block_exception|FORBIDDEN/12|MISCONF|OOM command not allowed|command not allowed when used memory|not accepting commands`)
	rabbitNodeRE    = regexp.MustCompile(`\brabbit@([\w.-]+)`)
	alarmNumbersRE  = regexp.MustCompile(`(?i)Free bytes:\s*(\d+)\.?\s*Limit:\s*(\d+)`)
	reasonRE        = regexp.MustCompile(`(?i)reason="?([^"]+?)"?(?:$|\s\w+=)`)
	// refusalReplyRE is a server's reply refusing a command, which only
	// its clients log (Redis's OOM and MISCONF errors).
	refusalReplyRE = regexp.MustCompile(`(?i)OOM command not allowed|command not allowed when used memory|\bMISCONF\b`)
	// serverOwnRE is a statement only the server itself logs (Redis's
	// failed background save, its append-only file unwritable): whoever's
	// log holds it is the server, whatever the workload is called.
	serverOwnRE = regexp.MustCompile(`(?i)Background saving error|Write error saving DB on disk|Failed opening the (?:temp )?RDB file|Can't save in background|Error writing to the AOF file`)
	// serverWhyRE is the server's own reason for the block: the device
	// full, memory refused to a fork.
	serverWhyRE = regexp.MustCompile(`(?i)No space left on device|Cannot allocate memory|Disk quota exceeded|Read-only file system|Permission denied`)
)

// alarmServer names the kind of server an alarm line comes from.
func alarmServer(line string) string {
	l := strings.ToLower(line)
	switch {
	case strings.Contains(l, "publishers will be blocked") || strings.Contains(l, "resource limit alarm") || strings.Contains(l, "rabbit@") ||
		strings.Contains(l, "vm_memory_high_watermark") || strings.Contains(l, "free disk space is insufficient") ||
		strings.Contains(l, "connection.blocked") || strings.Contains(l, "amqp"):
		return "rabbitmq"
	case strings.Contains(l, "opensearch") && (strings.Contains(l, "watermark") || strings.Contains(l, "cluster_block_exception") || strings.Contains(l, "read-only")):
		return "opensearch"
	case strings.Contains(l, "watermark") || strings.Contains(l, "read-only / allow delete") || strings.Contains(l, "cluster_block_exception") || strings.Contains(l, "forbidden/12"):
		return "elasticsearch"
	case strings.Contains(l, "misconf") || strings.Contains(l, "command not allowed when used memory") || matchLine(serverOwnRE, line):
		return "redis"
	}
	return ""
}

// alarmResource is the resource an alarm line is about.
func alarmResource(line string) string {
	l := strings.ToLower(line)
	switch {
	case strings.Contains(l, "disk") || strings.Contains(l, "read-only") || strings.Contains(l, "misconf") || strings.Contains(l, "forbidden/12") || strings.Contains(l, "no space left"):
		return "disk"
	case strings.Contains(l, "memory"):
		return "memory"
	}
	return ""
}

// detectResourceAlarms finds servers that state they block their clients'
// writes (their own log, or the reason their clients were told), and
// relates the clients whose logs show them blocked.
func detectResourceAlarms(ev *Gathered, _ []Finding) []Finding {
	byServer := map[string]*Finding{}
	var order []string
	// Clients that log being blocked, by the server kind they name.
	clients := map[string][]string{}
	clientLine := map[string]string{}
	for set, t := range incidentTemplates(ev) {
		for _, l := range t.Lines() {
			if !matchLine(blockedClientRE, l) || matchLine(alarmLineRE, l) && set.Host {
				continue
			}
			srv := orWord(alarmServer(l), WellKnownDependency(l, DependencyTarget(l)))
			if srv == "" || srv == set.Subject || containsStr(clients[srv], set.Subject) {
				continue
			}
			clients[srv] = append(clients[srv], set.Subject)
			clientLine[srv+"\x00"+set.Subject] = l
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		cleared := alarmClearedAt(set)
		for _, t := range set.Templates {
			if t.Incident == 0 && !(t.Baseline > 0 && ev.Window.recent(t.LastSeen)) {
				continue
			}
			line := templateLine(t, alarmLineRE)
			if line == "" {
				continue
			}
			srv := alarmServer(line)
			role := hostRole(*set)
			// Redis never logs the replies it refuses commands with: a line
			// quoting one is a client's, whatever host logged it, unless it
			// was read on the server itself (redis-cli in its pod).
			own := (set.Host || role != "") && !matchLine(refusalReplyRE, line) || srv != "" && strings.Contains(strings.ToLower(set.Subject), srv) || matchLine(serverOwnRE, line)
			if srv == "" {
				srv = orWord(role, set.Subject)
			}
			// A client quoting the server's refusal (MISCONF, OOM command
			// not allowed) reports the server's state, one hop away.
			client := !own && srv != set.Subject
			f := byServer[srv]
			if f == nil {
				f = &Finding{Kind: KindResourceAlarm, Subject: srv, Namespace: set.Namespace, Source: set.Origin, Object: set.Origin + " " + set.Source,
					Time: orTime(t.FirstIncident, t.FirstSeen), Severity: SevCritical, Weight: 0.95}
				byServer[srv] = f
				order = append(order, srv)
			}
			if client {
				f.Weight = min(f.Weight, 0.8)
				f.setFact("caller", set.Subject)
			} else {
				f.Weight = 0.95
				f.Object = set.Origin + " " + set.Source
				delete(f.Facts, "caller")
				host := set.Subject
				if m := findSubmatch(rabbitNodeRE, line); m != nil {
					f.Related = appendNew(f.Related, m[1])
				}
				f.setFact("host", host)
				f.Related = appendNew(f.Related, host)
				// The server's own reason (its device full) is why it
				// blocks: the deepest hop its log reaches.
				for _, l := range t.Lines() {
					if m := findString(serverWhyRE, l); m != "" && f.fact("why") == "" {
						f.setFact("why", fmt.Sprintf("%s's own log: %s", host, quote(ReadableLine(l), 160)))
					}
				}
			}
			f.Time = earliest(f.Time, orTime(t.FirstIncident, t.FirstSeen))
			if res := alarmResource(line); res != "" {
				f.setFact("resource", res)
			}
			// The alarm's own statement leads, its numbers follow.
			if strings.Contains(strings.ToLower(line), "alarm set") || f.fact("line") == "" {
				delete(f.Facts, "line")
				f.setFact("line", line)
			}
			if m := findSubmatch(alarmNumbersRE, line); m != nil {
				free, _ := strconv.ParseFloat(m[1], 64)
				limit, _ := strconv.ParseFloat(m[2], 64)
				f.setFact("level", fmt.Sprintf("free %s, below its limit of %s", decimalBytes(free), decimalBytes(limit)))
			}
			if strings.Contains(strings.ToLower(line), "publishers") {
				f.setFact("blocks", "publishes")
			}
			if !cleared.IsZero() && cleared.After(t.LastSeen) {
				f.setFact("resolved", "true")
				f.Weight = 0.4
			}
			f.Evidence = appendNew(f.Evidence, templateEvidence(*set, t, line))
			f.addCount(t.Incident + t.Baseline)
		}
	}
	var out []Finding
	for _, srv := range order {
		f := byServer[srv]
		if srv == "rabbitmq" && f.fact("blocks") == "" {
			f.setFact("blocks", "publishes")
		}
		var names []string
		for _, c := range clients[srv] {
			if c == f.fact("host") {
				continue
			}
			names = append(names, c)
			if len(f.Evidence) < 4 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs that the %s blocks it: %s", c, srv, quote(ReadableLine(clientLine[srv+"\x00"+c]), 200)))
			}
		}
		if len(names) > 0 {
			f.setFact("clients", strings.Join(names, ", "))
		}
		alarmMetrics(ev, f)
		if strings.Contains(f.fact("resource"), "disk") {
			if held, e := heldDeletedFiles(ev.Commands); held != "" {
				f.setFact("held", held)
				f.Evidence = append(f.Evidence, e)
			}
		}
		if srv == "elasticsearch" || srv == "opensearch" {
			searchDomain(ev, f)
		}
		// Only clients named the server, by its software: the one
		// workload of the cluster that runs that software is the instance
		// they call.
		if f.fact("host") == "" && f.fact("domain") == "" {
			if inst := softwareInstance(ev, srv); inst != "" {
				f.setFact("host", inst)
				f.Related = appendNew(f.Related, inst)
			}
		}
		// A server that runs as a workload of the cluster is named by it
		// (redis-sessions, not redis), the software kept as its role.
		if h := f.fact("host"); h != "" && h != f.Subject && f.fact("domain") == "" && workloadInCluster(ev, h) {
			f.setFact("server", f.Subject)
			f.Subject = h
		}
		if srv == "redis" && f.fact("resource") == "memory" {
			redisNoRoom(ev, f)
		}
		what := f.Subject
		if sv := f.fact("server"); sv != "" {
			what = sv + " " + f.Subject
		} else if h := f.fact("host"); h != "" && h != f.Subject {
			what = f.Subject + " on " + h
		}
		f.Summary = fmt.Sprintf("%s raised its %s alarm and blocks %s (from %s)", what, alarmPhrase(f.fact("resource")), orWord(f.fact("blocks"), "writes"), hm(f.Time))
		out = append(out, *f)
	}
	return out
}

// alarmClearedAt is the last time a set logged an alarm clearing.
func alarmClearedAt(set *LogSet) (t0 time.Time) {
	for _, t := range set.Templates {
		if matchLine(alarmClearedRE, t.Example) || matchLine(alarmClearedRE, t.Last) {
			if t.LastSeen.After(t0) {
				t0 = t.LastSeen
			}
		}
	}
	return t0
}

// alarmMetrics adds what the server's metrics say: an alarm gauge set,
// and the queue that grows the most, else the largest one (what fills the
// disk or memory of a broker is its messages).
func alarmMetrics(ev *Gathered, f *Finding) {
	type queue struct {
		name     string
		from, to float64
	}
	var qs []queue
	for _, ms := range ev.Metrics {
		n := strings.ToLower(ms.Name)
		if !strings.Contains(n, f.Subject) && !strings.Contains(n, strings.ReplaceAll(f.Subject, "-", "_")) {
			continue
		}
		for _, s := range ms.Series {
			if len(s.Points) == 0 {
				continue
			}
			first, last := s.Points[0].V, s.Points[len(s.Points)-1].V
			switch {
			case strings.Contains(n, "alarm") && last >= 1 && len(f.Evidence) < 5:
				f.Evidence = append(f.Evidence, fmt.Sprintf("metric %s is %g (alarm in effect) at %s", ms.Name, last, ts(s.Points[len(s.Points)-1].T)))
			case strings.Contains(n, "queue") && strings.Contains(n, "messages") && s.Labels["queue"] != "":
				qs = append(qs, queue{s.Labels["queue"], first, last})
			}
		}
	}
	if len(qs) == 0 {
		return
	}
	sort.SliceStable(qs, func(i, j int) bool { return qs[i].to-qs[i].from > qs[j].to-qs[j].from })
	if g := qs[0]; g.to > g.from*1.2 && g.to-g.from >= 1000 {
		f.setFact("queue", g.name)
		f.setFact("growing", fmt.Sprintf("the queue %s keeps growing (%s → %s messages)", g.name, compactCount(g.from), compactCount(g.to)))
		return
	}
	sort.SliceStable(qs, func(i, j int) bool { return qs[i].to > qs[j].to })
	if g := qs[0]; g.to >= 1e5 {
		f.setFact("queue", g.name)
		f.setFact("growing", fmt.Sprintf("its largest queue, %s, holds %s messages", g.name, compactCount(g.to)))
	}
}

// decimalBytes renders a byte count in decimal units with enough digits
// to tell a value from a limit just above it (1.998 GB, 2.000 GB).
func decimalBytes(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3f GB", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3f MB", v/1e6)
	}
	return fmt.Sprintf("%.0f bytes", v)
}

// compactCount renders a count as 12.9M, 9.4k or 812.
func compactCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func appendNew(list []string, s string) []string {
	if s == "" || containsStr(list, s) {
		return list
	}
	return append(list, s)
}

var (
	// searchMetricRE is a managed search service's metric namespace
	// (Amazon OpenSearch Service publishes as AWS/ES).
	searchMetricRE = regexp.MustCompile(`^AWS/(ES|OpenSearch\w*)/`)
	// retainedRE is a change to how long a store keeps its data.
	retainedRE = regexp.MustCompile(`(?i)retention|\bISM\b|\bILM\b|lifecycle polic|delete after|min_index_age|\bTTL\b|keep \d+ ?d(ays)?`)
)

// searchDomain names the managed search domain whose disk blocks its
// clients' writes, from its own CloudWatch metrics: writes blocked
// (ClusterIndexWritesBlocked at 1) and free storage falling
// (FreeStorageSpace, MiB, the least of its nodes); adds the disk use its
// nodes report (_cat/allocation), and the change to how long it keeps
// data that grew it (a retention raised in the month before).
func searchDomain(ev *Gathered, f *Finding) {
	domain := ""
	for _, ms := range ev.Metrics {
		if !matchLine(searchMetricRE, ms.Name) {
			continue
		}
		name := ms.Name[strings.LastIndex(ms.Name, "/")+1:]
		for _, s := range ms.Series {
			d := s.Labels["DomainName"]
			if d == "" || len(s.Points) == 0 {
				continue
			}
			pts := slices.Clone(s.Points)
			sort.SliceStable(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
			first, last := pts[0], pts[len(pts)-1]
			switch {
			case strings.Contains(name, "WritesBlocked") && last.V >= 1:
				since := last.T
				for i := len(pts) - 1; i >= 0 && pts[i].V >= 1; i-- {
					since = pts[i].T
				}
				domain = d
				f.Evidence = append(f.Evidence, fmt.Sprintf("CloudWatch %s of domain %s is %g from %s: the domain refuses index writes", name, d, last.V, ts(since)))
			case strings.HasPrefix(name, "FreeStorageSpace") && last.V < first.V*0.8:
				domain = d
				f.setFact("resource", "disk")
				f.Evidence = append(f.Evidence, fmt.Sprintf("CloudWatch %s of domain %s fell from %s to %s (%s → %s)", name, d, mibWord(first.V), mibWord(last.V), ts(first.T), ts(last.T)))
			}
		}
	}
	if domain == "" {
		return
	}
	f.Subject = domain
	f.setFact("domain", domain)
	if u := allocationDisk(ev.Commands); u != "" {
		f.Evidence = append(f.Evidence, u)
	}
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if !c.Timestamp.Before(f.Time) || !matchLine(retainedRE, c.Description) {
			continue
		}
		if c.Service != domain && !strings.Contains(c.Description, domain) && !strings.Contains(strings.ToLower(c.Description), "index") {
			continue
		}
		f.setFact("grew", fmt.Sprintf("what grew its data: the %s change of %s at %s keeps more on the same disks (%q)", c.Kind, c.Service, ts(c.Timestamp), c.Description))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
	}
}

// mibWord renders a size in MiB (CloudWatch's FreeStorageSpace unit).
func mibWord(v float64) string {
	if v >= 1024 {
		return fmt.Sprintf("%.1f GiB", v/1024)
	}
	return fmt.Sprintf("%.0f MiB", v)
}

// allocationDisk reads the disk use of a search cluster's data nodes from
// the output of _cat/allocation?v (column disk.percent): "" when no such
// output was handed over.
func allocationDisk(cmds []evidence.CommandOutput) string {
	for _, c := range cmds {
		col := -1
		var pcts []string
		for _, l := range c.Lines {
			fs := strings.Fields(l)
			if col < 0 {
				col = slices.Index(fs, "disk.percent")
				continue
			}
			if col < len(fs) && fs[0] != "UNASSIGNED" {
				if _, err := strconv.Atoi(fs[col]); err == nil {
					pcts = append(pcts, fs[col]+"%")
				}
			}
		}
		if len(pcts) > 0 {
			return fmt.Sprintf("_cat/allocation: data nodes at %s disk used", strings.Join(pcts, ", "))
		}
	}
	return ""
}

// blockReasonRE is the reason a search cluster gives for a block, inside
// the bulk response a client logs (JSON, or Ruby's "reason"=>"...").
var blockReasonRE = regexp.MustCompile(`"reason"\s*(?::|=>)\s*"([^"]+)"|reason=([^\]]+\])`)

// blockReason is the part of a line that says why the server blocks its
// clients: the reason of a bulk item's error, else the line.
func blockReason(line string) string {
	if m := findSubmatch(blockReasonRE, line); m != nil {
		return orWord(m[1], m[2])
	}
	r := ReadableLine(line)
	// A client's line often wraps the server's statement deep inside its
	// own (a servlet's "Request processing failed: ..." chain): quote from
	// a little before the statement so the server's words are read.
	if loc := alarmLineRE.FindStringIndex(r); loc != nil && loc[1] > 160 {
		start := max(0, loc[0]-100)
		if i := strings.IndexByte(r[start:], ' '); i >= 0 && start > 0 {
			start += i + 1
		}
		if start > 0 {
			return "…" + r[start:]
		}
	}
	return r
}

// searchReadOnlyRE is a search cluster's statement that its disk passed
// the flood-stage watermark and its indices were made read-only
// (Elasticsearch 6 "FORBIDDEN/12/index read-only / allow delete", 7+ and
// OpenSearch "disk usage exceeded flood-stage watermark", the node's own
// DiskThresholdMonitor line).
var searchReadOnlyRE = regexp.MustCompile(`(?i)flood[ -]stage|read-only-allow-delete|read_only_allow_delete|index read-only / allow delete|FORBIDDEN/12/`)

// searchReadOnly tells whether an alarm line is a search cluster's
// flood-stage read-only block.
func searchReadOnly(line string) bool {
	return line != "" && matchLine(searchReadOnlyRE, line)
}

// softwareInstance is the one workload of the cluster that runs a server's
// software (its name or its image names it: redis-sessions,
// bitnami/redis): "" when none or several do.
func softwareInstance(ev *Gathered, software string) string {
	if software == "" {
		return ""
	}
	var found []string
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		w := workloadOfName(p.Name)
		runs := strings.Contains(strings.ToLower(w), software)
		for _, c := range p.Spec.Containers {
			img := strings.ToLower(c.Image)
			if j := strings.LastIndex(img, "/"); j >= 0 {
				img = img[j+1:]
			}
			if j := strings.IndexAny(img, ":@"); j >= 0 {
				img = img[:j]
			}
			runs = runs || img != "" && strings.Contains(img, software)
		}
		if runs && !slices.Contains(found, w) {
			found = append(found, w)
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return ""
}

// workloadInCluster reports whether a name is a workload whose pods were
// listed.
func workloadInCluster(ev *Gathered, name string) bool {
	for i := range ev.K8s.Pods {
		if workloadOfName(ev.K8s.Pods[i].Name) == name {
			return true
		}
	}
	return false
}

// lsofDeletedRE is a row of lsof +L1 (or lsof | grep deleted): a file
// unlinked while a process still holds it open.
var lsofDeletedRE = regexp.MustCompile(`^(\S+)\s+(\d+)\s+(\S+)\s+\d+[rwu]\s+REG\s+\S+\s+(\d+)\s+0?\s*\d*\s+(/\S+) \(deleted\)$`)

// heldDeletedFiles reads the space a full disk keeps for files deleted
// while still open (a log rotated away under a process that still writes
// it): the largest such file from lsof's output, said in words, and the
// evidence line.
func heldDeletedFiles(cmds []evidence.CommandOutput) (string, string) {
	var best []string
	size := int64(0)
	src := ""
	for _, c := range cmds {
		for _, l := range c.Lines {
			m := findSubmatch(lsofDeletedRE, strings.TrimSpace(l))
			if m == nil {
				continue
			}
			n, _ := strconv.ParseInt(m[4], 10, 64)
			if n > size {
				size, best, src = n, m, c.Command
			}
		}
	}
	if best == nil || size < 1<<30 {
		return "", ""
	}
	gib := float64(size) / (1 << 30)
	held := fmt.Sprintf("the disk is filled by a deleted file still held open: %s (pid %s, user %s) keeps writing %s (deleted), %.1f GiB (lsof +L1) — the file was rotated or removed (logrotate without copytruncate or a reopen) while the process kept its descriptor, so df counts space du cannot see; restarting %s (or truncating it through /proc/%s/fd) frees it", best[1], best[2], best[3], best[5], gib, best[1], best[2])
	return held, fmt.Sprintf("%s: %s (pid %s) holds %s (deleted), %.1f GiB", truncate(src, 60), best[1], best[2], best[5], gib)
}

var (
	// redisPolicyRE is the eviction policy redis-cli info memory (or
	// CONFIG GET) prints.
	redisPolicyRE = regexp.MustCompile(`^\s*(?:maxmemory_policy:|maxmemory-policy\s*$)(\S*)`)
	// redisKeyspaceRE is a database line of redis-cli info keyspace.
	redisKeyspaceRE = regexp.MustCompile(`^\s*db\d+:keys=(\d+),expires=(\d+)`)
	// redisNoTTLRE is redis-cli's answer to TTL for a key without expiry.
	redisNoTTLRE = regexp.MustCompile(`^\s*\(integer\) -1\s*$|^\s*-1\s*$`)
)

// redisNoRoom reads why a Redis at maxmemory refuses writes rather than
// making room, from redis-cli's answers: a noeviction policy evicts
// nothing, and keys written without a TTL (few of the keys expire, the
// key sampled has none) only accumulate. A change naming the server
// before the alarm is what began writing them.
func redisNoRoom(ev *Gathered, f *Finding) {
	host := orWord(f.fact("host"), f.Subject)
	var policy, keys, expires, noTTL string
	for _, o := range ev.Commands {
		if !strings.Contains(o.Run, "redis-cli") || o.Pod != "" && !strings.HasPrefix(o.Pod, host) && workloadOfName(o.Pod) != host {
			continue
		}
		for i, l := range o.Lines {
			if m := findSubmatch(redisPolicyRE, l); m != nil {
				policy = m[1]
				if policy == "" && i+1 < len(o.Lines) {
					policy = strings.TrimSpace(o.Lines[i+1])
				}
			}
			if m := findSubmatch(redisKeyspaceRE, l); m != nil {
				keys, expires = m[1], m[2]
			}
			if matchLine(redisNoTTLRE, l) && strings.Contains(strings.ToLower(o.Run), " ttl ") {
				fs := strings.Fields(o.Run)
				noTTL = fs[len(fs)-1]
			}
		}
	}
	var why []string
	if policy == "noeviction" {
		why = append(why, "its maxmemory-policy is noeviction, so at maxmemory it evicts nothing and refuses every write")
	}
	k, _ := strconv.Atoi(keys)
	e, _ := strconv.Atoi(expires)
	if k > 0 && e*10 < k {
		w := fmt.Sprintf("only %d of its %d keys have a TTL", e, k)
		if noTTL != "" {
			w += fmt.Sprintf(" (%s has none: TTL -1)", noTTL)
		}
		why = append(why, w+", so keys written without an expiry accumulate until memory is full")
	} else if noTTL != "" {
		why = append(why, fmt.Sprintf("%s has no TTL (-1): keys written without an expiry accumulate", noTTL))
	}
	if len(why) == 0 {
		return
	}
	f.setFact("why", strings.Join(why, "; "))
	f.setFact("no_ttl", "true")
	f.Evidence = append(f.Evidence, fmt.Sprintf("redis-cli on %s: %s", host, strings.Join(why, "; ")))
	if len(why) < 2 && policy != "noeviction" {
		return
	}
	var last *evidence.Change
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		if c.Timestamp.After(f.Time) || !strings.Contains(c.Description, host) || c.Service == host {
			continue
		}
		if last == nil || c.Timestamp.After(last.Timestamp) {
			c := c
			last = &c
		}
	}
	if last != nil {
		why = append(why, fmt.Sprintf("the change that began writing to %s: %s %s at %s (%s)", host, orWord(last.Service, "a service"), orWord(last.Revision, last.Kind), ts(last.Timestamp), clip(last.Description, 160)))
		delete(f.Facts, "why")
		f.setFact("why", strings.Join(why, "; "))
	}
}
