package analyst

import (
	"testing"
)

// A caller of an API version its provider retired, as clients log the
// answer (Ruby's Faraday with the provider's versioned error body,
// Python's requests, Node's axios) beside the Deprecation and Sunset
// headers logged before; a 410 for a deleted resource with no notice, and
// notices with no failure, are not it.
func TestDetectAPIRetired(t *testing.T) {
	notice := `W, [2026-11-22T22:41:08.627844 #1]  WARN -- : [carrier] API deprecation notice: Deprecation="Tue, 01 Sep 2026 00:00:00 GMT" Sunset="Mon, 23 Nov 2026 00:00:00 GMT" Link="<https://developers.carrier.example/migrate/v3>; rel=\"successor-version\""`
	cases := []struct {
		name    string
		lines   []string
		version string
		want    []string
	}{
		{"Faraday with the provider's error body", []string{
			`E, [2026-11-23T04:32:02.614641 #1] ERROR -- : [carrier] POST https://api.carrier.example/v2/labels order=1 status=410 body={"error":{"type":"api_version_retired","message":"API v2 was retired on 2026-11-23. Use /v3/labels"}}`,
		}, "/v2", []string{"api.carrier.example retired the v2 API", "2026-11-23", "410 Gone"}},
		{"requests with the notices logged before", []string{notice,
			`ERROR rates failed: requests.exceptions.HTTPError: 410 Client Error: Gone for url: https://api.carrier.example/v1/rates`,
		}, "/v1", []string{"Mon, 23 Nov 2026 00:00:00 GMT", "Deprecation and Sunset headers", "https://developers.carrier.example/migrate/v3"}},
		{"axios with the notices logged before", []string{
			`{"level":"warn","msg":"upstream deprecation","headers":"Deprecation: true; Sunset: 2026-11-01","url":"https://api.maps.example/api/v1/geocode"}`,
			`{"level":"error","msg":"AxiosError: Request failed with status code 410","url":"https://api.maps.example/api/v1/geocode"}`,
		}, "/api/v1", []string{"2026-11-01", "api.maps.example"}},
		{"a deleted resource", []string{`ERROR GET https://api.shop.example/v2/orders/881 status=410 order was purged`}, "", nil},
		{"notices with no failure", []string{notice}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("caller", false, 0, c.lines...)}, Window: win}
			want := ""
			if c.want != nil {
				want = "caller"
			}
			f := onlyFinding(t, detectAPIRetired(ev, nil), want)
			if f == nil {
				return
			}
			if f.fact("version") != c.version {
				t.Errorf("version %q, want %q", f.fact("version"), c.version)
			}
			h := &Hypothesis{Kind: KindAPIRetired, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, append([]string{"caller", "410 Gone"}, c.want...)...)
		})
	}
}
