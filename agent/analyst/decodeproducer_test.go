package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDecodeFailureProducer follows a consumer's decode failure to the
// service that writes what it consumes: the one whose change names the
// value that fails, or the one whose log publishes to the topic the
// consumer's lines name, in several clients' words.
func TestDecodeFailureProducer(t *testing.T) {
	jackson := `Caused by: com.fasterxml.jackson.databind.exc.InvalidFormatException: Cannot deserialize value of type ` + "`com.acme.model.ShipmentStatus`" + ` from String "RETURNED_TO_SENDER": not one of the values accepted for Enum class: [CREATED, DELIVERED]`
	serde := `ERROR consumer: failed to decode record from parcel-events[2]@88120: Error("unknown variant ` + "`returned_to_sender`" + `, expected one of ` + "`created`, `delivered`" + `", line: 1, column: 42)`
	systemText := `fail: Billing.Consumer[0] message invoices-3@4412 failed: System.Text.Json.JsonException: The JSON value could not be converted to System.Decimal. Path: $.amount | LineNumber: 0 | BytePositionInLine: 40.`
	cases := []struct {
		name     string
		reader   string
		sets     []LogSet
		changes  []evidence.Change
		producer string
		notice   bool
	}{
		{"the producer's change names the new enum value", "shipment-tracker", []LogSet{
			minedSet("shipment-tracker", false, 0, jackson),
		}, []evidence.Change{
			{Timestamp: win.Start.Add(-time.Hour), Service: "shipment-tracker", Kind: "deploy", Description: "shipment-tracker 2.11.0"},
			{Timestamp: win.Start, Service: "carrier-gateway", Kind: "deploy", Description: "carrier-gateway 3.4.0: new shipment status RETURNED_TO_SENDER", Revision: "3.4.0"},
		}, "carrier-gateway", true},
		{"serde consumer, producer found by the topic it publishes to (JSON log)", "parcel-sync", []LogSet{
			minedSet("parcel-sync", false, 0, serde),
			minedSet("parcel-api", false, 0, `{"level":"info","msg":"published","topic":"parcel-events","partition":2}`),
		}, nil, "parcel-api", false},
		{".NET consumer, producer found by the topic it publishes to (logfmt), with its deploy", "billing-consumer", []LogSet{
			minedSet("billing-consumer", false, 0, systemText),
			minedSet("invoice-api", false, 0, `level=info msg="event produced" topic=invoices key=INV-1`),
		}, []evidence.Change{
			{Timestamp: win.Start.Add(-10 * time.Minute), Service: "invoice-api", Kind: "deploy", Description: "invoice-api 7.0.0: amounts as strings"},
		}, "invoice-api", true},
		{"no producer named anywhere: none guessed", "parcel-sync", []LogSet{
			minedSet("parcel-sync", false, 0, serde),
			minedSet("parcel-web", false, 0, `level=info msg="rendered page" path=/parcels`),
		}, nil, "", false},
	}
	for _, c := range cases {
		found := DetectLogs(c.sets, win)
		decodeFailure.detect(&Gathered{Logs: c.sets, Changes: c.changes, Window: win}, found)
		var f *Finding
		for i := range found {
			if found[i].Kind == KindDecodeFailure {
				f = &found[i]
				break
			}
		}
		if f == nil {
			t.Errorf("%s: no decode failure in %v", c.name, found)
			continue
		}
		if got := f.fact("decode_source"); got != c.producer {
			t.Errorf("%s: producer %q, want %q", c.name, got, c.producer)
		}
		if c.producer != "" && f.fact("affected") != c.producer {
			t.Errorf("%s: affected %q, want the producer %q", c.name, f.fact("affected"), c.producer)
		}
		if got := f.fact("decode_notice") != ""; got != c.notice {
			t.Errorf("%s: notice %q, want one: %v", c.name, f.fact("decode_notice"), c.notice)
		}
	}
}
