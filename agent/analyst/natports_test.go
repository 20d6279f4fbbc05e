package analyst

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDetectNATPorts(t *testing.T) {
	goDial := []string{
		`time=2026-11-22T16:05:02.346Z level=WARN msg="delivery failed" partner=parcelhub event_id=evt_158d1c6e84da attempt=1 err="Post \"https://hooks.parcelhub.example/v3/events\": dial tcp 52.56.118.40:443: i/o timeout"`,
		`time=2026-11-22T16:05:06.386Z level=WARN msg="delivery failed" partner=parcelhub event_id=evt_17597e8e104c attempt=2 err="Post \"https://hooks.parcelhub.example/v3/events\": dial tcp 52.56.118.40:443: i/o timeout"`,
		`time=2026-11-22T16:05:07.227Z level=WARN msg="delivery failed" partner=parcelhub event_id=evt_c49236e36e6d attempt=1 err="Post \"https://hooks.parcelhub.example/v3/events\": dial tcp 52.56.118.40:443: i/o timeout"`,
	}
	javaConnect := []string{
		`2026-11-22 16:06:01.118 ERROR 1 --- [pool-3-thread-7] c.a.w.Dispatcher : delivery to https://api.partner.example/hooks failed: org.apache.http.conn.ConnectTimeoutException: Connect to api.partner.example:443 [api.partner.example/18.133.20.7] failed: connect timed out`,
		`2026-11-22 16:06:11.120 ERROR 1 --- [pool-3-thread-2] c.a.w.Dispatcher : delivery to https://api.partner.example/hooks failed: org.apache.http.conn.ConnectTimeoutException: Connect to api.partner.example:443 [api.partner.example/18.133.20.7] failed: connect timed out`,
		`2026-11-22 16:06:21.120 ERROR 1 --- [pool-3-thread-9] c.a.w.Dispatcher : delivery to https://api.partner.example/hooks failed: org.apache.http.conn.ConnectTimeoutException: Connect to api.partner.example:443 [api.partner.example/18.133.20.7] failed: connect timed out`,
	}
	cases := []struct {
		name   string
		metric MetricSet
		lines  []string
		want   string // gateway, "" for none
		dest   string
	}{
		{"AWS NAT gateway ErrorPortAllocation, Go dial timeouts",
			cwSeries("AWS/NATGateway/ErrorPortAllocation", map[string]string{"NatGatewayId": "nat-0b7d2e4f19a3c6081"}, 0, 0, 0, 0, 2836, 3781, 3893),
			goDial, "nat-0b7d2e4f19a3c6081", "hooks.parcelhub.example"},
		{"GCP Cloud NAT allocation failed, Java connect timeouts",
			cwSeries("router.googleapis.com/nat/nat_allocation_failed", map[string]string{"gateway_name": "nat-europe-west1"}, 0, 0, 0, 1, 1, 1, 1),
			javaConnect, "nat-europe-west1", "api.partner.example"},
		{"GCP Cloud NAT packets dropped for lack of ports",
			withLabel(cwSeries("router.googleapis.com/nat/dropped_sent_packets_count", map[string]string{"gateway_name": "nat-europe-west1"}, 0, 0, 0, 120, 340, 512), "reason", "OUT_OF_RESOURCES"),
			javaConnect, "nat-europe-west1", "api.partner.example"},
		{"Azure NAT gateway failed SNAT connections, Go dial timeouts",
			withLabel(cwSeries("Microsoft.Network/natGateways/SNATConnectionCount", map[string]string{"resourceName": "natgw-weu-prod"}, 0, 0, 0, 0, 812, 1907, 2230), "ConnectionState", "Failed"),
			goDial, "natgw-weu-prod", "hooks.parcelhub.example"},
		{"Azure SNAT connections attempted are no failure",
			withLabel(cwSeries("Microsoft.Network/natGateways/SNATConnectionCount", map[string]string{"resourceName": "natgw-weu-prod"}, 0, 0, 0, 0, 812, 1907, 2230), "ConnectionState", "Attempted"),
			goDial, "", ""},
		{"port allocation errors all along are the gateway's normal",
			cwSeries("AWS/NATGateway/ErrorPortAllocation", map[string]string{"NatGatewayId": "nat-1"}, 40, 38, 52, 47, 41, 39),
			goDial, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := minedSet("webhook-dispatcher", false, 0, c.lines...)
			ev := &Gathered{Logs: []LogSet{set}, Metrics: []MetricSet{c.metric}, Window: win}
			found := DetectLogs(ev.Logs, win)
			fs := detectNATPorts(ev, found)
			if c.want == "" {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != c.want {
				t.Fatalf("want NAT gateway %s, got %+v (from %+v)", c.want, fs, found)
			}
			f := fs[0]
			if f.fact("callers") != "webhook-dispatcher" || f.fact("destinations") != c.dest {
				t.Errorf("callers %q destinations %q; want webhook-dispatcher, %q", f.fact("callers"), f.fact("destinations"), c.dest)
			}
			h := &Hypothesis{Kind: KindNATPorts, Subject: f.Subject, Primary: []*Finding{&f}}
			d := natPorts.describe(h, Scope{})
			for _, want := range []string{"NAT gateway " + c.want, "source ports", "webhook-dispatcher", "not at fault"} {
				if !strings.Contains(d, want) {
					t.Errorf("description lacks %q: %s", want, d)
				}
			}
			if got := affected(h, Scope{}); slices.Contains(got, c.dest) || !slices.Contains(got, "webhook-dispatcher") {
				t.Errorf("affected %v: the caller is, the partner it could not reach is not", got)
			}
			keepAliveOff := &Finding{Kind: KindDeploy, Subject: "webhook-dispatcher", Facts: map[string]string{"description": "build a dedicated http.Client (DisableKeepAlives: true) per delivery"}}
			sftp := &Finding{Kind: KindConfigChange, Subject: "edi-importer", Facts: map[string]string{"description": "rotate SFTP key for wholesale partner"}}
			if !natPorts.fitsChange(h, keepAliveOff) || natPorts.fitsChange(h, sftp) {
				t.Errorf("keep-alive off should trigger the exhaustion, a key rotation should not")
			}
		})
	}
}

func withLabel(ms MetricSet, k, v string) MetricSet {
	for i := range ms.Series {
		ms.Series[i].Labels[k] = v
	}
	return ms
}

// A batch job whose connects to the same partner time out is a caller of
// the gateway too, though its lines joined another caller's finding.
func TestNATPortsCallersFromLogs(t *testing.T) {
	svc := minedSet("shipping-quotes", false, 5*time.Minute,
		`time=2026-11-22T16:05:02.346Z level=ERROR msg="carrier quote failed" err="Post \"https://api.carrier.example/v3/rates\": dial tcp 203.0.113.40:443: i/o timeout"`,
		`time=2026-11-22T16:05:12.346Z level=ERROR msg="carrier quote failed" err="Post \"https://api.carrier.example/v3/rates\": dial tcp 203.0.113.40:443: i/o timeout"`)
	job := minedSet("tracking-backfill", false, 6*time.Minute,
		`2026-11-22 16:06:58,377 WARNING backfill: 2212 requests failed: HTTPSConnectionPool(host='api.carrier.example', port=443): Max retries exceeded with url: /v3/labels (Caused by ConnectTimeoutError(<urllib3.connection.HTTPSConnection object at 0x7f3a1c2e5d90>, 'Connection to api.carrier.example timed out. (connect timeout=2)'))`)
	other := minedSet("ledger", false, 6*time.Minute,
		`2026-11-22 16:06:58,377 ERROR ledger: Connection to db.internal timed out. (connect timeout=2)`)
	ev := &Gathered{Logs: []LogSet{svc, job, other}, Window: win,
		Metrics: []MetricSet{cwSeries("AWS/NATGateway/ErrorPortAllocation", map[string]string{"NatGatewayId": "nat-1"}, 0, 0, 0, 0, 0, 2836, 3781, 3893)}}
	found := DetectLogs([]LogSet{svc}, win)
	fs := detectNATPorts(ev, found)
	if len(fs) != 1 || fs[0].fact("callers") != "shipping-quotes, tracking-backfill" {
		t.Fatalf("want callers shipping-quotes and tracking-backfill, got %+v", fs)
	}
	if !slices.Contains(fs[0].Related, "tracking-backfill") {
		t.Errorf("the batch job is related to the gateway (its deploy may be the trigger): %v", fs[0].Related)
	}
}

// A batch job that names the partner's endpoint once, in its start-up
// line, and counts its connect failures in progress lines is a caller
// too; host names compare without case (the job writes the endpoint in
// mixed case, the service's client in lower case). A job that names
// the host but never fails a connect, or fails connects to another
// host, is not.
func TestNATPortsCallerNamesEndpointOnce(t *testing.T) {
	svc := minedSet("payments-api", false, 5*time.Minute,
		`2026-11-22T09:31:07.100Z ERROR 1 --- [http-nio-8080-exec-31] c.f.p.PartnerGateway : authorise failed: I/O error on POST request for "https://live.psp.example/checkout": Connect timed out`,
		`2026-11-22T09:31:17.100Z ERROR 1 --- [http-nio-8080-exec-32] c.f.p.PartnerGateway : authorise failed: I/O error on POST request for "https://live.psp.example/checkout": Connect timed out`)
	job := minedSet("token-migration", false, 6*time.Minute,
		`2026-11-22T09:26:05Z [INFO] token-migration 0.3.0: 2,318,440 cards, workers=64, endpoint=https://Live.PSP.example/checkout/v71/stored`,
		`2026-11-22T09:32:05Z [INFO] progress 101839/2318440 (4.4%), 241 req/s, errors(connect timeout)=450`,
		`2026-11-22T09:33:05Z [INFO] progress 117364/2318440 (5.1%), 254 req/s, errors(connect timeout)=999`)
	quiet := minedSet("card-sync", false, 6*time.Minute,
		`2026-11-22T09:26:05Z [INFO] card-sync: endpoint=https://live.psp.example/checkout`,
		`2026-11-22T09:32:05Z [INFO] synced 120 cards`)
	elsewhere := minedSet("ledger", false, 6*time.Minute,
		`2026-11-22T09:26:05Z [INFO] ledger: endpoint=https://db.internal/ledger`,
		`2026-11-22T09:32:05Z [ERROR] Connection to db.internal timed out. (connect timeout=2)`)
	ev := &Gathered{Logs: []LogSet{svc, job, quiet, elsewhere}, Window: win,
		Metrics: []MetricSet{cwSeries("AWS/NATGateway/ErrorPortAllocation", map[string]string{"NatGatewayId": "nat-1"}, 0, 0, 0, 0, 0, 2836, 3781, 3893)}}
	fs := detectNATPorts(ev, DetectLogs([]LogSet{svc}, win))
	if len(fs) != 1 || fs[0].fact("callers") != "payments-api, token-migration" {
		t.Fatalf("want callers payments-api and token-migration, got %+v", fs)
	}
}
