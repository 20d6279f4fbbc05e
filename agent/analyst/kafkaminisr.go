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

// KindKafkaMinISR: Kafka partitions with fewer in-sync replicas than
// min.insync.replicas. The leader refuses writes that ask for acks=all
// (NOT_ENOUGH_REPLICAS), and producers retry until their delivery timeout
// and fail. The partitions lost their replicas because brokers stopped
// serving them: a broker whose log directory failed (a full disk, an I/O
// error) takes every replica in it offline, or shuts down when it was its
// only one. The producer's errors are the brokers' failure as it sees it;
// the brokers' own logs say why.
const KindKafkaMinISR Kind = "kafka_min_isr"

var kafkaMinISR = &mechanism{
	kind:       KindKafkaMinISR,
	class:      classCause,
	label:      "Kafka partitions below min.insync.replicas",
	detect:     detectKafkaMinISR,
	fitsChange: changeSays(kafkaChangeRE),
	// A producer's deploy near the onset does not take brokers' replicas
	// away.
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		topics := orWord(h.fact("topics"), "the topic")
		d := ""
		if b := h.fact("brokers_failed"); b != "" {
			if strings.Contains(b, ", ") {
				d = fmt.Sprintf("Kafka brokers %s took their log directory %s offline", b, orWord(h.fact("log_dir"), "(their data directory)"))
			} else {
				d = fmt.Sprintf("Kafka broker %s took its log directory %s offline", b, orWord(h.fact("log_dir"), "(its data directory)"))
			}
			if r := h.fact("dir_reason"); r != "" {
				d += fmt.Sprintf(" after writes to it failed with %q", r)
				if matchLine(diskFullRE, r) {
					d += " (disk full)"
				}
			}
			d += " and stopped serving the replicas in it; "
		}
		if r := h.fact("restarted"); r != "" {
			why := "a rolling restart"
			if h.fact("notice") != "" {
				why = "the provider's broker patching (maintenance)"
			}
			were := "were restarted one at a time"
			if !strings.Contains(r, ", ") {
				were = "was restarted"
			}
			d = fmt.Sprintf("Kafka %s %s by %s from %s%s", r, were, why, h.fact("restart_from"), h.wrapped(" to ", "restart_to", ""))
			d += h.quoteClause(" (", "notice", 160)
			if h.fact("notice") != "" {
				d += ")"
			}
			d += h.clause("; ", "tight")
			d += ". While each broker was down, "
		}
		d += fmt.Sprintf("partitions of %s on %s are left with fewer in-sync replicas (ISR) than min.insync.replicas", topics, h.Subject)
		d += h.clause(" = ", "min_isr")
		who := "the producers'"
		if p := h.fact("producers"); p != "" {
			who = p + "'s"
		}
		d += fmt.Sprintf(", so the brokers reject writes with NOT_ENOUGH_REPLICAS and %s sends fail", who)
		d += h.clause("; ", "retention")
		d += h.quoteClause(": ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if b := h.fact("brokers_failed"); b != "" {
			if matchLine(diskFullRE, h.fact("dir_reason")) {
				r.high("Free space on %s's log directory %s (lower the retention of the largest topics, delete their oldest segments, or grow the volume), then restart the broker so the directory comes back online and its replicas catch up", b, orWord(h.fact("log_dir"), ""))
			} else {
				r.high("Bring %s's log directory %s back (fix the disk, restart the broker) so its replicas rejoin the ISR", b, orWord(h.fact("log_dir"), ""))
			}
		} else if h.fact("restarted") != "" {
			r.high("Raise %s's replication factor to 3 (kafka-reassign-partitions) so that min.insync.replicas=2 still holds with one broker down during patching and rolling restarts, and replay the records the producers dropped during the restarts", orWord(h.fact("topics"), "the topic"))
		} else {
			r.high("Find why the brokers of %s's partitions fell out of the ISR (broker down, disk, network) and bring them back", orWord(h.fact("topics"), "the topic"))
		}
		r.med("Check that retention by size (retention.bytes) bounds every large topic below the disk, and that producers fail fast on NOT_ENOUGH_REPLICAS rather than block requests until the delivery timeout")
		r.low("Alert on under-replicated and under-min-ISR partitions and on the brokers' disk usage")
	},
}

var (
	// A producer or a partition leader reporting too few in-sync
	// replicas: the Java client's error code and exception, the
	// broker's own exception and its messages.
	notEnoughReplicasRE = regexp.MustCompile(`NOT_ENOUGH_REPLICAS|NotEnoughReplicas(?:AfterAppend)?Exception|fewer in-sync replicas than required|insufficient to satisfy the min\.isr requirement|(?i)Broker: Not enough in-sync replicas`)
	// A Kafka broker's own log.
	kafkaBrokerRE = regexp.MustCompile(`\(kafka\.(?:server|log|cluster|controller)\.[\w.]+\)|\(org\.apache\.kafka\.(?:storage|server)\.[\w.]+\)|\[ReplicaManager broker=\d+\]|\[KafkaServer id=\d+\]|\[Partition [\w.-]+-\d+ broker=\d+\]`)
	// A broker's log directory failing.
	logDirFailRE = regexp.MustCompile(`Stopping serving replicas in dir (\S+)|Shutdown broker because all log dirs in (\S+) have failed|Error while [\w ]+? in dir (\S+)|in the failed log directory (\S+?)\.?(?:\s|$)|LogDirFailureChannel`)
	ioErrorRE    = regexp.MustCompile(`(?i)java\.io\.IOException: (.+)|\b(No space left on device|Read-only file system|Input/output error)\b`)
	topicPartRE  = regexp.MustCompile(`(?:topic-partition|partition|for) ([A-Za-z][\w.-]*?)-\d+\b`)
	minISRRE     = regexp.MustCompile(`min\.isr requirement of (\d+)|min\.insync\.replicas[=: ]+(\d+)`)
	diskFullRE   = regexp.MustCompile(`(?i)no space left|disk full|ENOSPC`)
	// A change that grows what brokers keep, or touches the brokers.
	kafkaChangeRE   = regexp.MustCompile(`(?i)retention\.(?:ms|bytes|hours)|log\.retention|min\.insync\.replicas|replication\.factor|\bkafka\b.*\b(?:disk|volume|broker)`)
	retentionWordRE = regexp.MustCompile(`(?i)retention`)
	// A broker stopping or starting: ZooKeeper mode's KafkaServer, KRaft's
	// BrokerServer and KafkaRaftServer, a controlled shutdown.
	brokerDownRE = regexp.MustCompile(`\[(?:KafkaServer|BrokerServer) id=(\d+)\] (?:shutting down|Starting controlled shutdown)|\[(?:KafkaServer|BrokerServer) id=(\d+)\] Transition from STARTED to SHUTTING_DOWN|\[KafkaServer id=(\d+)\] Starting controlled shutdown`)
	brokerUpRE   = regexp.MustCompile(`\[(?:KafkaServer|BrokerServer) id=(\d+)\] started\b|\[BrokerServer id=(\d+)\] Transition from STARTING to STARTED|\[KafkaRaftServer nodeId=(\d+)\] Kafka Server started`)
	// A provider's notice of broker patching or maintenance: AWS Health's
	// MSK lifecycle events, Confluent Cloud and Aiven maintenance notices.
	kafkaPatchRE = regexp.MustCompile(`AWS_KAFKA_(?:PLANNED_LIFECYCLE_EVENT|SECURITY_PATCHING_EVENT|[A-Z_]*MAINTENANCE[A-Z_]*)|(?i)Amazon MSK (?:will apply|is applying|applied) [\w ]*patch|(?i)(?:MSK|Kafka|broker)s?\b[^\n]{0,60}\b(?:security patch(?:es|ing)?|maintenance (?:window|update))|(?i)restarts brokers one at a time`)
	// A topic's description from kafka-topics --describe.
	topicDescRE = regexp.MustCompile(`Topic:\s*([\w.-]+)\s.*ReplicationFactor:\s*(\d+)\b.*\bmin\.insync\.replicas=(\d+)`)
)

// detectKafkaMinISR reads producers' NOT_ENOUGH_REPLICAS and the brokers'
// failed log directories into one finding on the Kafka cluster.
func detectKafkaMinISR(ev *Gathered, found []Finding) []Finding {
	var (
		producers, brokers, topics []string
		first, failAt              time.Time
		lines                      int
		example, dir, reason, mis  string
		failed                     []string
	)
	add := func(list *[]string, s string) {
		if s != "" && !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		name := orWord(set.Subject, subjectOfSource(set.Source))
		broker := false
		for _, t := range set.Templates {
			if matchLine(kafkaBrokerRE, t.Example) {
				broker = true
				break
			}
		}
		if broker {
			add(&brokers, name)
		}
		setFailed := false
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			at := firstOf(t.FirstIncident, t.FirstSeen)
			l := t.Example
			if matchLine(notEnoughReplicasRE, l) {
				lines += t.Incident
				if first.IsZero() || at.Before(first) {
					first = at
				}
				if !broker {
					add(&producers, name)
					if example == "" || strings.Contains(l, "NOT_ENOUGH_REPLICAS") && !strings.Contains(example, "NOT_ENOUGH_REPLICAS") {
						example = l
					}
				}
				for _, m := range findAllSubmatch(topicPartRE, l, -1) {
					add(&topics, m[1])
				}
				if m := findSubmatch(minISRRE, l); m != nil && mis == "" {
					mis = orWord(m[1], m[2])
				}
			}
			if !broker {
				continue
			}
			if m := findSubmatch(logDirFailRE, l); m != nil {
				setFailed = true
				if d := orWord(m[1], orWord(m[2], orWord(m[3], m[4]))); d != "" && dir == "" {
					dir = strings.TrimSuffix(d, ".")
				}
				if failAt.IsZero() || at.Before(failAt) {
					failAt = at
				}
			}
			if m := findSubmatch(ioErrorRE, l); m != nil && reason == "" {
				reason = strings.TrimSpace(orWord(m[1], m[2]))
			}
		}
		if setFailed {
			failed = append(failed, name)
		}
	}
	if lines < 3 {
		return nil
	}
	sort.Strings(producers)
	f := Finding{Kind: KindKafkaMinISR, Subject: "kafka", Object: "kafka cluster", Time: first, Severity: SevCritical, Weight: 0.7, Source: SrcLogs}
	if !failAt.IsZero() && failAt.Before(first) {
		f.Time = failAt
	}
	f.Related = append(f.Related, producers...)
	f.Related = append(f.Related, failed...)
	f.setFact("producers", strings.Join(producers, ", "))
	f.setFact("topics", strings.Join(topics, ", "))
	f.setFact("min_isr", mis)
	f.setFact("lines", fmt.Sprint(lines))
	f.setFact("line", example)
	if len(producers) > 0 {
		f.setFact("caller", producers[0])
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%d lines report too few in-sync replicas for %s from %s: %s", lines, orWord(strings.Join(topics, ", "), "the topic"), ts(first), quote(ReadableLine(example), 220)))
	if len(failed) > 0 {
		f.setFact("brokers_failed", strings.Join(failed, ", "))
		f.setFact("log_dir", dir)
		f.setFact("dir_reason", reason)
		f.Evidence = append(f.Evidence, fmt.Sprintf("broker log: %s took log directory %s offline from %s (%s)", strings.Join(failed, ", "), orWord(dir, "its data directory"), ts(failAt), orWord(reason, "log directory failure")))
		f.Weight = 0.95
	}
	// What grew the brokers' data: a retention raised in the month before.
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if c.Timestamp.Before(f.Time) && matchLine(retentionWordRE, c.Description) && matchLine(kafkaChangeRE, c.Description) {
			f.setFact("retention", fmt.Sprintf("the %s change of %s at %s raised what the brokers keep: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
		}
	}
	// The producers' other errors on these topics (a publish that timed
	// out, read as a call to a host named after the topic) are this
	// failure as they see it.
	for _, o := range found {
		if !slices.Contains(producers, o.fact("caller")) || o.Subject == o.fact("caller") || slices.Contains(f.Related, o.Subject) {
			continue
		}
		for _, tp := range topics {
			if strings.Contains(o.fact("line"), tp) {
				f.Related = append(f.Related, o.Subject)
				break
			}
		}
	}
	kafkaRestarts(ev, &f, topics)
	f.Summary = fmt.Sprintf("kafka: partitions of %s below min.insync.replicas (%d lines)", orWord(strings.Join(topics, ", "), "a topic"), lines)
	return []Finding{f}
}

// kafkaRestarts reads why the replicas left the ISR when no log directory
// failed: brokers restarted one after another (a rolling restart, a
// provider's patching), the provider's notice of that maintenance, and
// topics whose replication factor leaves no room for one broker down
// (RF 2 with min.insync.replicas 2).
func kafkaRestarts(ev *Gathered, f *Finding, topics []string) {
	if f.fact("brokers_failed") != "" {
		return
	}
	id := func(m []string) string {
		for _, s := range m[1:] {
			if s != "" {
				return s
			}
		}
		return ""
	}
	var down []string
	var from, to time.Time
	restarts := 0
	// Log templates fold a broker's lines over the brokers: its first and
	// last lines name two of them, its count says how many restarts.
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			for _, l := range []string{t.Example, t.Last} {
				if m := findSubmatch(brokerDownRE, l); m != nil && !slices.Contains(down, id(m)) {
					down = append(down, id(m))
				}
			}
			if templateLine(t, brokerDownRE) != "" {
				restarts += t.Count
				if !t.FirstSeen.IsZero() && (from.IsZero() || t.FirstSeen.Before(from)) {
					from = t.FirstSeen
				}
			}
			if templateLine(t, brokerUpRE) != "" && t.LastSeen.After(to) {
				to = t.LastSeen
			}
		}
	}
	// Command outputs (a journal, a describe) carry them line by line.
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(brokerDownRE, l); m != nil {
				if !slices.Contains(down, id(m)) {
					down = append(down, id(m))
				}
				restarts++
				if tm, ok := evidence.LineTime([]byte(l), ev.Window.End); ok && (from.IsZero() || tm.Before(from)) {
					from = tm
				}
			}
			if findSubmatch(brokerUpRE, l) != nil {
				if tm, ok := evidence.LineTime([]byte(l), ev.Window.End); ok && tm.After(to) {
					to = tm
				}
			}
		}
	}
	if len(down) == 0 || from.IsZero() || from.After(f.Time.Add(10*time.Minute)) || from.Before(f.Time.Add(-time.Hour)) {
		return
	}
	sort.Strings(down)
	what := fmt.Sprintf("broker %s", down[0])
	if len(down) > 1 {
		what = fmt.Sprintf("brokers %s", strings.Join(down, ", "))
	}
	if restarts > len(down) && restarts > 1 {
		what = fmt.Sprintf("brokers %s and others (%d restarts)", strings.Join(down, ", "), restarts)
	}
	f.setFact("restarted", what)
	f.setFact("restart_from", hm(from))
	if to.After(from) {
		f.setFact("restart_to", hm(to))
	}
	ev0 := fmt.Sprintf("broker logs: %s shut down and restarted one at a time from %s", what, hm(from))
	if to.After(from) {
		ev0 += " to " + hm(to)
	}
	f.Evidence = append(f.Evidence, ev0)
	// The notice: its prose ("will apply security patches …") rather
	// than the bare event code when both were read.
	var notice *timedLine
	for _, l := range eventLines(ev, kafkaPatchRE) {
		if !l.Time.IsZero() && (l.Time.After(from.Add(time.Hour)) || l.Time.Before(from.Add(-12*time.Hour))) {
			continue
		}
		if notice == nil || len(strings.Fields(l.Text)) > 6 && len(strings.Fields(notice.Text)) <= 6 {
			notice = &l
		}
	}
	if notice != nil {
		f.setFact("notice", eventMessage(notice.Text))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", notice.From, quote(eventMessage(notice.Text), 220)))
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			m := findSubmatch(topicDescRE, l)
			if m == nil || len(topics) > 0 && !slices.Contains(topics, m[1]) {
				continue
			}
			rf, _ := strconv.Atoi(m[2])
			if mi, _ := strconv.Atoi(m[3]); rf > 0 && rf <= mi {
				f.setFact("tight", fmt.Sprintf("topic %s has replication factor %s with min.insync.replicas=%s, so a single broker down leaves its partitions below the minimum", m[1], m[2], m[3]))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", c.Command, quote(l, 200)))
			}
		}
	}
	f.Weight = 0.9
}
