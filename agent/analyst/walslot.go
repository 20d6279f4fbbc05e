package analyst

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The same cause before the disk is full: a volume alert (filling, not
// yet full) on a database whose replication slot went inactive. The
// slot's consumer — a Debezium connector, a Kafka Connect worker, a
// logical subscriber, a standby — stopped reading (it crashloops, its
// credentials were rotated, it was removed), the slot keeps every WAL
// segment from the consumer's last confirmed position, and the retained
// WAL grows with the database's write rate until the volume is full. The
// slots are read from postgres_exporter's series (pg_replication_slots
// active and lag or retained bytes, per slot_name) or pg_replication_slots
// as psql prints it; the consumer is the workload the slot is named after
// (orders_cdc, orders-cdc) or the change-data consumer among the failing
// workloads, and why it stopped is that workload's own failure.

// slotRetains is what the exporter's series say of one replication slot.
type slotRetains struct {
	name          string
	server        string    // the database the series come from
	retained      float64   // WAL retained at the end, bytes
	rate          float64   // its growth, bytes per second
	inactiveSince time.Time // when active fell to 0 (zero when unknown)
	inactive      bool
	growingSince  time.Time // when the retained WAL began to grow
}

// slotSeries reads the slots from the exporter's series: active gauges
// and retained-WAL series labelled with slot_name.
func slotSeries(sets []MetricSet, end time.Time) map[string]*slotRetains {
	slots := map[string]*slotRetains{}
	get := func(l evidence.Labels) *slotRetains {
		n := orWord(l["slot_name"], l["slot"])
		if n == "" {
			return nil
		}
		s := slots[n]
		if s == nil {
			s = &slotRetains{name: n}
			slots[n] = s
		}
		if s.server == "" {
			s.server = slotServer(l)
		}
		return s
	}
	for _, ms := range sets {
		name := strings.ToLower(ms.Name)
		active := strings.Contains(name, "slot") && strings.HasSuffix(name, "_active")
		// Bytes retained or behind, not a position (current_wal_lsn,
		// confirmed_flush_lsn) nor what may still be written
		// (safe_wal_size).
		retained := matchLine(walMetricRE, ms.Name) && strings.Contains(name, "slot") &&
			!strings.HasSuffix(name, "_lsn") && !strings.Contains(name, "safe_wal") && !strings.Contains(name, "wal_status")
		if !active && !retained {
			continue
		}
		for _, se := range ms.Series {
			s := get(se.Labels)
			pts := pointsUpTo(se, end)
			if s == nil || len(pts) == 0 {
				continue
			}
			last := pts[len(pts)-1]
			if active {
				s.inactive = last.V == 0
				if s.inactive {
					for i := len(pts) - 1; i > 0; i-- {
						if pts[i-1].V > 0 {
							s.inactiveSince = pts[i].T
							break
						}
					}
				}
				continue
			}
			s.retained = math.Max(s.retained, last.V)
			for _, p := range pts {
				if p.V >= 0.05*last.V {
					s.growingSince = p.T
					break
				}
			}
			if span := last.T.Sub(s.growingSince).Seconds(); span > 0 {
				s.rate = (last.V - pts[0].V) / last.T.Sub(pts[0].T).Seconds()
			}
		}
	}
	return slots
}

// slotServer names the database a series of the exporter measures: its
// server label's host ("orders-db:5432"), else the workload of its pod.
func slotServer(l evidence.Labels) string {
	for _, k := range []string{"server", "instance"} {
		if v := l[k]; v != "" && !strings.Contains(v, "exporter") {
			h, _, _ := strings.Cut(v, ":")
			if h != "" && !ipLike(h) {
				if i := strings.Index(h, ".svc"); i > 0 {
					h = h[:strings.IndexByte(h, '.')]
				}
				return h
			}
		}
	}
	if p := l["pod"]; p != "" {
		return workloadOfPodName(p)
	}
	return ""
}

func ipLike(h string) bool {
	return strings.Trim(h, "0123456789.") == "" || strings.Contains(h, "::")
}

// slotConsumer finds the failing workload that consumes a slot: the one
// the slot is named after, else a change-data consumer among the failing
// workloads. why is that workload's own failure, in its own words.
func slotConsumer(slot string, found []Finding) (consumer, why string, f *Finding) {
	norm := strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(slot))
	rank := func(k Kind) int {
		switch k {
		case KindAuth:
			return 0
		case KindCrashLoop, KindAppCrash:
			return 1
		case KindLogErrors:
			return 2
		}
		return -1
	}
	best := math.MaxInt
	for i := range found {
		c := &found[i]
		r := rank(c.Kind)
		if r < 0 || c.Subject == "" {
			continue
		}
		sub := strings.ToLower(c.Subject)
		named := sub == norm || strings.Contains(norm, sub) && len(sub) > 3 || strings.Contains(sub, norm)
		if !named && !matchLine(cdcWordsRE, sub+" "+c.Summary+" "+c.fact("line")+" "+c.fact("last_log")) {
			continue
		}
		if named {
			r -= 10
		}
		if r < best {
			best, consumer, f = r, c.Subject, c
		}
	}
	if f == nil {
		return "", "", nil
	}
	why = f.Summary
	if l := orWord(f.fact("line"), f.fact("last_log")); l != "" {
		why += ": " + quote(ReadableLine(l), 180)
	}
	return consumer, why, f
}

// detectSlotFilling reads a database whose inactive replication slot
// retains a growing WAL, with no disk-full error yet.
func detectSlotFilling(ev *Gathered, found []Finding) []Finding {
	slots := slotSeries(ev.Metrics, ev.Window.End)
	// The slots as psql prints them.
	for _, c := range ev.Commands {
		for _, t := range sqlTables(c.Lines) {
			if !containsStr(t.cols, "slot_name") || !containsStr(t.cols, "active") {
				continue
			}
			for r := range t.rows {
				n := t.cell(r, "slot_name")
				a := strings.ToLower(t.cell(r, "active"))
				s := slots[n]
				if s == nil {
					s = &slotRetains{name: n}
					slots[n] = s
				}
				if s.server == "" {
					s.server, _ = sqlInstanceOf(c)
				}
				if a == "f" || a == "false" || a == "0" {
					s.inactive = true
				}
				for _, col := range t.cols {
					if strings.Contains(col, "retained") || strings.Contains(col, "lag") || strings.Contains(col, "size") {
						if b, ok := parseHumanBytes(t.cell(r, col)); ok {
							s.retained = math.Max(s.retained, b)
						}
					}
				}
			}
		}
	}
	var held []*slotRetains
	for _, s := range slots {
		if s.inactive && s.retained >= 4<<30 {
			held = append(held, s)
		}
	}
	if len(held) == 0 {
		return nil
	}
	sort.Slice(held, func(i, j int) bool { return held[i].retained > held[j].retained })
	s := held[0]
	db := orWord(s.server, ev.Scope.Service)
	at := s.inactiveSince
	if at.IsZero() || !s.growingSince.IsZero() && s.growingSince.Before(at) {
		at = orTime(s.growingSince, at)
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindWALRetained, Subject: db, Namespace: ev.Scope.Namespace, Object: "replication slot " + s.name, Time: at,
		Severity: SevCritical, Weight: 0.9, Source: SrcMetrics}
	grew := fmt.Sprintf("replication slot %s is inactive", s.name)
	if !s.inactiveSince.IsZero() {
		grew += " since " + hm(s.inactiveSince)
	}
	grew += fmt.Sprintf(" and retains %s of WAL", humanBytes(int64(s.retained)))
	if s.rate > 0 {
		grew += fmt.Sprintf(", growing %s/h", humanBytes(int64(s.rate*3600)))
	}
	f.setFact("slots", s.name)
	f.setFact("grew", grew)
	f.setFact("filling", "true")
	f.Evidence = append(f.Evidence, "pg_replication_slots: "+grew)
	if v := volumeOfServer(ev.Metrics, db, ev.Window.End); v != "" {
		f.setFact("volume", v)
		f.Evidence = append(f.Evidence, "its volume "+v)
	}
	if consumer, why, c := slotConsumer(s.name, found); c != nil {
		f.setFact("consumer", consumer)
		f.setFact("consumer_why", why)
		f.Related = appendNew(f.Related, consumer)
		f.Evidence = append(f.Evidence, fmt.Sprintf("the slot's consumer %s does not read it: %s", consumer, why))
		if c.Kind == KindAuth || matchLine(authWordsRE, why) {
			f.setFact("consumer_auth", "true")
			f.setFact("consumer_fix", "give it the current credentials: re-sync its Secret from the secret store (an ExternalSecret or CSI driver may refresh only hours after a rotation) and restart it")
		}
	}
	f.Summary = fmt.Sprintf("%s: WAL retained by the inactive replication slot %s fills its volume", db, s.name)
	return []Finding{f}
}

// volumeOfServer says how full the volume of a database's pod is: the
// kubelet's used and capacity series of a claim named after its pod.
func volumeOfServer(sets []MetricSet, db string, end time.Time) string {
	last := func(suffix string) map[string]float64 {
		out := map[string]float64{}
		for _, ms := range sets {
			if !strings.HasSuffix(ms.Name, "kubelet_volume_stats_"+suffix) {
				continue
			}
			for _, s := range ms.Series {
				c := s.Labels["persistentvolumeclaim"]
				if pts := pointsUpTo(s, end); c != "" && len(pts) > 0 && strings.Contains(c, db) {
					out[c] = pts[len(pts)-1].V
				}
			}
		}
		return out
	}
	used, capacity := last("used_bytes"), last("capacity_bytes")
	var claims []string
	for c := range used {
		if capacity[c] > 0 {
			claims = append(claims, c)
		}
	}
	if len(claims) == 0 {
		return ""
	}
	sort.Strings(claims)
	c := claims[0]
	return fmt.Sprintf("%s is %.0f%% full (%s of %s)", c, 100*used[c]/capacity[c], humanBytes(int64(used[c])), humanBytes(int64(capacity[c])))
}

// parseHumanBytes reads a size as psql's pg_size_pretty prints it
// ("45 GB", "312 kB", "1.2 TB").
func parseHumanBytes(s string) (float64, bool) {
	var v float64
	var unit string
	if n, _ := fmt.Sscanf(strings.TrimSpace(s), "%g %s", &v, &unit); n < 1 {
		return 0, false
	}
	mult := map[string]float64{"": 1, "bytes": 1, "b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, false
	}
	return v * mult, true
}

var (
	// cdcWordsRE names a change-data consumer of a database.
	cdcWordsRE = regexp.MustCompile(`(?i)\bcdc\b|-cdc\b|debezium|kafka[ -]?connect|connect\.runtime|logical replication|subscriber|pgoutput|wal2json|dms\b`)
	// authWordsRE is a consumer refused for its credentials.
	authWordsRE = regexp.MustCompile(`(?i)authenticat\w* fail|invalid credentials|password authentication failed|SaslAuthentication|access denied|unauthori[sz]ed|SCRAM`)
	// slotCredentialRE is a change that rotated a credential.
	slotCredentialRE = regexp.MustCompile(`(?i)rotat\w*|password|secret|credential|SCRAM|\bkey\b`)
)

// describeSlotFilling explains a volume filling with WAL an inactive slot
// retains, and why its consumer stopped reading.
func describeSlotFilling(h *Hypothesis, db string) string {
	d := fmt.Sprintf("the volume of %s fills with transaction log (WAL): %s, so no checkpoint can remove a segment", db, h.fact("grew"))
	if v := h.fact("volume"); v != "" {
		d += fmt.Sprintf(" (%s)", v)
	}
	if c := h.fact("consumer"); c != "" {
		d += fmt.Sprintf(". The slot is inactive because its consumer %s is down: %s", c, h.fact("consumer_why"))
		d += fmt.Sprintf(". The two alerts are one incident: %s's failure is the cause, the volume filling its consequence", c)
	}
	return d
}
