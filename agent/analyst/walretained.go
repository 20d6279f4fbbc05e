package analyst

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A database's disk filled by its own transaction log: a replication slot
// (PostgreSQL) keeps every WAL segment its consumer has not confirmed, so
// a slot whose consumer is gone — a deleted DMS task, a Debezium connector
// removed, a replica decommissioned, a logical subscription dropped —
// retains WAL without bound until the volume is full and the server stops
// ("could not write to file "pg_wal/xlogtemp…": No space left on device").
// MySQL's binary logs kept for a replica that no longer reads them fill a
// disk the same way. The disk-full errors are the symptom; what grew is
// read from the provider's metrics (RDS TransactionLogsDiskUsage,
// OldestReplicationSlotLag, ReplicationSlotDiskUsage, BinLogDiskUsage;
// postgres_exporter's pg_replication_slots lag), the slots as psql prints
// pg_replication_slots (active = f, the WAL retained), and the change that
// removed the consumer, often days before.

// KindWALRetained is a database disk filled with transaction logs a
// replication slot retains.
const KindWALRetained Kind = "wal_retained"

var walRetained = &mechanism{
	kind:   KindWALRetained,
	class:  classCause,
	label:  "database disk filled by WAL a replication slot retains",
	detect: detectWALRetained,
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindDiskFull, KindSaturation, KindDatabase, KindConnRefused, KindVolumeClaim:
			return true
		}
		// The slot's consumer failing is why the slot is inactive.
		return h.fact("consumer") != "" && f.Subject == h.fact("consumer")
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		text := changeText(c)
		if matchLine(consumerGoneRE, text) {
			return true
		}
		// A credential rotated under the consumer that now fails to
		// authenticate.
		return h.fact("consumer_auth") != "" && matchLine(slotCredentialRE, text)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		db := orWord(h.fact("instance"), h.Subject)
		if h.fact("filling") != "" {
			return describeSlotFilling(h, db)
		}
		d := fmt.Sprintf("the database %s ran out of storage (no space left on device)", db)
		d += h.quoteClause(": ", "line", 160)
		d += h.quoteClause("; the server itself could not write its log: ", "server_line", 160)
		switch s := h.fact("slots"); {
		case walIsBinlog(h):
			d += fmt.Sprintf(". What filled the disk is its binary log (binlog): %s; the binary logs are kept for a replica or change-data consumer that no longer reads them", h.fact("grew"))
		case s != "":
			d += fmt.Sprintf(". What filled the disk is its transaction log (WAL): %s; the replication slot %s is inactive and retains it", h.fact("grew"), s)
		default:
			d += fmt.Sprintf(". What filled the disk is its transaction log (WAL): %s; a replication slot whose consumer no longer reads retains it, so no checkpoint can remove a segment", h.fact("grew"))
		}
		if c := h.fact("consumer_gone"); c != "" {
			d += fmt.Sprintf(". Its consumer is gone: %s", c)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		db := orWord(h.fact("instance"), h.Subject)
		if walIsBinlog(h) {
			r.high("Purge the binary logs of %s no replica needs (PURGE BINARY LOGS, or lower binlog retention hours) and grow the storage if the server cannot start", db)
			r.med("Remove the replication or change-data consumer that stopped reading from %s, or make it read again", db)
			r.low("Alert on BinLogDiskUsage and on replica lag")
			return
		}
		if c := h.fact("consumer"); c != "" {
			r.high("Bring the slot's consumer %s back first (%s): once it reads again it confirms its position and the retained WAL is released", c, orWord(h.fact("consumer_fix"), "fix what makes it fail"))
			r.med("If %s cannot be repaired before the volume of %s fills, grow the volume, or drop slot %s and re-snapshot the consumer (its pending changes are lost)", c, db, h.fact("slots"))
			r.low("Set max_slot_wal_keep_size on %s and alert on inactive replication slots and their retained WAL", db)
			return
		}
		r.high("Drop the inactive replication slot%s on %s (SELECT pg_drop_replication_slot(...)) so that the next checkpoint removes the retained WAL; grow the storage first if the server cannot start", rotatedIf(h.fact("slots"), " "+h.fact("slots")), db)
		r.med("Set max_slot_wal_keep_size on %s so that an abandoned slot is invalidated before it fills the disk, and drop a consumer's slot when its task or connector is deleted", db)
		r.low("Alert on OldestReplicationSlotLag / TransactionLogsDiskUsage (or pg_replication_slots lag) and on inactive slots")
	},
}

var (
	// Metrics of the transaction log a database keeps and of what its
	// replication slots retain.
	walMetricRE = regexp.MustCompile(`(?i)OldestReplicationSlotLag|ReplicationSlotDiskUsage|TransactionLogsDiskUsage|BinLogDiskUsage|replication_slots?_.*(?:lag|retained|lsn_diff|wal)|wal_(?:size|retained)_bytes|pg_wal_size`)
	// A change that removed a consumer of the database's changes.
	consumerGoneRE = regexp.MustCompile(`(?i)(?:destroy|delet|remov|retir|decommission|drop|disabl|tear down|teardown)\w*\b.{0,80}(?:\bDMS\b|replication|\bCDC\b|debezium|subscription|replica\b|standby|logical|connector|\bslot\b)|(?:\bDMS\b|replication task|\bCDC\b|debezium|subscription|connector|replica\b|standby)\b.{0,80}(?:destroyed|deleted|removed|retired|decommissioned|dropped|disabled)`)
	// A command that looked for the consumer and found nothing.
	consumerLookupRE = regexp.MustCompile(`(?i)replication-task|connectors?\b|subscription|pg_stat_replication`)
	notFoundRE       = regexp.MustCompile(`(?i)ResourceNotFound|not found|does not exist|No Tasks found|\(0 rows\)`)
	// A database server's log writing its WAL when the disk is full.
	walFullLineRE = regexp.MustCompile(`(?i)pg_wal/|xlogtemp|could not write to file .*No space left|binlog.*(?:No space|disk full)`)
)

// detectWALRetained follows a database's disk-full errors to what grew:
// transaction logs a replication slot retains.
func detectWALRetained(ev *Gathered, found []Finding) []Finding {
	var full *Finding
	for i := range found {
		f := &found[i]
		if f.Kind != KindDiskFull {
			continue
		}
		l := f.fact("line")
		db := dbServerName(f.Subject) || matchLine(dbClientRE, l) || matchLine(walFullLineRE, l) || strings.Contains(l, "could not extend file")
		if db && (full == nil || f.Time.Before(full.Time)) {
			full = f
		}
	}
	if full == nil {
		return detectSlotFilling(ev, found)
	}
	// What grew: the metrics of the transaction log and its slots.
	type grown struct {
		name       string
		last, peak float64
		at         time.Time
		instance   string
	}
	var grew []grown
	for _, ms := range ev.Metrics {
		if !matchLine(walMetricRE, ms.Name) {
			continue
		}
		g := grown{name: ms.Name[strings.LastIndexByte(ms.Name, '/')+1:]}
		for _, s := range ms.Series {
			for _, p := range s.Points {
				if p.V > g.peak {
					g.peak, g.at = p.V, p.T
				}
			}
			if n := len(s.Points); n > 0 {
				g.last = math.Max(g.last, s.Points[n-1].V)
			}
			inst, _, _ := strings.Cut(s.Labels["instance"], ":")
			g.instance = orWord(g.instance, orWord(s.Labels["DBInstanceIdentifier"], inst))
		}
		// More than max_wal_size's usual few GiB: something holds it.
		if g.peak >= 4<<30 {
			grew = append(grew, g)
		}
	}
	sort.Slice(grew, func(i, j int) bool { return grew[i].peak > grew[j].peak })
	// The slots as psql prints them.
	var inactive []string
	retained, slotDB := "", ""
	for _, c := range ev.Commands {
		for _, t := range sqlTables(c.Lines) {
			if !slices.Contains(t.cols, "slot_name") || !slices.Contains(t.cols, "active") {
				continue
			}
			for r := range t.rows {
				if a := strings.ToLower(t.cell(r, "active")); a == "f" || a == "false" || a == "0" {
					inactive = appendNew(inactive, t.cell(r, "slot_name"))
					slotDB, _ = sqlInstanceOf(c)
					for _, col := range t.cols {
						if strings.Contains(col, "retained") || strings.Contains(col, "lag") || strings.Contains(col, "size") {
							retained = orWord(retained, t.cell(r, col))
						}
					}
				}
			}
		}
	}
	if len(grew) == 0 && len(inactive) == 0 {
		return nil
	}
	f := Finding{Kind: KindWALRetained, Subject: full.Subject, Object: full.Object, Namespace: full.Namespace, Time: full.Time,
		Severity: SevCritical, Weight: 0.85, Source: full.Source, Related: full.Related}
	f.setFact("line", full.fact("line"))
	var parts []string
	for i, g := range grew {
		if i >= 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s reached %s at %s", g.name, humanBytes(int64(g.peak)), hm(g.at)))
		f.setFact("instance", g.instance)
		f.Evidence = append(f.Evidence, fmt.Sprintf("CloudWatch/metrics %s of %s reached %s at %s (last %s)", g.name, orWord(g.instance, full.Subject), humanBytes(int64(g.peak)), ts(g.at), humanBytes(int64(g.last))))
	}
	if len(inactive) > 0 {
		s := strings.Join(inactive, ", ")
		f.setFact("slots", s)
		p := fmt.Sprintf("pg_replication_slots shows %s inactive", s)
		if retained != "" {
			p += " retaining " + retained
		}
		parts = append(parts, p)
		f.Evidence = append(f.Evidence, p)
	}
	f.setFact("grew", strings.Join(parts, "; "))
	// The database is the subject: its instance, else the disk-full
	// finding's database.
	for i := range found {
		if found[i].Kind == KindDiskFull && dbServerName(found[i].Subject) {
			f.Subject = found[i].Subject
			break
		}
	}
	if f.fact("instance") == "" && slotDB != "" {
		f.setFact("instance", slotDB)
	}
	if inst := f.fact("instance"); inst != "" {
		f.Related = appendNew(f.Related, f.Subject)
		f.Subject = inst
	}
	f.Related = appendNew(f.Related, full.Subject)
	// The server's own log of the WAL it could not write.
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			if matchLine(walFullLineRE, t.Example) && strings.Contains(t.Example, "pg_wal") || strings.Contains(strings.ToLower(t.Example), "binlog") && matchLine(walFullLineRE, t.Example) {
				f.setFact("server_line", t.Example)
				f.Evidence = append(f.Evidence, templateEvidence(ev.Logs[i], t, t.Example))
				break
			}
		}
	}
	if len(grew) > 0 && len(inactive) > 0 {
		f.Weight = 0.95
	}
	// The consumer that is gone: a change that removed it (in the window
	// or the month before), an operator's look-up that found nothing.
	var gone []string
	for _, c := range append(append([]evidence.Change(nil), ev.Earlier...), ev.Changes...) {
		if matchLine(consumerGoneRE, c.Description) && !c.Timestamp.After(full.Time) {
			gone = append(gone, fmt.Sprintf("%s %s (%s, %s)", c.Kind, quote(c.Description, 140), orWord(c.Revision, c.Service), c.Timestamp.UTC().Format("2006-01-02 15:04 UTC")))
		}
	}
	for _, c := range ev.Commands {
		if !matchLine(consumerLookupRE, c.Command) {
			continue
		}
		for _, l := range c.Lines {
			if matchLine(notFoundRE, l) {
				gone = append(gone, fmt.Sprintf("`%s` finds nothing: %s", truncate(c.Command, 100), quote(strings.TrimSpace(l), 140)))
				break
			}
		}
	}
	if len(gone) > 0 {
		f.setFact("consumer_gone", strings.Join(gone, "; "))
		f.Evidence = append(f.Evidence, "the consumer is gone: "+strings.Join(gone, "; "))
		f.Weight = math.Min(0.97, f.Weight+0.05)
	}
	f.Evidence = append(f.Evidence, full.Evidence...)
	f.Summary = fmt.Sprintf("%s: disk filled by transaction logs a replication slot retains (%s)", orWord(f.fact("instance"), f.Subject), truncate(parts[0], 100))
	return []Finding{f}
}

// dbServerName reports whether a subject names a database server.
func dbServerName(s string) bool {
	switch strings.ToLower(s) {
	case "postgresql", "postgres", "mysql", "mariadb", "mongodb", "sqlserver", "oracle":
		return true
	}
	return false
}

// walIsBinlog reports whether the log that grew is MySQL's binary log.
func walIsBinlog(h *Hypothesis) bool {
	return strings.Contains(strings.ToLower(h.fact("grew")+" "+h.fact("line")), "binlog")
}
