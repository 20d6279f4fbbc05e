package bundle

import (
	"strings"
	"testing"
	"testing/fstest"
)

// Client reports as people hand them over: Chrome's and Firefox's HAR
// exports, Sentry's events API JSON (its entries with exception frames
// and breadcrumbs), a Crashlytics export and a ticket pasted as text. A
// root transcript stays a transcript; JSON of another shape is no report.
func TestClientReports(t *testing.T) {
	chromeHAR := `{"log":{"version":"1.2","creator":{"name":"WebInspector","version":"537.36"},"pages":[{"id":"page_1","title":"https://shop.example/"}],
"entries":[{"startedDateTime":"2026-11-24T15:31:08.412Z","time":96.1,"pageref":"page_1",
"request":{"method":"GET","url":"https://shop.example/c/bikes","httpVersion":"http/2.0","headers":[{"name":"cookie","value":"a=1; b=2; _exp_1=xyz"}],"cookies":[{"name":"a","value":"1"}]},
"response":{"status":400,"statusText":"","httpVersion":"http/2.0","headers":[{"name":"content-type","value":"text/html"}],"content":{"size":10,"mimeType":"text/html","text":"<html><title>400 Request Header Or Cookie Too Large</title></html>"}},
"timings":{"blocked":1,"dns":-1,"wait":80.5,"receive":2}}]}}`
	firefoxHAR := `{"log":{"version":"1.2","creator":{"name":"Firefox","version":"132.0"},"pages":[],
"entries":[{"startedDateTime":"2026-11-16T09:12:04.771+01:00","time":40,"request":{"method":"POST","url":"https://book.example/api/step","httpVersion":"HTTP/2","headers":[{"name":"Sec-Fetch-Site","value":"same-origin"}],"cookies":[]},
"response":{"status":409,"statusText":"Conflict","httpVersion":"HTTP/2","headers":[{"name":"Set-Cookie","value":"SESSION=abc; Path=/; SameSite=Lax"}],"content":{"mimeType":"application/json","text":"{\"error\":\"SESSION_EXPIRED\"}"}},"timings":{}}]}}`
	sentryEvents := `[{"id":"1","eventID":"ab12","dateCreated":"2026-11-12T10:14:30.104Z","title":"TypeError: e.orders is null","culprit":"OrderHistory(src/OrderHistory.tsx)",
"tags":[{"key":"release","value":"account-web@11.4.0"}],
"entries":[{"type":"exception","data":{"values":[{"type":"TypeError","value":"e.orders is null","stacktrace":{"frames":[{"function":"render","absPath":"https://shop.example/app.js","lineNo":1,"colNo":9},{"function":"removeChild","absPath":"chrome-extension://abc/content.js","lineNo":1,"colNo":5}]}}]}},
{"type":"breadcrumbs","data":{"values":[{"timestamp":"2026-11-12T10:14:29Z","category":"xhr","message":"GET /v3/orders [200]"}]}}]}]`
	fsys := fstest.MapFS{
		"browser/ticket.har":         {Data: []byte(chromeHAR)},
		"partner.har":                {Data: []byte(firefoxHAR)},
		"sentry/events.json":         {Data: []byte(sentryEvents)},
		"sentry/other.json":          {Data: []byte(`{"kind":"nothing"}`)},
		"crashlytics-export.txt":     {Data: []byte("Firebase Crashlytics  >  shop (Android, com.example.shop)  >  Issues\nNon-fatal Exception: com.squareup.moshi.JsonDataException: Expected a double but was BEGIN_OBJECT at path $.price\n")},
		"session.txt":                {Data: []byte("$ kubectl get pods -n web\nNAME READY STATUS RESTARTS AGE\nweb-1 1/1 Running 0 5m\n")},
		"kubernetes/web/pods.json":   {Data: []byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`)},
		"browser/devtools-notes.txt": {Data: []byte("Cookies tab: This attempt to set a cookie via a Set-Cookie header was blocked because it had the \"SameSite=Lax\" attribute\r\n")},
	}
	got := map[string][]string{}
	for _, c := range clientReports(fsys) {
		if !strings.HasPrefix(c.Command, "client report: ") {
			t.Fatalf("command %q", c.Command)
		}
		got[strings.TrimPrefix(c.Command, "client report: ")] = c.Lines
	}
	want := map[string][]string{
		"browser/ticket.har (HAR)":           {"* 2026-11-24T15:31:08.412Z page https://shop.example/", "> GET https://shop.example/c/bikes HTTP/2.0", "> cookie: a=1; b=2; _exp_1=xyz", "* request cookie header: 28 bytes, 3 cookies", "< HTTP/2.0 400", "< body: <html><title>400 Request Header Or Cookie Too Large</title></html>"},
		"partner.har (HAR)":                  {"> POST https://book.example/api/step HTTP/2", "* request cookie header: none", "< HTTP/2 409 Conflict", "< Set-Cookie: SESSION=abc; Path=/; SameSite=Lax", `< body: {"error":"SESSION_EXPIRED"}`},
		"sentry/events.json (Sentry events)": {"2026-11-12T10:14:30.104Z TypeError: e.orders is null", "  tags: release=account-web@11.4.0", "    at removeChild (chrome-extension://abc/content.js:1:5)", "  breadcrumb 2026-11-12T10:14:29Z xhr GET /v3/orders [200]"},
		"crashlytics-export.txt (page)":      {"Non-fatal Exception: com.squareup.moshi.JsonDataException: Expected a double but was BEGIN_OBJECT at path $.price"},
		"browser/devtools-notes.txt (page)":  {`Cookies tab: This attempt to set a cookie via a Set-Cookie header was blocked because it had the "SameSite=Lax" attribute`},
	}
	if len(got) != len(want) {
		t.Fatalf("reports %v, want %d", keys(got), len(want))
	}
	for name, lines := range want {
		have := strings.Join(got[name], "\n")
		for _, l := range lines {
			if !strings.Contains(have, l) {
				t.Errorf("%s: no line %q in\n%s", name, l, have)
			}
		}
	}
	b := &Bundle{FS: fsys}
	if b.kubernetes() == nil {
		t.Fatal("no source")
	}
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
