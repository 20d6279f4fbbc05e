package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

func TestBacklog(t *testing.T) {
	stall := &Finding{Kind: KindConsumerStall, Subject: "order-events", Facts: map[string]string{"line": "[Consumer clientId=consumer-orders-1, groupId=orders] Offset commit cannot be completed since the consumer is not part of an active group for auto partition assignment; it is likely that the consumer was kicked out of the group."}}
	cases := []struct {
		facts   map[string]string
		support []*Finding
		want    []string
	}{
		{map[string]string{"what": "consumer lag", "topic": "orders", "baseline": "120", "peak": "48.3k"}, []*Finding{stall},
			[]string{"the consumer lag of group order-events on topic orders grows steadily from 120 to 48.3k: the consumers fall behind (backlog)", "poll loop is too slow", "Offset commit cannot be completed"}},
		{map[string]string{"what": "queue depth", "baseline": "3", "peak": "9100"}, nil, []string{"the queue depth of order-events grows steadily from 3 to 9100"}},
	}
	for _, c := range cases {
		h := &Hypothesis{Kind: KindBacklog, Subject: "order-events", Primary: []*Finding{{Kind: KindBacklog, Subject: "order-events", Facts: c.facts}}, Support: c.support}
		wantDescribed(t, h, Scope{}, c.want...)
		if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "Let the consumers of order-events catch up") {
			t.Errorf("recommendations %v", recs)
		}
	}
}

// TestBacklogConsumer: a queue's consumer (named after it) timing out or
// slowing down is why the queue backs up; the backlog's description
// follows that hop. The dead-letter queue and unrelated services are not
// consumers.
func TestBacklogConsumer(t *testing.T) {
	for _, c := range []struct {
		subject, queue string
		want           bool
	}{
		{"order-events-consumer", "order-events", true},
		{"invoices-worker", "invoices", true},
		{"order-events-dlq", "order-events", false},
		{"order-events", "order-events", false},
		{"orders-api", "order-events", false},
		{"thumbnail-gen", "order-events", false},
	} {
		if got := consumerOf(c.subject, c.queue); got != c.want {
			t.Errorf("consumerOf(%q, %q) = %v, want %v", c.subject, c.queue, got, c.want)
		}
	}
	h := &Hypothesis{Kind: KindBacklog, Subject: "order-events", Primary: []*Finding{{Kind: KindBacklog, Subject: "order-events",
		Facts: map[string]string{"what": "queue backlog", "baseline": "13", "peak": "10101"}}}}
	timeout := &Finding{Kind: KindTimeout, Subject: "order-events-consumer", Facts: map[string]string{"line": "2026-04-27T21:32:51.931Z 97d9154a-4b3c-40de-959c-1f388beb0d89 Task timed out after 30.03 seconds"}}
	slow := &Finding{Kind: KindSlowOperation, Subject: "order-events-consumer", Facts: map[string]string{"line": "2026-04-27T21:33:22.750Z\t1a7d13a7-41ca-4ec8-b434-6138a2670e0b\tWARN\tfulfillment API slow: 8158ms (p50 budget 500ms)"}}
	dlq := &Finding{Kind: KindSaturation, Subject: "order-events-dlq"}
	for _, f := range []*Finding{timeout, slow} {
		if !backlogM.related(h, f) {
			t.Errorf("%s of %s not related to the backlog", f.Kind, f.Subject)
		}
	}
	if backlogM.related(h, dlq) {
		t.Errorf("the dead-letter queue related to the backlog")
	}
	h.Support = []*Finding{timeout, slow}
	wantDescribed(t, h, Scope{}, "its consumer order-events-consumer times out", "Task timed out after 30.03 seconds", "slow call it waits for", "fulfillment API slow: 8158ms")
}

// TestStuckPartition checks that a lag held by one partition while the
// others are drained is told from consumers lagging everywhere.
func TestStuckPartition(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	pts := func(vs ...float64) []evidence.Point {
		var out []evidence.Point
		for i, v := range vs {
			out = append(out, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
		}
		return out
	}
	stuck := map[string][]evidence.Point{"0": pts(3, 0), "1": pts(12, 2), "2": pts(0, 1), "7": pts(17200, 18021)}
	f := Finding{Kind: KindBacklog, Subject: "shipment-notifier"}
	stuckPartition(&f, stuck)
	if f.fact("partition") != "7" || f.fact("other_partitions") != "3" || len(f.Evidence) != 1 {
		t.Errorf("stuck partition: facts %v, evidence %v; want partition 7 of 4", f.Facts, f.Evidence)
	}
	h := &Hypothesis{Kind: KindBacklog, Subject: "shipment-notifier", Primary: []*Finding{&f}}
	if d := describeBacklog(h); !strings.Contains(d, "partition 7") || !strings.Contains(d, "stuck") {
		t.Errorf("describe = %q", d)
	}
	slow := map[string][]evidence.Point{"0": pts(3000, 4100), "1": pts(2800, 3900), "2": pts(3100, 4300)}
	g := Finding{Kind: KindBacklog, Subject: "order-events"}
	stuckPartition(&g, slow)
	if g.fact("partition") != "" {
		t.Errorf("lag on every partition read as partition %s stuck", g.fact("partition"))
	}
}

// TestConsumerWaits: the consumers of a growing lag wait per record on a
// call their own log times (Spring's "took 5161 ms", logfmt's
// duration=4.2s, Python's "took 3.4s"), asked about time or not; the
// dependency it calls is named, and the hop that dependency waits on in
// turn (its own calls timing out) is followed once. Short calls, calls of
// the usual pace and other services' calls are not it.
func TestConsumerWaits(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(5 * time.Minute)
	lag := func(group, what string) Finding {
		return Finding{Kind: KindBacklog, Subject: group, Time: on, Facts: map[string]string{"what": what, "group": group}}
	}
	set := func(subject string, hasBase bool, ts ...analysis.LogTemplate) LogSet {
		return LogSet{Source: subject + ".log", Subject: subject, Origin: SrcLogs, HasBaseline: hasBase, Templates: ts}
	}
	spring := `2026-05-01 11:10:32.038  WARN 1 --- [order-consumer-0] c.a.f.client.AddressValidationClient     : POST http://address-validation.fulfillment.svc:8080/v1/validate took 5161 ms`
	logfmt := `time=2026-05-01T11:07:00Z level=warn msg="slow upstream" url=http://pricing.shop.svc.cluster.local:8080/v1/quote duration=4.2s`
	python := `2026-05-01 11:08:00,101 WARNING geo_enricher: call to geoip-api:9000 took 3.4s`
	fast := `2026-05-01 11:10:32.038  INFO 1 --- [order-consumer-0] c.a.f.client.AddressValidationClient     : POST http://address-validation.fulfillment.svc:8080/v1/validate took 180 ms`
	upstream := Finding{Kind: KindTimeout, Subject: "api.addressy.com", Summary: "address-validation logs timeouts to api.addressy.com (109 lines from 11:07 UTC)", Facts: map[string]string{"caller": "address-validation"}}
	usual := tmpl(spring, 40, on, w.End)
	usual.Baseline = 40
	cases := []struct {
		name                   string
		backlog                Finding
		logs                   []LogSet
		found                  []Finding
		consumer, callee, next string
	}{
		{"a group named after its service, two hops", lag("fulfillment-worker", "consumer lag"), []LogSet{set("fulfillment-worker", false, tmpl(spring, 87, on, w.End))}, []Finding{upstream},
			"fulfillment-worker", "address-validation", "api.addressy.com"},
		{"logfmt duration field", lag("pricing-sync", "consumer lag"), []LogSet{set("pricing-sync", true, tmpl(logfmt, 30, on, w.End))}, nil, "pricing-sync", "pricing", ""},
		{"a queue's consumer", lag("geo-events", "queue backlog"), []LogSet{set("geo-events-consumer", false, tmpl(python, 12, on, w.End))}, nil, "geo-events-consumer", "geoip-api", ""},
		{"no address called", lag("shipment-tracker", "consumer lag"), []LogSet{set("shipment-tracker", false, tmpl(`2026-03-30T21:38:18.000Z  INFO 1 --- [ntainer#0-0-C-1] c.a.l.tracker.enrich.CarrierEtaEnricher  : carrier ETA lookup carrier=DHL shipment=9834ec5f75 took 1361ms`, 50, on, w.End))}, nil, "", "", ""},
		{"short calls", lag("fulfillment-worker", "consumer lag"), []LogSet{set("fulfillment-worker", false, tmpl(fast, 87, on, w.End))}, nil, "", "", ""},
		{"the usual pace", lag("fulfillment-worker", "consumer lag"), []LogSet{set("fulfillment-worker", true, usual)}, nil, "", "", ""},
		{"another service's calls", lag("fulfillment-worker", "consumer lag"), []LogSet{set("orders-api", false, tmpl(spring, 87, on, w.End))}, nil, "", "", ""},
		{"a queue is not its own consumer", lag("geo-events", "queue backlog"), []LogSet{set("geo-events", false, tmpl(python, 12, on, w.End))}, nil, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectConsumerWaits(&Gathered{Logs: c.logs, Window: w}, append([]Finding{c.backlog}, c.found...))
			f, ok := oneFinding(t, fs, c.consumer != "")
			if !ok {
				return
			}
			if f.Kind != KindSlowOperation || f.Subject != c.consumer || f.fact("callee") != c.callee || f.fact("next_hop") != c.next {
				t.Errorf("%s: %s on %q callee %q next %q", c.name, f.Kind, f.Subject, f.fact("callee"), f.fact("next_hop"))
				return
			}
			b := c.backlog
			h := &Hypothesis{Kind: KindBacklog, Subject: b.Subject, Primary: []*Finding{&b}, Support: []*Finding{&f}}
			if !backlogM.related(h, &f) {
				t.Errorf("%s: the consumer's slow call is not related to the backlog", c.name)
			}
			d := describeBacklog(h)
			want := "each record waits for its call to " + c.callee
			if c.next != "" {
				want = c.callee + " in turn waits for " + c.next
			}
			if !strings.Contains(d, want) {
				t.Errorf("%s: description lacks %q: %s", c.name, want, d)
			}
		})
	}
}
