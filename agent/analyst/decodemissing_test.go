package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDecodeMissingField reads a field missing from a consumed record,
// in several runtimes' words, as a decode failure when the consumer's
// lines name the topic and a producer publishes to it; a KeyError of a
// process's own settings, or one with no producer found, is not one.
func TestDecodeMissingField(t *testing.T) {
	header := `2026-11-24 08:41:02,117 ERROR app.consumer: failed to handle order-events[3]@88419120 (order ORD-1), sent to order-events.dlq`
	producer := minedSet("orders-api", false, 0, `{"level":"info","msg":"published","topic":"order-events","event":"OrderPlaced"}`)
	cases := []struct {
		name, line, field string
		withProducer      bool
	}{
		{"Python KeyError", `KeyError: 'customer_email'`, "customer_email", true},
		{"Ruby KeyError", `KeyError: key not found: "customer_email"`, "customer_email", true},
		{"Jackson missing creator property", `com.fasterxml.jackson.databind.exc.MismatchedInputException: Missing required creator property 'customerEmail' (index 1)`, "customerEmail", true},
		{"serde missing field", "Error(\"missing field `customer_email`\", line: 1, column: 88)", "customer_email", true},
		{"Go validator required tag", `Key: 'OrderPlaced.CustomerEmail' Error:Field validation for 'CustomerEmail' failed on the 'required' tag`, "CustomerEmail", true},
		{"no producer publishes to the topic", `KeyError: 'customer_email'`, "", false},
		{"an environment variable's KeyError", `KeyError: 'DISPATCH_QUEUE_URL'`, "", true},
	}
	for _, c := range cases {
		sets := []LogSet{minedSet("mailer", false, 0, header, c.line)}
		if c.withProducer {
			sets = append(sets, producer)
		}
		changes := []evidence.Change{{Timestamp: win.Start.Add(-10 * time.Minute), Service: "orders-api", Kind: "deploy", Revision: "5.2.0", Description: "orders-api 5.2.0: OrderPlaced v2"}}
		found := DetectLogs(sets, win)
		out := decodeFailure.detect(&Gathered{Logs: sets, Changes: changes, Window: win}, found)
		if c.field == "" {
			if len(out) != 0 {
				t.Errorf("%s: want no decode failure, got %v", c.name, out)
			}
			continue
		}
		if len(out) != 1 {
			t.Errorf("%s: want one decode failure, got %v", c.name, out)
			continue
		}
		f := out[0]
		if f.Subject != "mailer" || f.fact("decode_field") != c.field || f.fact("decode_source") != "orders-api" || f.fact("affected") != "orders-api" || f.fact("decode_notice") == "" {
			t.Errorf("%s: got subject %q field %q source %q affected %q notice %q", c.name, f.Subject, f.fact("decode_field"), f.fact("decode_source"), f.fact("affected"), f.fact("decode_notice"))
		}
	}
}
