package analyst

import (
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// Detectors over metrics that need more than a band around a baseline:
// autoscalers pinned at their maximum, certificates close to expiry,
// backlogs (consumer lag, queue depth) that keep growing.

// isHPAMetric reports whether a metric is a kube-state-metrics autoscaler
// series the HPA detector reads.
func isHPAMetric(n string) bool {
	n = strings.ToLower(n)
	if !strings.HasPrefix(n, "kube_horizontalpodautoscaler_") && !strings.HasPrefix(n, "kube_hpa_") {
		return false
	}
	return strings.Contains(n, "current_replicas") || strings.Contains(n, "max_replicas") || strings.Contains(n, "status_condition") || strings.Contains(n, "desired_replicas")
}

// isCertExpiryMetric reports whether a metric gives a certificate's expiry
// (a timestamp, or seconds left): blackbox_exporter's
// probe_ssl_earliest_cert_expiry, cert-manager's
// certmanager_certificate_expiration_timestamp_seconds, x509-exporter's
// x509_cert_not_after, ssl_certificate_expiry_seconds...
func isCertExpiryMetric(n string) bool {
	n = strings.ToLower(n)
	if !strings.Contains(n, "cert") && !strings.Contains(n, "ssl") && !strings.Contains(n, "tls") {
		return false
	}
	return strings.Contains(n, "expir") || strings.Contains(n, "not_after") || strings.Contains(n, "notafter")
}

// isBacklogMetric reports whether a metric measures work waiting to be
// consumed: consumer-group lag, queue depth, visible messages, backlogs.
func isBacklogMetric(n string) bool {
	n = strings.ToLower(n)
	for _, w := range []string{"consumergroup_lag", "consumer_lag", "consumer_group_lag", "queue_depth", "queue_size", "queue_length", "messagesvisible", "messages_visible", "_backlog", "backlog_", "messages_ready", "pending_messages", "messages_pending"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return strings.HasSuffix(n, "_pending") || strings.HasSuffix(n, "backlog")
}

// hpaName is the autoscaler a series is about.
func hpaName(l evidence.Labels) string {
	for _, k := range []string{"horizontalpodautoscaler", "hpa", "scaletargetref_name"} {
		if v := l[k]; v != "" {
			return v
		}
	}
	return ""
}

func lastPoint(ps []evidence.Point) (evidence.Point, bool) {
	if len(ps) == 0 {
		return evidence.Point{}, false
	}
	return ps[len(ps)-1], true
}

func inWindow(ps []evidence.Point, from, to time.Time) []evidence.Point {
	var out []evidence.Point
	for _, p := range ps {
		if (from.IsZero() || !p.T.Before(from)) && (to.IsZero() || !p.T.After(to)) {
			out = append(out, p)
		}
	}
	return out
}

// DetectHPA finds autoscalers whose current replicas reached their
// maxReplicas (kube_horizontalpodautoscaler_* series) and are still there
// at the end of the window: the service cannot add capacity. The demand
// (request rate of the same service) is measured against the baseline.
func DetectHPA(sets []MetricSet, w Window) []Finding {
	type hpa struct {
		ns, name string
		current  []evidence.Point
		max      float64
		limited  []evidence.Point
	}
	by := map[string]*hpa{}
	var order []string
	get := func(l evidence.Labels) *hpa {
		name := hpaName(l)
		if name == "" {
			return nil
		}
		k := l["namespace"] + "/" + name
		h := by[k]
		if h == nil {
			h = &hpa{ns: l["namespace"], name: name}
			by[k] = h
			order = append(order, k)
		}
		return h
	}
	for _, ms := range sets {
		n := strings.ToLower(ms.Name)
		if !isHPAMetric(n) {
			continue
		}
		for _, s := range ms.Series {
			h := get(s.Labels)
			if h == nil {
				continue
			}
			pts := inWindow(s.Points, w.BaselineStart, w.End)
			switch {
			case strings.Contains(n, "current_replicas"):
				h.current = pts
			case strings.Contains(n, "max_replicas"):
				if p, ok := lastPoint(pts); ok {
					h.max = p.V
				}
			case strings.Contains(n, "status_condition"):
				if strings.EqualFold(s.Labels["condition"], "ScalingLimited") && strings.EqualFold(s.Labels["status"], "true") {
					h.limited = pts
				}
			}
		}
	}
	var out []Finding
	for _, k := range order {
		h := by[k]
		last, ok := lastPoint(h.current)
		if !ok || h.max <= 0 || last.V < h.max {
			continue
		}
		// When it reached the maximum (and stayed), and when scaling began.
		reached := last.T
		for i := len(h.current) - 1; i >= 0 && h.current[i].V >= h.max; i-- {
			reached = h.current[i].T
		}
		first := h.current[0]
		onset := reached
		for _, p := range h.current {
			if p.V > first.V {
				onset = p.T
				break
			}
		}
		f := Finding{Kind: KindHPAMax, Subject: h.name, Object: "hpa " + h.ns + "/" + h.name, Namespace: h.ns, Time: onset,
			Severity: SevCritical, Weight: 0.92, Source: SrcMetrics}
		if first.V >= h.max {
			// At its maximum all along: a standing limit, not what changed.
			f.Weight, f.Severity = 0.6, SevWarning
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("HPA %s/%s: current replicas %.0f = maxReplicas %.0f since %s (from %.0f replicas at %s; kube_horizontalpodautoscaler_status_current_replicas)",
			h.ns, h.name, last.V, h.max, ts(reached), first.V, ts(first.T)))
		for _, p := range h.limited {
			if p.V >= 1 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("HPA %s/%s condition ScalingLimited=True since %s: the desired replica count is capped at maxReplicas", h.ns, h.name, ts(p.T)))
				f.setFact("scaling_limited", "true")
				break
			}
		}
		f.Summary = fmt.Sprintf("HPA %s at its maximum of %.0f replicas since %s (from %.0f)", h.name, h.max, hm(reached), first.V)
		f.setFact("max_replicas", fmt.Sprintf("%.0f", h.max))
		f.setFact("from_replicas", fmt.Sprintf("%.0f", first.V))
		f.setFact("reached_max", ts(reached))
		if before, peak, name, ok := demandOf(sets, h.name, w); ok && before > 0 && peak >= 1.5*before {
			f.setFact("load_factor", fmt.Sprintf("%.0f×", peak/before))
			f.Evidence = append(f.Evidence, fmt.Sprintf("request rate of %s (%s) rose ~%.0f× from %s to %s", h.name, name, peak/before, formatValue(before, "/s"), formatValue(peak, "/s")))
		}
		out = append(out, f)
	}
	return out
}

// demandOf is the request rate of a service: the baseline median and the
// incident peak of the sum of its request series.
func demandOf(sets []MetricSet, subject string, w Window) (before, peak float64, name string, ok bool) {
	for _, ms := range sets {
		if ms.Class != MetricRequests {
			continue
		}
		sum := map[time.Time]float64{}
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) {
				continue
			}
			for _, p := range s.Points {
				sum[p.T] += p.V
			}
		}
		if len(sum) == 0 {
			continue
		}
		var base []float64
		for t, v := range sum {
			if t.Before(w.Start) {
				base = append(base, v)
			} else if v > peak {
				peak = v
			}
		}
		if len(base) == 0 {
			continue
		}
		return analysis.Median(base), peak, ms.Name, true
	}
	return 0, 0, "", false
}

// certExpiryWarn is how close to its expiry a certificate is worth a
// finding.
const certExpiryWarn = 7 * 24 * time.Hour

// DetectCertExpiry reads every certificate-expiry series, whatever service
// its labels name: a certificate past its expiry is a failure; one expiring
// within seven days is a warning (nothing may be down yet). Series with the
// same expiry (the cert-manager Certificate and the endpoint a probe sees)
// are one certificate.
func DetectCertExpiry(sets []MetricSet, w Window) []Finding {
	now := w.End
	type cert struct {
		expires time.Time
		names   []string // certificate names (cert-manager, x509 subject)
		hosts   []string // endpoints serving it
		ns      string
		metrics []string
	}
	var certs []*cert
	find := func(t time.Time) *cert {
		for _, c := range certs {
			if d := c.expires.Sub(t); d > -time.Minute && d < time.Minute {
				return c
			}
		}
		c := &cert{expires: t}
		certs = append(certs, c)
		return c
	}
	for _, ms := range sets {
		if !isCertExpiryMetric(ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			p, ok := lastPoint(inWindow(s.Points, w.BaselineStart, w.End))
			if !ok || p.V <= 0 {
				continue
			}
			var exp time.Time
			if p.V > 1e9 { // a Unix timestamp
				exp = time.Unix(int64(p.V), 0).UTC()
			} else { // seconds left at the sample
				exp = p.T.Add(time.Duration(p.V * float64(time.Second)))
			}
			c := find(exp)
			if n := firstLabel(s.Labels, "name", "certificate", "subject_CN", "subject_cn", "common_name", "cn", "secret_name", "filepath", "filename"); n != "" && !containsStr(c.names, n) {
				c.names = append(c.names, n)
			}
			if in := firstLabel(s.Labels, "instance", "host", "target", "domain", "server_name"); in != "" {
				h := in
				if u, err := url.Parse(in); err == nil && u.Host != "" {
					h = u.Hostname()
				}
				if !containsStr(c.hosts, h) {
					c.hosts = append(c.hosts, h)
				}
			}
			if c.ns == "" {
				c.ns = s.Labels["namespace"]
			}
			metric := s.Labels["__name__"]
			if metric == "" {
				metric = ms.Name
			}
			if !containsStr(c.metrics, metric) {
				c.metrics = append(c.metrics, metric)
			}
		}
	}
	sort.SliceStable(certs, func(i, j int) bool { return certs[i].expires.Before(certs[j].expires) })
	var out []Finding
	for _, c := range certs {
		left := c.expires.Sub(now)
		if left > certExpiryWarn {
			continue
		}
		name := ""
		if len(c.names) > 0 {
			name = c.names[0]
		} else if len(c.hosts) > 0 {
			name = c.hosts[0]
		}
		if name == "" {
			continue
		}
		f := Finding{Subject: name, Object: "certificate " + name, Namespace: c.ns, Source: SrcMetrics, Related: certOwners(c.names, c.hosts)}
		where := ""
		if len(c.hosts) > 0 {
			where = " served at " + strings.Join(c.hosts, ", ")
		}
		if left <= 0 {
			f.Kind, f.Severity, f.Weight = KindCertificate, SevCritical, 0.92
			f.Time = c.expires
			f.Summary = fmt.Sprintf("certificate %s%s expired at %s", name, where, ts(c.expires))
			f.Evidence = []string{fmt.Sprintf("certificate %s%s expired at %s (%s)", name, where, ts(c.expires), strings.Join(c.metrics, ", "))}
			f.setFact("not_after", ts(c.expires))
			f.setFact("target", strings.Join(c.hosts, ", "))
		} else {
			f.Kind, f.Severity, f.Weight = KindCertExpiring, SevWarning, 0.8
			if left < 3*24*time.Hour {
				f.Weight = 0.88
			}
			f.Time = w.Start
			f.Summary = fmt.Sprintf("certificate %s%s expires in %s (at %s)", name, where, humanDuration(left), ts(c.expires))
			f.Evidence = []string{fmt.Sprintf("certificate %s%s expires at %s, in %s (%s)", name, where, ts(c.expires), humanDuration(left), strings.Join(c.metrics, ", "))}
			f.setFact("expires_in", humanDuration(left))
		}
		f.setFact("certificate", name)
		f.setFact("not_after", ts(c.expires))
		f.setFact("hosts", strings.Join(c.hosts, ", "))
		out = append(out, f)
	}
	return out
}

// certOwners guesses the services a certificate belongs to: its name
// without a -tls/-cert suffix, and the first label of the hosts it serves.
func certOwners(names, hosts []string) []string {
	var out []string
	for _, n := range names {
		for _, suf := range []string{"-tls", "-cert", "-certificate", "-https", "-ssl"} {
			if b := strings.TrimSuffix(n, suf); b != n && b != "" && !containsStr(out, b) {
				out = append(out, b)
			}
		}
	}
	return out
}

func firstLabel(l evidence.Labels, keys ...string) string {
	for _, k := range keys {
		if v := l[k]; v != "" {
			return v
		}
	}
	return ""
}

func humanDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.0f days", math.Floor(d.Hours()/24))
	case d >= 24*time.Hour:
		return fmt.Sprintf("1 day %.0f h", d.Hours()-24)
	case d >= time.Hour:
		return fmt.Sprintf("%.0f h", d.Hours())
	}
	return fmt.Sprintf("%.0f min", d.Minutes())
}

// backlogKey names what a backlog series measures: a consumer group (and
// topic) or a queue.
func backlogKey(l evidence.Labels) (subject, detail string) {
	if g := firstLabel(l, "consumergroup", "consumer_group", "group", "groupId", "group_id"); g != "" {
		return g, firstLabel(l, "topic")
	}
	if q := firstLabel(l, "queue", "QueueName", "queue_name"); q != "" {
		return q, ""
	}
	return SubjectOfLabels(l), firstLabel(l, "topic")
}

// DetectBacklog finds backlogs that keep growing: consumer-group lag,
// queue depth, visible messages (summed over partitions), at least five
// times the baseline, by a practical amount, and still high at the end of
// the window. A dead-letter queue filling is a symptom, not a backlog.
func DetectBacklog(sets []MetricSet, w Window) []Finding {
	var out []Finding
	for _, ms := range sets {
		if !isBacklogMetric(ms.Name) {
			continue
		}
		type agg struct {
			subject, detail, ns string
			sum                 map[time.Time]float64
		}
		by := map[string]*agg{}
		var order []string
		for _, s := range ms.Series {
			sub, det := backlogKey(s.Labels)
			if sub == "" {
				continue
			}
			if l := strings.ToLower(sub); strings.Contains(l, "dlq") || strings.Contains(l, "dead-letter") || strings.Contains(l, "deadletter") || strings.HasSuffix(l, "-dead") {
				continue
			}
			k := sub + "|" + det
			a := by[k]
			if a == nil {
				a = &agg{subject: sub, detail: det, ns: s.Labels["namespace"], sum: map[time.Time]float64{}}
				by[k] = a
				order = append(order, k)
			}
			for _, p := range inWindow(s.Points, w.BaselineStart, w.End) {
				a.sum[p.T] += p.V
			}
		}
		for _, k := range order {
			a := by[k]
			pts := make([]evidence.Point, 0, len(a.sum))
			for t, v := range a.sum {
				pts = append(pts, evidence.Point{T: t, V: v})
			}
			sort.Slice(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
			f, ok := backlogFinding(ms, a.subject, a.detail, a.ns, pts, w)
			if ok {
				out = append(out, f)
			}
		}
	}
	return out
}

func backlogFinding(ms MetricSet, subject, detail, ns string, pts []evidence.Point, w Window) (Finding, bool) {
	var base []float64
	var inc []evidence.Point
	for _, p := range pts {
		if p.T.Before(w.Start) {
			base = append(base, p.V)
		} else {
			inc = append(inc, p)
		}
	}
	if len(inc) < 5 {
		return Finding{}, false
	}
	before := 0.0
	if len(base) > 0 {
		before = analysis.Median(base)
	} else {
		before = inc[0].V
	}
	peak, peakAt := 0.0, time.Time{}
	for _, p := range inc {
		if p.V > peak {
			peak, peakAt = p.V, p.T
		}
	}
	last := inc[len(inc)-1].V
	floor := max(before*5, before+500)
	if peak < floor || last < 0.5*peak {
		return Finding{}, false
	}
	// Onset: the first point of the climb that does not fall back to the
	// baseline level.
	thr := before + (peak-before)*0.1
	onset := peakAt
	for i := len(inc) - 1; i >= 0 && inc[i].V >= thr; i-- {
		onset = inc[i].T
	}
	// Growing steadily: most steps after the onset go up.
	up, steps := 0, 0
	for i := 1; i < len(inc); i++ {
		if inc[i].T.Before(onset) {
			continue
		}
		steps++
		if inc[i].V >= inc[i-1].V {
			up++
		}
	}
	weight := 0.8
	if steps >= 4 && up*10 >= steps*7 {
		weight = 0.92
	}
	what := "consumer lag"
	n := strings.ToLower(ms.Name)
	if !strings.Contains(n, "lag") {
		what = "backlog"
		if strings.Contains(n, "queue") || strings.Contains(n, "messages") {
			what = "queue backlog"
		}
	}
	on := subject
	if detail != "" {
		on += " on " + detail
	}
	f := Finding{Kind: KindBacklog, Subject: subject, Object: ms.Origin + " " + ms.Name, Namespace: ns, Time: onset, Severity: SevCritical,
		Weight: weight, Source: ms.Origin, Related: []string{subject}}
	f.Summary = fmt.Sprintf("%s of %s grows from %.0f to %.0f", what, on, before, peak)
	f.Evidence = []string{fmt.Sprintf("%s (%s, summed over partitions) of %s grows steadily from %.0f (baseline median) to %.0f at %s, %.0f at the end of the window; beyond normal since %s",
		what, ms.Name, on, before, peak, ts(peakAt), last, ts(onset))}
	f.setFact("metric", ms.Name)
	f.setFact("what", what)
	f.setFact("group", subject)
	f.setFact("topic", detail)
	f.setFact("baseline", fmt.Sprintf("%.0f", before))
	f.setFact("peak", fmt.Sprintf("%.0f", peak))
	return f, true
}
