package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Clients failing on an API's changed response as error trackers show
// them: a Crashlytics export with Moshi's JsonDataException, Gson's
// IllegalStateException, Swift's typeMismatch, a Sentry issue page with
// Chrome's null read and its source excerpt, Safari's wording in Sentry's
// events JSON. The API is the one whose change names the field, else the
// one a called path names; a failure with no such change is not this
// cause, nor is a change after the first failure.
func TestDetectClientResponseShape(t *testing.T) {
	at := win.Start.Add(30 * time.Minute)
	report := func(lines ...string) []evidence.CommandOutput {
		return []evidence.CommandOutput{{Command: "client report: report.txt (page)", Lines: lines}}
	}
	moneyChange := evidence.Change{Timestamp: at.Add(-2 * time.Minute), Service: "mobile-gateway", Kind: "deploy", Description: "mobile-gateway 5.0.0: totalPrice as a Money object"}
	ordersChange := evidence.Change{Timestamp: at.Add(-2 * time.Minute), Service: "orders-api", Kind: "deploy", Description: "orders-api 3.1.0: new repository layer"}
	webChange := evidence.Change{Timestamp: at.Add(time.Hour), Service: "account-web", Kind: "deploy", Description: "account-web 2.0.0: redesign"}
	first := "First seen: " + at.Format("Jan 2, 2006, 15:04:05") + " UTC"
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		subject string
		field   string
	}{
		{"Crashlytics, Moshi", report("Firebase Crashlytics  >  shop-app (Android, com.example.shop)  >  Issues", first, "Versions: 7.3.2 (10302) 72%   7.3.1 (10301) 28%",
			"Keys: screen=Cart  endpoint=/v2/basket  http_status=200",
			"Non-fatal Exception: com.squareup.moshi.JsonDataException: Expected a double but was BEGIN_OBJECT at path $.lines[0].totalPrice"),
			[]evidence.Change{moneyChange}, "mobile-gateway", "lines[0].totalPrice"},
		{"Gson", report(first, "java.lang.IllegalStateException: Expected BEGIN_ARRAY but was STRING at line 1 column 58 path $.totalPrice", "com.google.gson.JsonSyntaxException: java.lang.IllegalStateException: Expected BEGIN_ARRAY but was STRING at line 1 column 58 path $.totalPrice"),
			[]evidence.Change{moneyChange}, "mobile-gateway", "totalPrice"},
		{"Swift Codable", report(first, `Fatal error: typeMismatch(Swift.Double, Swift.DecodingError.Context(codingPath: [CodingKeys(stringValue: "lines", intValue: nil), _JSONKey(stringValue: "Index 0", intValue: 0), CodingKeys(stringValue: "totalPrice", intValue: nil)], debugDescription: "Expected to decode Double but found a dictionary instead.", underlyingError: nil))`),
			[]evidence.Change{moneyChange}, "mobile-gateway", "totalPrice"},
		{"Sentry page, Chrome, source excerpt", report("Sentry > acme > account-web > ACCOUNT-WEB-12", "TypeError: Cannot read properties of null (reading 'map')", first,
			"  breadcrumb xhr GET https://api.example.com/v3/orders?status=open [200]", "  > 41 |     <ul>{data.orders.map((o) => <Row o={o} />)}</ul>"),
			[]evidence.Change{ordersChange, webChange}, "orders-api", "orders"},
		{"Sentry events, Safari", report("2026-11-12T10:09:30Z TypeError: undefined is not an object (evaluating 'e.orders.map')", "  tags: release=account-web@2.0.0", "  entries_breadcrumbs_tail: xhr GET https://api.example.com/v3/orders [200]"),
			[]evidence.Change{ordersChange}, "orders-api", "orders"},
		{"no API change", report(first, "JsonDataException: Expected a double but was BEGIN_OBJECT at path $.totalPrice"), nil, "", ""},
		{"the API changed after the first failure", report(first, "JsonDataException: Expected a double but was BEGIN_OBJECT at path $.totalPrice"),
			[]evidence.Change{{Timestamp: at.Add(time.Hour), Service: "mobile-gateway", Kind: "deploy", Description: "mobile-gateway 5.0.1: totalPrice fix"}}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Changes: c.changes, Window: win}
			f := onlyFinding(t, detectClientResponseShape(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("field") != c.field {
				t.Fatalf("field %q, want %q", f.fact("field"), c.field)
			}
			h := &Hypothesis{Kind: KindClientResponseShape, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "response shape", c.field)
			if recs := recommend(h, Scope{}); len(recs) < 2 {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
