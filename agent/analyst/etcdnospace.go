package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// etcd refuses every write once its backend database reaches its quota
// (--quota-backend-bytes, 2 GiB by default, 8 GiB at most advised): it
// raises the NOSPACE alarm and answers every put with "etcdserver: mvcc:
// database space exceeded" until the keyspace is compacted, the database
// defragmented and the alarm disarmed. Reads still work, so the cluster
// looks alive: pods keep running, kubectl get answers. What writes
// fails: leader-election leases cannot be renewed (controllers and
// schedulers with leader election stop working), CronJobs cannot create
// their Jobs, deployments cannot roll, events are lost. Every client
// quotes etcd's refusal through the API server; etcd is the root, not the
// client whose leader election was lost.

// KindEtcdNoSpace is etcd refusing writes at its backend quota.
const KindEtcdNoSpace Kind = "etcd_nospace"

var etcdNoSpace = &mechanism{
	kind:   KindEtcdNoSpace,
	class:  classCause,
	label:  "etcd database space exceeded (NOSPACE alarm, writes refused)",
	detect: detectEtcdNoSpace,
	// The clients that quote the refusal suffer it.
	related: listedIn("clients", ", "),
	// What fills etcd is written by something: only a change that writes
	// much into the cluster (an operator, a controller storing state in
	// ConfigMaps or custom resources, events or secrets in bulk) or one to
	// etcd itself triggers it.
	fitsChange:     changeSays(etcdWriterChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := h.Subject + " has exceeded its database space quota (mvcc: database space exceeded"
		d += h.clause(", quota ", "quota")
		d += h.clause(", database ", "db_size")
		d += "): it raised the NOSPACE alarm and refuses every write, so the API server rejects creates and updates while reads still work"
		d += h.clause("; ", "alarm")
		if c := h.fact("clients"); c != "" {
			d += fmt.Sprintf(". What needs to write fails: %s", c)
		}
		d += h.wrapped(" (", "writes", ")")
		d += h.clause("; the largest range read just before: ", "grower")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Free etcd's space and lift the alarm: compact to the current revision (etcdctl compact $(etcdctl endpoint status -w json | jq '.[0].Status.header.revision')), defragment each member one at a time (etcdctl defrag --endpoints=...), then etcdctl alarm disarm")
		r.high("Find and delete what fills the keyspace (etcdctl get / --prefix --keys-only | cut -d/ -f2-3 | sort | uniq -c | sort -rn | head), e.g. objects an operator writes without bound")
		r.med("Restart or re-trigger what lost its writes once etcd accepts them again: controllers whose leader-election lease expired, CronJobs whose runs were missed (startingDeadlineSeconds)")
		r.low("Alert on etcd_mvcc_db_total_size_in_bytes / etcd_server_quota_backend_bytes above 80%% and on etcd_server_alarms; keep automatic compaction and periodic defragmentation on; raise --quota-backend-bytes (at most 8 GiB) only with the disk to back it")
	},
}

var (
	// etcdNoSpaceRE is etcd's refusal as etcd, the API server and clients
	// quote it, and etcd's own alarm.
	etcdNoSpaceRE = regexp.MustCompile(`(?i)mvcc: database space exceeded|etcdserver: no space|"msg"\s*:\s*"database space exceeded"|alarm[^\n]{0,40}NOSPACE|NOSPACE[^\n]{0,20}alarm|ErrGRPCNoSpace`)
	// etcdOwnRE is etcd stating it itself (zap JSON or text).
	etcdOwnRE = regexp.MustCompile(`(?i)"msg"\s*:\s*"(?:alarm raised|database space exceeded)"|alarm NOSPACE raised|alarm:NOSPACE|etcdserver/(?:apply|server)\.go`)
	// etcdQuotaRE reads the quota from etcd's line.
	etcdQuotaRE      = regexp.MustCompile(`"quota-size"\s*:\s*"([^"]+)"`)
	etcdQuotaBytesRE = regexp.MustCompile(`"quota-size-bytes"\s*:\s*(\d+)`)
	// etcdDBSizeRE reads etcd's database size from its compaction line.
	etcdDBSizeRE = regexp.MustCompile(`"current-db-size"\s*:\s*"([^"]+)"`)
	// etcdLargeRangeRE is a large range read etcd reported as slow: what
	// holds the space ("key:\"/registry/configmaps/argo/\" ...
	// size:912776331").
	etcdLargeRangeRE = regexp.MustCompile(`key:\\?"(/registry/[^"\\]+)\\?"[^\n]*?range_response_count:(\d+) size:(\d+)`)
	// etcdWriterChangeRE is a change that writes much into the cluster or
	// changes etcd itself.
	etcdWriterChangeRE = regexp.MustCompile(`(?i)\betcd\b|quota-backend|compaction|defrag|operator|controller|argo|flux|events? ttl|revision ?history|history limit`)
	// kubeClientVerbRE is a client's write that etcd refused.
	kubeClientVerbRE = regexp.MustCompile(`(?i)error creating job|failed to (?:update|renew|create|acquire)|error (?:initially creating|updating|retrieving) (?:leader election|resource lock)|leaderelection`)
)

// detectEtcdNoSpace finds etcd's NOSPACE alarm: etcd's own log, etcdctl's
// endpoint status or alarm list, or the refusal quoted by the API server,
// clients and events. The clients quoting it are related to it.
func detectEtcdNoSpace(ev *Gathered, _ []Finding) []Finding {
	var f *Finding
	own := false
	var clients []string
	var writes []string
	start := func(t time.Time, obj, src string) {
		if f == nil {
			f = &Finding{Kind: KindEtcdNoSpace, Subject: "etcd", Object: obj, Source: src, Severity: SevCritical, Weight: 0.85, Time: t}
		}
		f.Time = earliest(f.Time, t)
	}
	addClient := func(c string) {
		if c != "" && !strings.EqualFold(c, "etcd") && !containsStr(clients, c) {
			clients = append(clients, c)
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		isEtcd := strings.Contains(strings.ToLower(set.Source), "etcd")
		for _, t := range set.Templates {
			if t.Incident == 0 && !(t.Baseline > 0 && ev.Window.recent(t.LastSeen)) {
				continue
			}
			line := templateLine(t, etcdNoSpaceRE)
			if line == "" {
				continue
			}
			when := orTime(t.FirstIncident, t.FirstSeen)
			start(when, "logs "+set.Source, set.Origin)
			if isEtcd || matchLine(etcdOwnRE, line) && !strings.Contains(line, "apiserver") {
				own = true
				f.Object = "logs " + set.Source
				if m := findSubmatch(etcdQuotaRE, line); m != nil {
					delete(f.Facts, "quota")
					f.setFact("quota", m[1])
				} else if m := findSubmatch(etcdQuotaBytesRE, line); m != nil {
					if n, err := strconv.ParseFloat(m[1], 64); err == nil {
						f.setFact("quota", decimalBytes(n))
					}
				}
			} else if !isControlPlaneSource(set.Source) {
				addClient(set.Subject)
				if matchLine(kubeClientVerbRE, line) {
					writes = appendNew(writes, set.Subject+": "+clipMiddle(ReadableLine(line), 120))
				}
			}
			if len(f.Evidence) < 4 {
				f.Evidence = appendNew(f.Evidence, templateEvidence(*set, t, line))
			}
			f.addCount(t.Incident + t.Baseline)
		}
		if isEtcd {
			for _, t := range set.Templates {
				if m := findSubmatch(etcdDBSizeRE, t.Last); m != nil {
					if f != nil {
						f.setFact("db_size", m[1])
					}
				} else if m := findSubmatch(etcdDBSizeRE, t.Example); m != nil && f != nil {
					f.setFact("db_size", m[1])
				}
				for _, l := range t.Lines() {
					if m := findSubmatch(etcdLargeRangeRE, l); m != nil && f != nil {
						if n, err := strconv.ParseFloat(m[3], 64); err == nil && n >= 1e8 {
							f.setFact("grower", fmt.Sprintf("%s (%s objects, %s)", m[1], m[2], decimalBytes(n)))
						}
					}
				}
			}
		}
	}
	// Events whose create or update was refused (a CronJob's Job).
	for _, e := range ev.K8s.Events {
		if !matchLine(etcdNoSpaceRE, e.Message) {
			continue
		}
		when, _ := eventTime(&e)
		start(when, strings.ToLower(e.InvolvedObject.Kind)+"/"+e.InvolvedObject.Name, SrcEvents)
		name := workloadOfName(e.InvolvedObject.Name)
		if k := e.InvolvedObject.Kind; k == "CronJob" || k == "Deployment" || k == "StatefulSet" || k == "DaemonSet" {
			name = e.InvolvedObject.Name
		}
		addClient(name)
		writes = appendNew(writes, fmt.Sprintf("%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, clipMiddle(e.Message, 100)))
		if len(f.Evidence) < 6 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("event %s on %s/%s: %q", e.Reason, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Message))
		}
	}
	// etcdctl endpoint status or alarm list naming the alarm.
	for _, c := range ev.Commands {
		if !strings.Contains(strings.ToLower(c.Command), "etcdctl") && !strings.Contains(strings.ToLower(c.Run), "etcdctl") {
			continue
		}
		n := 0
		for _, l := range c.Lines {
			if strings.Contains(l, "NOSPACE") {
				n++
			}
		}
		if n == 0 {
			continue
		}
		start(time.Time{}, "etcd", SrcKubernetes)
		own = true
		f.setFact("alarm", fmt.Sprintf("etcdctl shows alarm:NOSPACE on %s", plural(n, "member", "members")))
		if s := etcdctlDBSize(c.Lines); s != "" {
			f.setFact("db_size", s)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: alarm:NOSPACE on %s", truncate(strings.TrimSpace(c.Command), 100), plural(n, "member", "members")))
	}
	if f == nil {
		return nil
	}
	if own {
		f.Weight = 0.95
	}
	if f.Time.IsZero() {
		f.Time = ev.Window.Start
	}
	if len(clients) > 0 {
		f.setFact("clients", strings.Join(clients, ", "))
		f.Related = append(f.Related, clients...)
	}
	if len(writes) > 0 {
		if len(writes) > 3 {
			writes = writes[:3]
		}
		f.setFact("writes", strings.Join(writes, "; "))
	}
	f.Summary = fmt.Sprintf("etcd database space exceeded (NOSPACE alarm): writes refused since %s", hm(f.Time))
	return []Finding{*f}
}

// isControlPlaneSource is a log of the API server or another control-plane
// component that relays etcd's answer: not a client of its own.
func isControlPlaneSource(src string) bool {
	s := strings.ToLower(src)
	return strings.Contains(s, "apiserver") || strings.Contains(s, "kube-controller-manager") || strings.Contains(s, "kube-scheduler")
}

// etcdctlDBSize reads the largest DB SIZE of an `etcdctl endpoint status
// -w table` output.
func etcdctlDBSize(lines []string) string {
	col := -1
	best := ""
	for _, l := range lines {
		cells := strings.Split(l, "|")
		if col < 0 {
			for i, c := range cells {
				if strings.EqualFold(strings.TrimSpace(c), "DB SIZE") {
					col = i
				}
			}
			continue
		}
		if col < len(cells) {
			if v := strings.TrimSpace(cells[col]); v != "" && best == "" {
				best = v
			}
		}
	}
	return best
}
