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

// KindCloudExhausted is a managed cloud resource that ran out of what it
// spends: a burstable volume's or instance's credits (EBS and RDS
// BurstBalance, EC2 and RDS CPUCreditBalance, EBSIOBalance%), a database
// instance's free memory, or an account's Lambda concurrency.
const KindCloudExhausted Kind = "cloud_exhausted"

// A cloud resource whose balance fell to zero is held at its baseline
// from then on: a gp2 volume at 3 IOPS per GiB (its queue grows, every
// read waits), a t2/t3 instance with standard credits at its baseline
// CPU (a database host pinned at 20-40%, its queries queued). Nothing
// fails: what runs on it slows down. The resource is named by the
// metric's dimensions (VolumeId, InstanceId, DBInstanceIdentifier,
// FunctionName) and, where the evidence holds them, by what the aws CLI
// said of it (its Name tag, its type, the PersistentVolumeClaim a volume
// was created for). A Lambda function whose invocations are throttled
// while the account's concurrent executions sit at a ceiling is starved
// by the function that took them: both are named.
var cloudExhausted = &mechanism{
	kind:  KindCloudExhausted,
	class: classCause,
	label: "cloud resource exhausted",
	detect: func(ev *Gathered, found []Finding) []Finding {
		out := detectBalancesSpent(ev)
		explainSlowdowns(out, found)
		return append(out, detectConcurrencyTaken(ev)...)
	},
	related: exhaustedServes,
	// What spends a volume's I/O credits is an operation that reads or
	// writes the whole of a data set: a table rebuilt by a schema change,
	// a backfill, a reindex, a backup or restore, a bulk load.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return h.fact("io_spender") != "" && matchLine(ioHeavyChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		res := orWord(h.fact("resource"), h.Subject)
		if taker := h.fact("taker"); taker != "" || h.fact("throttled") != "" {
			d := fmt.Sprintf("Lambda function %s is throttled: the account's concurrent executions reached their limit (%s)", orWord(h.fact("throttled"), h.Subject), orWord(h.fact("limit"), "the account concurrency"))
			if taker != "" {
				d += fmt.Sprintf(", taken by %s (%s concurrent executions)", taker, orWord(h.fact("taker_peak"), "most"))
			}
			d += fmt.Sprintf(", so its invocations are refused (%s)", orWord(h.fact("throttles"), "Throttles rose"))
			if q := h.fact("queue"); q != "" {
				d += fmt.Sprintf(" and the queue it consumes, %s, backs up", q)
			}
			return d
		}
		d := fmt.Sprintf("%s ran out of %s: %s", res, h.fact("balance_words"), h.fact("fall"))
		d += h.clause("; since then ", "held")
		d += h.clause("; ", "consequence")
		if sp := h.fact("io_spender"); sp != "" {
			d += fmt.Sprintf("; the credits were spent by %s, an operation that reads or rewrites a whole data set, begun just before the balance started to fall", sp)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		res := orWord(h.fact("resource"), h.Subject)
		switch h.fact("balance") {
		case "BurstBalance", "EBSIOBalance%", "EBSByteBalance%":
			r.high("Give %s I/O that does not run out: move the volume to gp3 with provisioned IOPS and throughput (an online change), or grow it (gp2 gives 3 IOPS per GiB)", res)
			if sp := h.fact("io_spender"); sp != "" {
				r.high("Pause or throttle the operation that spends the volume's I/O (%s) until the volume has I/O to spare, or run it off-peak", sp)
			} else {
				r.med("Find what spent the burst credits (a new batch job, a backup, audit or archive writes on the same volume) and move or schedule it away")
			}
			r.low("Alert on BurstBalance below 20%% and on VolumeQueueLength")
		case "CPUCreditBalance":
			r.high("Lift %s off its baseline: switch its credit specification to unlimited, or move it to a larger or non-burstable instance type (m5/m6i, db.m6g)", res)
			r.med("Find what spends the CPU credits (heavy queries, a batch) and cut or move it")
			r.low("Alert on CPUCreditBalance falling towards zero, well before it gets there")
		case "FreeableMemory":
			r.high("Give %s memory back: a larger instance class, or fewer connections and smaller per-connection buffers", res)
			r.low("Alert on FreeableMemory and SwapUsage")
		default:
			if taker := h.fact("taker"); taker != "" {
				r.high("Cap %s with reserved concurrency (or pause it) so that it cannot take the account's whole concurrency", taker)
				r.high("Reserve concurrency for %s so that it always gets executions", orWord(h.fact("throttled"), h.Subject))
			} else {
				r.high("Raise the concurrency available to %s (reserved concurrency, or an account limit increase)", h.Subject)
			}
			r.low("Alert on Throttles per function and on the account's ConcurrentExecutions near its limit")
		}
	},
}

// exhaustedServes reports whether a finding shows what runs on an
// exhausted resource slowing down: a finding naming it (its source, its
// dependency), or, for a resource that serves a database (an RDS
// instance, a database host or the volume of a database's pods), a
// database symptom (slow statements, queries timing out, the database's
// errors) of any client.
func exhaustedServes(h *Hypothesis, f *Finding) bool {
	text := strings.ToLower(f.Subject + " " + f.Object + " " + strings.Join(f.Related, " ") + " " + f.fact("dependency") + " " + f.fact("target"))
	// A client's series labelled with the resource (a pool's
	// db="orders-pg-prod", a cache client's addr) names it too.
	named := text + " " + strings.ToLower(strings.Join(f.Evidence, " "))
	for _, r := range strings.Split(h.fact("serves"), ",") {
		if len(r) > 2 && strings.Contains(named, strings.ToLower(r)) {
			return true
		}
	}
	if h.fact("database") == "" {
		return false
	}
	switch f.Kind {
	case KindSlowQuery, KindDatabase, KindDBBlocked:
		return true
	case KindSlowOperation, KindTimeout, KindLatency:
		return matchLine(dbWordsRE, f.Summary+" "+f.fact("line")+" "+f.fact("dependency"))
	}
	return false
}

// explainSlowdowns marks the slowdowns that began once a resource they
// run on was spent (slow statements of a database whose volume or host
// ran out of credits) as its consequence: they weigh less as causes of
// their own, and relate to the resource.
func explainSlowdowns(spent []Finding, found []Finding) {
	for i := range spent {
		h := &Hypothesis{Kind: KindCloudExhausted, Subject: spent[i].Subject, Primary: []*Finding{&spent[i]}}
		for j := range found {
			f := &found[j]
			switch f.Kind {
			case KindSlowQuery, KindSlowOperation, KindLatency, KindTimeout, KindDBBlocked, KindSaturation:
			default:
				continue
			}
			if f.Time.Before(spent[i].Time.Add(-15*time.Minute)) || !exhaustedServes(h, f) {
				continue
			}
			f.Weight *= 0.75
			f.setFact("explained_by", string(KindCloudExhausted))
			if !slices.Contains(f.Related, spent[i].Subject) {
				f.Related = append(f.Related, spent[i].Subject)
			}
		}
	}
}

// dbWordsRE is what says a line or a name is about a database.
var dbWordsRE = regexp.MustCompile(`(?i)\b(query|queries|sql|statement|mysql|postgres(ql)?|pg|rds|aurora|mariadb|jdbc|database|db)\b|-(db|pg|mysql|postgres)(-|\b)`)

// balanceRE names the CloudWatch metrics (and their exporters' names)
// that count what a resource has left to spend.
var balanceRE = regexp.MustCompile(`(?i)(^|[/_.])(burst_?balance|cpu_?credit_?balance|ebs_?io_?balance%?|ebs_?byte_?balance%?|freeable_?memory)(_average|_minimum|_maximum)?$`)

// balanceWords says what a balance metric counts.
func balanceWords(metric string) (name, words string) {
	m := strings.ToLower(metric)
	switch {
	case strings.Contains(m, "cpucredit") || strings.Contains(m, "cpu_credit"):
		return "CPUCreditBalance", "CPU credits (CPUCreditBalance reached 0), so its CPU is held at its baseline"
	case strings.Contains(m, "ebsiobalance") || strings.Contains(m, "ebs_io_balance"):
		return "EBSIOBalance%", "EBS I/O burst credits (EBSIOBalance% reached 0), so its I/O is held at its baseline"
	case strings.Contains(m, "ebsbytebalance") || strings.Contains(m, "ebs_byte_balance"):
		return "EBSByteBalance%", "EBS throughput burst credits (EBSByteBalance% reached 0), so its throughput is held at its baseline"
	case strings.Contains(m, "freeable"):
		return "FreeableMemory", "memory (FreeableMemory near 0)"
	}
	return "BurstBalance", "I/O burst credits (BurstBalance reached 0%), so its IOPS are held at the volume's baseline"
}

// cloudIDKeys are the dimensions that name the resource a CloudWatch
// series measures.
var cloudIDKeys = []string{"VolumeId", "InstanceId", "DBInstanceIdentifier", "DBClusterIdentifier", "CacheClusterId", "FunctionName", "QueueName", "LoadBalancer", "TargetGroup", "AutoScalingGroupName", "volume_id", "instance_id", "dimension_VolumeId", "dimension_InstanceId", "dimension_DBInstanceIdentifier"}

// cloudID is the resource a series measures and the dimension naming it.
func cloudID(l evidence.Labels) (id, dim string) {
	for _, k := range cloudIDKeys {
		if v := l[k]; v != "" {
			return v, k
		}
	}
	return "", ""
}

func pointsUpTo(s evidence.Series, end time.Time) []evidence.Point {
	var pts []evidence.Point
	for _, p := range s.Points {
		if end.IsZero() || !p.T.After(end) {
			pts = append(pts, p)
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
	return pts
}

// spent is a balance that fell to (about) zero and stayed there.
type spent struct {
	peak, zero evidence.Point
	last       evidence.Point
}

// balanceSpent reads a balance series: it stood well above zero, fell
// to about zero (2% of where it stood) no earlier than the day before the
// window, and is still there at its end.
func balanceSpent(pts []evidence.Point, w Window) (spent, bool) {
	var sp spent
	if len(pts) < 3 {
		return sp, false
	}
	for i, p := range pts {
		if p.V >= sp.peak.V {
			sp.peak = p // the last time it stood at its peak
		}
		if sp.peak.V > 0 && p.V <= math.Max(sp.peak.V*0.02, 1e-9) && i > 0 {
			sp.zero = p
			break
		}
	}
	sp.last = pts[len(pts)-1]
	if sp.zero.T.IsZero() || sp.peak.V <= 0 || sp.last.V > sp.peak.V*0.05 {
		return sp, false
	}
	if !w.Start.IsZero() && sp.zero.T.Before(w.Start.Add(-24*time.Hour)) {
		return sp, false // spent long before: not what changed
	}
	return sp, true
}

// detectBalancesSpent finds the balances that ran out.
func detectBalancesSpent(ev *Gathered) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, ms := range ev.Metrics {
		if !matchLine(balanceRE, ms.Name) {
			continue
		}
		balance, words := balanceWords(ms.Name)
		for _, s := range ms.Series {
			pts := pointsUpTo(s, ev.Window.End)
			if balance == "FreeableMemory" {
				// Memory never reaches 0: the instance swaps first.
				continue
			}
			sp, ok := balanceSpent(pts, ev.Window)
			if !ok {
				continue
			}
			id, dim := cloudID(s.Labels)
			if seen[balance+"/"+id] {
				continue
			}
			seen[balance+"/"+id] = true
			facts := cloudResourceFacts(ev.Commands, id)
			res := describeResource(dim, id, facts)
			subject := orWord(facts.name, orWord(id, SubjectOfLabels(s.Labels)))
			var serves []string
			if facts.pvc != "" {
				if wl := workloadOfClaim(ev, facts.pvc); wl != "" {
					subject = wl
					serves = append(serves, wl)
				}
			}
			f := Finding{Kind: KindCloudExhausted, Subject: subject, Object: strings.TrimSpace(strings.ToLower(strings.TrimSuffix(dim, "Id")) + " " + id),
				Time: sp.zero.T, Severity: SevCritical, Weight: 0.9, Source: ms.Origin}
			f.Related = append(f.Related, id)
			if facts.name != "" && facts.name != subject {
				f.Related = append(f.Related, facts.name)
			}
			// CloudWatch's balances in percent run 0-100 (not 0-1).
			val := func(v float64) string {
				s := fmt.Sprintf("%.3g", v)
				if balance != "CPUCreditBalance" {
					s += "%"
				}
				return s
			}
			fall := fmt.Sprintf("%s of %s fell from %s at %s to %s at %s", balance, orWord(id, "the resource"), val(sp.peak.V), hm(sp.peak.T), val(sp.zero.V), hm(sp.zero.T))
			if sp.last.T.After(sp.zero.T) {
				fall += fmt.Sprintf(" and is still %s at %s", val(sp.last.V), hm(sp.last.T))
			}
			f.Evidence = []string{"CloudWatch: " + fall}
			f.setFact("balance", balance)
			f.setFact("balance_words", words)
			f.setFact("fall", fall)
			f.setFact("resource", res)
			f.setFact("resource_id", id)
			held, cons := heldAtBaseline(ev.Metrics, dim, id, sp.zero.T, ev.Window)
			if held != "" {
				f.setFact("held", held)
				f.Evidence = append(f.Evidence, "CloudWatch: "+held)
			}
			if cons != "" {
				f.setFact("consequence", cons)
				f.Evidence = append(f.Evidence, "CloudWatch: "+cons)
			}
			if facts.said != "" {
				f.Evidence = append(f.Evidence, "aws CLI: "+facts.said)
			}
			if facts.name != "" {
				serves = append(serves, facts.name)
			}
			if id != "" && !matchLine(awsMadeIDRE, id) {
				// A resource named by its owner (an RDS instance, a
				// cache node) is called so by its clients' labels.
				serves = append(serves, id)
			}
			if balance != "CPUCreditBalance" {
				if c := ioSpender(slices.Concat(ev.Earlier, ev.Changes), sp); c != nil {
					f.setFact("io_spender", fmt.Sprintf("the %s change of %s at %s (%q)", c.Kind, c.Service, hm(c.Timestamp), clip(c.Description, 160)))
					if !slices.Contains(f.Related, c.Service) {
						f.Related = append(f.Related, c.Service)
					}
					host := saturatedDiskHost(ev.Commands)
					if host != "" {
						f.setFact("host", host)
					}
					if matchLine(dbWordsRE, c.Service+" "+c.Description) {
						f.setFact("database", "true")
						// The host whose disk is at its limit while a
						// database operation spends the volume runs the
						// database: a system in its own right.
						if host != "" {
							f.setFact("db_instance", host)
						}
					}
				}
			}
			f.setFact("serves", strings.Join(serves, ","))
			if dim == "DBInstanceIdentifier" || dim == "DBClusterIdentifier" || matchLine(dbWordsRE, subject+" "+facts.name) {
				f.setFact("database", "true")
			}
			f.Summary = fmt.Sprintf("%s ran out of %s at %s", res, strings.SplitN(words, " (", 2)[0], hm(sp.zero.T))
			out = append(out, f)
		}
	}
	return out
}

// heldAtBaseline says what the resource's other series did once its
// balance was spent: a CPU held flat (at its baseline), a volume's queue
// grown and its operations capped.
func heldAtBaseline(sets []MetricSet, dim, id string, from time.Time, w Window) (held, cons string) {
	if id == "" {
		return "", ""
	}
	var helds, conss []string
	for _, ms := range sets {
		name := ms.Name
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		for _, s := range ms.Series {
			if s.Labels[dim] != id {
				continue
			}
			pts := pointsUpTo(s, w.End)
			before, after := medianBetween(pts, time.Time{}, from), medianBetween(pts, from, w.End)
			if math.IsNaN(before) || math.IsNaN(after) {
				continue
			}
			switch strings.ToLower(name) {
			case "cpuutilization":
				if lo, hi := rangeBetween(pts, from.Add(time.Second), w.End); hi-lo <= math.Max(3, after*0.15) {
					helds = append(helds, fmt.Sprintf("its CPUUtilization has been flat at %.0f%% (%.0f-%.0f%%): the baseline the instance may use without credits", after, lo, hi))
				}
			case "volumequeuelength":
				if after >= 2*before && after >= 1 {
					conss = append(conss, fmt.Sprintf("the volume's queue (VolumeQueueLength) grew from %.1f to %.1f: every I/O waits", before, after))
				}
			case "volumereadops", "volumewriteops", "readiops", "writeiops":
				if lo, hi := rangeBetween(pts, from.Add(time.Second), w.End); hi-lo <= math.Max(1, after*0.05) && after > 0 {
					helds = append(helds, fmt.Sprintf("its %s have been capped at %.0f per period", name, after))
				}
			case "diskqueuedepth":
				if after >= 2*before && after >= 1 {
					conss = append(conss, fmt.Sprintf("its DiskQueueDepth grew from %.1f to %.1f", before, after))
				}
			}
		}
	}
	return strings.Join(helds, "; "), strings.Join(conss, "; ")
}

func medianBetween(pts []evidence.Point, from, to time.Time) float64 {
	var vs []float64
	for _, p := range pts {
		if (from.IsZero() || !p.T.Before(from)) && (to.IsZero() || p.T.Before(to) || p.T.Equal(to)) {
			if !from.IsZero() || p.T.Before(to) {
				vs = append(vs, p.V)
			}
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	sort.Float64s(vs)
	return vs[len(vs)/2]
}

func rangeBetween(pts []evidence.Point, from, to time.Time) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		if !p.T.Before(from) && !p.T.After(to) {
			lo, hi = math.Min(lo, p.V), math.Max(hi, p.V)
		}
	}
	return lo, hi
}

// cloudFacts is what aws CLI output said of a resource.
type cloudFacts struct {
	name, kind, pvc, said string
}

var (
	nameTagRE  = regexp.MustCompile(`(?s)"Key":\s*"Name",\s*"Value":\s*"([^"]+)"`)
	pvcTagRE   = regexp.MustCompile(`(?s)"Key":\s*"kubernetes\.io/created-for/pvc/name",\s*"Value":\s*"([^"]+)"`)
	volTypeRE  = regexp.MustCompile(`"VolumeType":\s*"(\w+)"`)
	iopsRE     = regexp.MustCompile(`"Iops":\s*(\d+)`)
	instTypeRE = regexp.MustCompile(`\b((?:db\.|cache\.)?[a-z]\d[a-z]*\.(?:nano|micro|small|medium|large|\d*xlarge))\b`)
	creditsRE  = regexp.MustCompile(`"CpuCredits":\s*"(\w+)"`)
	hostNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*[a-z0-9]$`)
	zoneRE     = regexp.MustCompile(`^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]?$`)
	// awsMadeIDRE is an id AWS made up (vol-…, i-…): a text row that holds
	// it may end in the resource's Name tag. An id its owner chose (an RDS
	// instance's) is its name already.
	awsMadeIDRE = regexp.MustCompile(`^(vol|i|eni|snap|ami|sg|subnet|nat|igw)-[0-9a-f]{8,17}$`)
	// storageTypeRE is a volume or instance storage type in a text column.
	storageTypeRE = regexp.MustCompile(`^(gp2|gp3|io1|io2|st1|sc1)$`)
)

// cloudResourceFacts reads, from the outputs of aws CLI commands that name
// the resource, its Name tag (JSON, or the last column of a text row that
// holds the id), its type and the PersistentVolumeClaim it was made for.
func cloudResourceFacts(cmds []evidence.CommandOutput, id string) cloudFacts {
	var f cloudFacts
	if id == "" {
		return f
	}
	var said []string
	for _, c := range cmds {
		text := strings.Join(c.Lines, "\n")
		if !strings.Contains(text, id) && !strings.Contains(c.Command, id) {
			continue
		}
		if m := findSubmatch(nameTagRE, text); m != nil && f.name == "" {
			f.name = m[1]
		}
		if m := findSubmatch(pvcTagRE, text); m != nil && f.pvc == "" {
			f.pvc = m[1]
			said = append(said, "the volume was created for the PersistentVolumeClaim "+f.pvc)
		}
		if m := findSubmatch(volTypeRE, text); m != nil && f.kind == "" {
			f.kind = m[1]
			s := "volume type " + m[1]
			if i := findSubmatch(iopsRE, text); i != nil {
				s += " with a baseline of " + i[1] + " IOPS"
			}
			said = append(said, s)
		}
		if m := findSubmatch(creditsRE, text); m != nil {
			said = append(said, "CPU credits "+m[1])
		}
		for _, l := range c.Lines {
			// a row of --output text or table: the id and its columns
			cols := strings.Fields(strings.ReplaceAll(l, "|", " "))
			if len(c.Lines) == 1 && strings.Contains(c.Command, id) && !slices.Contains(cols, id) {
				// The one row a --query of the id's attributes printed
				// (class, storage type, size).
				for _, col := range cols {
					if m := findSubmatch(instTypeRE, col); m != nil && f.kind == "" {
						said = append(said, "instance class "+m[1])
					}
					if matchLine(storageTypeRE, col) && f.kind == "" {
						f.kind = col
						said = append(said, "storage type "+col)
					}
				}
				continue
			}
			if !slices.Contains(cols, id) || len(cols) < 2 {
				continue
			}
			for _, col := range cols {
				if m := findSubmatch(instTypeRE, col); m != nil && f.kind == "" {
					f.kind = m[1]
					said = append(said, "instance type "+m[1])
				}
			}
			if last := cols[len(cols)-1]; f.name == "" && matchLine(awsMadeIDRE, id) && last != id && matchLine(hostNameRE, last) && strings.Contains(last, "-") && !matchLine(zoneRE, last) {
				f.name = last
			}
		}
	}
	f.said = strings.Join(said, "; ")
	return f
}

// describeResource names a resource in words: "EBS volume vol-… (gp2)".
func describeResource(dim, id string, f cloudFacts) string {
	what := map[string]string{"VolumeId": "EBS volume", "InstanceId": "EC2 instance", "DBInstanceIdentifier": "RDS instance", "DBClusterIdentifier": "RDS cluster",
		"CacheClusterId": "ElastiCache cluster", "volume_id": "EBS volume", "instance_id": "EC2 instance"}[dim]
	s := strings.TrimSpace(what + " " + id)
	var extra []string
	if f.name != "" {
		extra = append(extra, f.name)
	}
	if f.kind != "" {
		extra = append(extra, f.kind)
	}
	if f.pvc != "" {
		extra = append(extra, "PVC "+f.pvc)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return orWord(s, "the resource")
}

// workloadOfClaim names the workload whose pod mounts a claim: a
// StatefulSet's claim is <template>-<pod>, else a pod's volume names it.
func workloadOfClaim(ev *Gathered, claim string) string {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if strings.HasSuffix(claim, "-"+p.Name) {
			return WorkloadOfPod(p)
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
				return WorkloadOfPod(p)
			}
		}
	}
	return ""
}

// detectConcurrencyTaken finds Lambda functions throttled while the
// account's concurrent executions sit at a ceiling, and the function
// whose own concurrency rose to take them.
func detectConcurrencyTaken(ev *Gathered) []Finding {
	w := ev.Window
	type ser struct {
		fn  string
		pts []evidence.Point
	}
	var throttles, conc []ser
	var account []evidence.Point
	for _, ms := range ev.Metrics {
		base := ms.Name
		if i := strings.LastIndexByte(base, '/'); i >= 0 {
			base = base[i+1:]
		}
		lambda := strings.Contains(ms.Name, "Lambda") || strings.Contains(strings.ToLower(ms.Name), "lambda")
		for _, s := range ms.Series {
			fn := s.Labels["FunctionName"]
			pts := pointsUpTo(s, w.End)
			switch {
			case base == "Throttles" && lambda && fn != "":
				throttles = append(throttles, ser{fn, pts})
			case base == "ConcurrentExecutions" && lambda && fn == "":
				account = pts
			case base == "ConcurrentExecutions" && lambda:
				conc = append(conc, ser{fn, pts})
			}
		}
	}
	if len(throttles) == 0 || len(account) == 0 {
		return nil
	}
	// The ceiling: the account's concurrency flat at its maximum.
	limit, since := 0.0, time.Time{}
	for _, p := range account {
		limit = math.Max(limit, p.V)
	}
	for _, p := range account {
		if p.V >= limit*0.98 {
			since = p.T
			break
		}
	}
	base := medianBetween(account, time.Time{}, since)
	if limit <= 0 || since.IsZero() || !math.IsNaN(base) && base > limit*0.5 || account[len(account)-1].V < limit*0.9 {
		return nil
	}
	// The taker: the function whose concurrency at the ceiling is most
	// of it and was far lower before.
	taker, takerPeak := "", 0.0
	for _, c := range conc {
		before, at := medianBetween(c.pts, time.Time{}, since), medianBetween(c.pts, since, w.End)
		if !math.IsNaN(at) && at >= limit*0.5 && (math.IsNaN(before) || before < at*0.3) && at > takerPeak {
			taker, takerPeak = c.fn, at
		}
	}
	var out []Finding
	for _, t := range throttles {
		if t.fn == taker {
			continue
		}
		before, at := medianBetween(t.pts, time.Time{}, since), medianBetween(t.pts, since, w.End)
		if math.IsNaN(at) || at <= 0 || !math.IsNaN(before) && before > at*0.2 {
			continue
		}
		peak := 0.0
		for _, p := range t.pts {
			peak = math.Max(peak, p.V)
		}
		f := Finding{Kind: KindCloudExhausted, Subject: t.fn, Object: "lambda " + t.fn, Time: since, Severity: SevCritical, Weight: 0.85, Source: SrcCloudWatch}
		f.setFact("throttled", t.fn)
		f.setFact("limit", fmt.Sprintf("%.0f concurrent executions", limit))
		f.setFact("throttles", fmt.Sprintf("Throttles from %.0f to %.0f per period, up to %.0f", orZero(before), at, peak))
		f.Evidence = []string{fmt.Sprintf("CloudWatch: the account's ConcurrentExecutions rose to %.0f at %s and stayed there (%.0f before)", limit, hm(since), orZero(base)),
			fmt.Sprintf("CloudWatch: Throttles of %s rose from %.0f to %.0f per period from %s (peak %.0f)", t.fn, orZero(before), at, hm(since), peak)}
		if taker != "" {
			f.setFact("taker", taker)
			f.setFact("taker_peak", fmt.Sprintf("%.0f", takerPeak))
			f.Related = append(f.Related, taker)
			f.Evidence = append(f.Evidence, fmt.Sprintf("CloudWatch: ConcurrentExecutions of %s rose to %.0f from %s: most of the account's %.0f", taker, takerPeak, hm(since), limit))
		}
		if q := queueBacklog(ev.Metrics, since, w); q != "" {
			f.setFact("queue", q)
		}
		f.Summary = fmt.Sprintf("Lambda %s throttled: the account's concurrency is at its limit (%.0f)", t.fn, limit)
		if taker != "" {
			f.Summary += ", taken by " + taker
		}
		out = append(out, f)
	}
	// The function the question asks about leads.
	for i := range out {
		if strings.EqualFold(out[i].Subject, ev.Scope.Service) {
			out[i].Weight = 0.95
		}
	}
	return out
}

func orZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// queueBacklog names an SQS queue whose visible messages grew from the
// ceiling on ("" when none did).
func queueBacklog(sets []MetricSet, since time.Time, w Window) string {
	for _, ms := range sets {
		if !strings.HasSuffix(ms.Name, "ApproximateNumberOfMessagesVisible") && !strings.HasSuffix(ms.Name, "ApproximateAgeOfOldestMessage") {
			continue
		}
		for _, s := range ms.Series {
			q := s.Labels["QueueName"]
			pts := pointsUpTo(s, w.End)
			before := medianBetween(pts, time.Time{}, since)
			if q != "" && len(pts) > 0 && pts[len(pts)-1].V > 5*math.Max(orZero(before), 1) {
				return q
			}
		}
	}
	return ""
}

// ioHeavyChangeRE is a change that reads or writes a whole data set: a
// table rebuilt (ALTER TABLE, pt-online-schema-change, gh-ost, VACUUM
// FULL, OPTIMIZE), a backfill or migration of rows, a reindex, a backup,
// a restore, a bulk load or export.
var ioHeavyChangeRE = regexp.MustCompile(`(?i)\balter\s+table\b|pt-online-schema-change|\bgh-ost\b|\bschema (change|migration)\b|\bvacuum\s+full\b|\boptimize\s+table\b|\bbackfill|\breindex|\brebuild(ing)? (the )?index|\bbackup\b|\brestore\b|\bbulk (load|import|insert|export)|\bpg_dump|\bmysqldump|\bxtrabackup|\bpg_restore|\bdata migration\b`)

// ioSpender is the change that spent an I/O balance: an I/O-heavy
// operation (ioHeavyChangeRE) that began in the two hours before the
// balance last stood at its peak, or while it fell; the latest such.
func ioSpender(changes []evidence.Change, sp spent) *evidence.Change {
	var best *evidence.Change
	for i := range changes {
		c := &changes[i]
		if c.Timestamp.Before(sp.peak.T.Add(-2*time.Hour)) || c.Timestamp.After(sp.zero.T) || !matchLine(ioHeavyChangeRE, c.Description) {
			continue
		}
		if best == nil || c.Timestamp.After(best.Timestamp) {
			best = c
		}
	}
	return best
}

// saturatedDiskHost is the one host whose `iostat -x` output, in a
// terminal transcript (ssh host, or the host its prompt names), shows a
// device at 90% utilisation or more: the machine whose disk is at its
// limit. Its domain is left off (db-01.prod.internal: db-01).
func saturatedDiskHost(cmds []evidence.CommandOutput) string {
	var hosts []string
	// A bare "ssh host" opens a shell there: the commands after it, with
	// no host of their own, ran on it until "exit".
	shell := ""
	for _, c := range cmds {
		if f := strings.Fields(c.Command); len(f) >= 2 && f[0] == "ssh" && c.Host == "" || len(f) == 2 && f[0] == "ssh" {
			shell = f[len(f)-1]
			if _, h, ok := strings.Cut(shell, "@"); ok {
				shell = h
			}
			continue
		} else if len(f) > 0 && (f[0] == "exit" || f[0] == "logout") {
			shell = ""
		}
		if c.Host == "" {
			c.Host = shell
		}
		if c.Host == "" || !strings.Contains(c.Run+" "+c.Command, "iostat") {
			continue
		}
		util := -1
		for _, l := range c.Lines {
			cols := strings.Fields(l)
			if len(cols) == 0 {
				continue
			}
			if cols[0] == "Device" || cols[0] == "Device:" {
				util = slices.Index(cols, "%util")
				continue
			}
			if util < 0 || util >= len(cols) {
				continue
			}
			var v float64
			if _, err := fmt.Sscanf(strings.Replace(cols[util], ",", ".", 1), "%g", &v); err == nil && v >= 90 {
				h := c.Host
				if i := strings.IndexByte(h, '.'); i > 0 && !matchLine(ipv4RE, h) {
					h = h[:i]
				}
				if !slices.Contains(hosts, h) {
					hosts = append(hosts, h)
				}
			}
		}
	}
	if len(hosts) != 1 {
		return ""
	}
	return hosts[0]
}
