package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindZoneImpaired: one availability zone of the cloud provider is
// degraded (network latency, packet loss, a failing rack of hosts) and the
// service slows only on the pods that run on nodes in that zone. Its
// latency per pod splits by zone: the pods of one zone slowed, those of
// the other zones did not. The provider's health feed (AWS Health's
// describe-events and its event details, Google Cloud's and Azure's
// service health) names the zone, often by its zone id (euw1-az1) rather
// than its name (eu-west-1b), which describe-availability-zones maps. A
// release rolled out to every pod near the onset cannot slow only the
// pods of one zone: it is a coincidence, not the trigger.
const KindZoneImpaired Kind = "zone_impaired"

var zoneImpaired = &mechanism{
	kind:   KindZoneImpaired,
	class:  classDependency,
	label:  "one availability zone of the cloud provider is degraded",
	detect: detectZoneImpaired,
	// Only a change that names the zone triggers it; a release to every
	// pod does not slow the pods of one zone.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		z := h.fact("zone")
		return z != "" && strings.Contains(changeText(c), strings.ToLower(z))
	},
	// The service's latency, slow operations and timeouts are what the
	// zone's pods cost it.
	related: exceptChanges(kindsOnSubject(KindLatency, KindSlowOperation, KindTimeout, KindSlowQuery)),
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s is slow only in one availability zone, %s%s: its %s on nodes in that zone slowed (%s) while its %s in %s did not (%s)",
			h.Subject, h.fact("zone"), h.clause(" ", "zone_id_paren"), h.fact("slow_pods"), h.fact("slow_level"), h.fact("fast_pods"), h.fact("fast_zones"), h.fact("fast_level"))
		if e := h.fact("health"); e != "" {
			d += "; the cloud provider reports an open issue in that zone: " + e + " — the zone's network is degraded (increased latency, packet loss), not the service's code"
		} else {
			d += " — what the zone's pods share is the zone (its network, its hosts), not the service's code"
		}
		if c := h.fact("coincident"); c != "" {
			d += "; the " + c + " went to the pods of every zone alike, so it cannot explain the zone's pods alone"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		z := h.fact("zone")
		r.high("Shift traffic away from the degraded zone %s (a zonal shift of the load balancer, or cordon the zone's nodes and reschedule %s's pods to the other zones) until the provider resolves its issue; do not roll back a release for it", z, h.Subject)
		r.med("Follow the provider's health event for %s and keep capacity in the other zones to absorb its share", z)
		r.low("Alert on %s's latency per zone (pods grouped by topology.kubernetes.io/zone), so one zone's degradation shows apart from a release's", h.Subject)
	},
}

var (
	// An AWS zone name (eu-west-1b), a Google Cloud zone (us-central1-a,
	// europe-west4-b).
	zoneNameRE = regexp.MustCompile(`\b(?:[a-z]{2}(?:-gov)?-[a-z]+-\d[a-z]|[a-z]+-[a-z]+\d+-[a-z])\b`)
	// An AWS zone id (euw1-az1, use1-az4).
	zoneIDRE = regexp.MustCompile(`\b[a-z]{3,5}\d-az\d+\b`)
	// A provider's health report of a degraded service: AWS Health event
	// types and descriptions, Google Cloud's and Azure's wording.
	zoneHealthRE = regexp.MustCompile(`(?i)_OPERATIONAL_ISSUE|packet loss|network latency|connectivity issue|degraded|impair|elevated (?:latency|error)|increased (?:latency|error)|service disruption|outage`)
	// A report that says its issue is not in the zone or not about
	// connectivity ("Database connectivity is not affected").
	zoneNotAffectedRE = regexp.MustCompile(`(?i)\bnot affected\b`)
)

// zoneOfNode is a node's zone label.
func zoneOfNode(n *corev1.Node) string {
	for _, k := range []string{"topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"} {
		if z := n.Labels[k]; z != "" {
			return z
		}
	}
	return ""
}

// zoneHealth reads the provider's reports of a degraded zone from the
// commands handed over: zone name or id → the report's line, with the
// zone ids' names (describe-availability-zones rows).
func zoneHealth(cmds []evidence.CommandOutput) (reports map[string]string, idName map[string]string) {
	reports, idName = map[string]string{}, map[string]string{}
	for _, c := range cmds {
		for _, l := range c.Lines {
			names, ids := findAllString(zoneNameRE, l, -1), findAllString(zoneIDRE, l, -1)
			if len(names) == 1 && len(ids) == 1 && !matchLine(zoneHealthRE, l) {
				idName[ids[0]] = names[0]
				continue
			}
			if !matchLine(zoneHealthRE, l) || len(names)+len(ids) == 0 {
				continue
			}
			for _, z := range append(names, ids...) {
				if reports[z] == "" || matchLine(zoneNotAffectedRE, reports[z]) {
					reports[z] = strings.Join(strings.Fields(l), " ")
				}
			}
		}
	}
	return reports, idName
}

type zonePod struct {
	pod, zone      string
	before, during float64
	series         evidence.Series
}

// podLatencies is the mean latency of each pod of the subject before and
// during the incident, from series labelled by pod.
func podLatencies(sets []MetricSet, pods map[string]string, w Window) []zonePod {
	var out []zonePod
	seen := map[string]bool{}
	for _, set := range sets {
		n := strings.ToLower(set.Name)
		if set.Unit != "s" && !strings.Contains(n, "latency") && !strings.Contains(n, "duration") {
			continue
		}
		if strings.HasSuffix(n, "_count") || strings.HasSuffix(n, "_bucket") {
			continue
		}
		for _, s := range set.Series {
			p := s.Labels["pod"]
			zone, ok := pods[p]
			if !ok || seen[p] {
				continue
			}
			before, ok1 := meanIn(s, w.BaselineStart, w.Start)
			during, ok2 := meanIn(s, w.Start, w.End.Add(time.Second))
			if !ok1 || !ok2 || before <= 0 {
				continue
			}
			seen[p] = true
			out = append(out, zonePod{pod: p, zone: zone, before: before, during: during, series: s})
		}
		if len(out) > 0 {
			break
		}
	}
	return out
}

// detectZoneImpaired splits the asked service's latency per pod by the
// zone of the pod's node, and keeps a zone whose pods alone slowed.
func detectZoneImpaired(ev *Gathered, _ []Finding) []Finding {
	svc := ev.Scope.Service
	if svc == "" || ev.Window.BaselineStart.IsZero() {
		return nil
	}
	nodeZone := map[string]string{}
	for i := range ev.K8s.Nodes {
		if z := zoneOfNode(&ev.K8s.Nodes[i]); z != "" {
			nodeZone[ev.K8s.Nodes[i].Name] = z
		}
	}
	pods := map[string]string{}
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if z := nodeZone[p.Spec.NodeName]; z != "" && strings.EqualFold(WorkloadOfPod(p), svc) {
			pods[p.Name] = z
		}
	}
	lat := podLatencies(ev.Metrics, pods, ev.Window)
	if len(lat) < 4 {
		return nil
	}
	type zoneState struct {
		slow, fast     []string
		before, during float64
	}
	var zs keyed[zoneState]
	for _, p := range lat {
		z := zs.get(p.zone)
		if p.during >= 1.5*p.before {
			z.slow = append(z.slow, p.pod)
		} else {
			z.fast = append(z.fast, p.pod)
		}
		z.before += p.before
		z.during += p.during
	}
	sort.Strings(zs.order)
	slowZone := ""
	for _, k := range zs.order {
		z := zs.m[k]
		switch {
		case len(z.slow) > 0 && len(z.fast) == 0:
			if slowZone != "" {
				return nil // more than one zone slowed: not a zone's fault
			}
			slowZone = k
		case len(z.slow) > 0:
			return nil // a zone with slow and normal pods alike
		}
	}
	if slowZone == "" || len(zs.order) < 2 {
		return nil
	}
	var fastZones []string
	nFast, fastBefore, fastDuring := 0, 0.0, 0.0
	for _, k := range zs.order {
		if k == slowZone {
			continue
		}
		z := zs.m[k]
		fastZones = append(fastZones, k)
		nFast += len(z.fast)
		fastBefore += z.before
		fastDuring += z.during
	}
	if nFast < 2 {
		return nil
	}
	sz := zs.m[slowZone]
	n := float64(len(sz.slow))
	reports, idName := zoneHealth(ev.Commands)
	health, zoneID := reports[slowZone], ""
	for id, name := range idName {
		if name == slowZone {
			zoneID = id
			if r := reports[id]; r != "" && (health == "" || matchLine(zoneNotAffectedRE, health)) {
				health = r
			}
		}
	}
	if matchLine(zoneNotAffectedRE, health) && !strings.Contains(strings.ToLower(health), "other availability zones") && !strings.Contains(strings.ToLower(health), "other zones") {
		health = ""
	}
	// When a report names the zone by its id, quote the report that does
	// (the description) beside the one that names the zone.
	if zoneID != "" && reports[zoneID] != "" && reports[zoneID] != health {
		health = reports[zoneID] + " (" + health + ")"
	}
	// The onset is when the first of the zone's pods left its level.
	var at time.Time
	for _, p := range lat {
		if p.zone != slowZone {
			continue
		}
		if sh, ok := seriesShift(p.series, ev.Window); ok && sh.up && (at.IsZero() || sh.start.Before(at)) {
			at = sh.start
		}
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindZoneImpaired, Subject: svc, Namespace: ev.Scope.Namespace, Object: "zone " + slowZone, Time: at,
		Severity: SevCritical, Weight: 0.8, Source: SrcMetrics}
	f.setFact("zone", slowZone)
	if zoneID != "" {
		f.setFact("zone_id_paren", "("+zoneID+")")
	}
	f.setFact("slow_pods", plural(len(sz.slow), "pod", "pods"))
	f.setFact("fast_pods", plural(nFast, "pod", "pods"))
	f.setFact("fast_zones", strings.Join(fastZones, ", "))
	f.setFact("slow_level", fmt.Sprintf("mean %s → %s", fmtLatency(sz.before/n), fmtLatency(sz.during/n)))
	f.setFact("fast_level", fmt.Sprintf("mean %s → %s", fmtLatency(fastBefore/float64(nFast)), fmtLatency(fastDuring/float64(nFast))))
	f.Evidence = []string{
		fmt.Sprintf("%s's pods on nodes in %s slowed: %s (%s)", svc, slowZone, strings.Join(sz.slow, ", "), f.fact("slow_level")),
		fmt.Sprintf("its pods in %s did not (%s)", strings.Join(fastZones, ", "), f.fact("fast_level")),
	}
	if health != "" {
		f.setFact("health", quote(health, 320))
		f.Evidence = append(f.Evidence, "the provider's health feed: "+quote(health, 320))
		f.Weight = 0.95
	}
	for _, c := range ev.Changes {
		if strings.EqualFold(c.Service, svc) && !c.Timestamp.Before(ev.Window.BaselineStart) && !strings.Contains(strings.ToLower(c.Description), strings.ToLower(slowZone)) {
			f.setFact("coincident", fmt.Sprintf("%s of %s at %s (%q)", c.Kind, c.Service, hm(c.Timestamp), truncate(c.Description, 100)))
		}
	}
	f.Summary = fmt.Sprintf("%s is slow only on its pods in zone %s", svc, slowZone)
	return []Finding{f}
}

// fmtLatency is a latency in seconds, in ms below a second.
func fmtLatency(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.2f s", v)
}
