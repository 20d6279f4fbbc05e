package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Decimal numbers read under a comma-decimal locale: Python logging that
// reports its locale and a sanity check's scaled values, a printenv in
// the container with a Monolog line, and a kubectl run of locale.atof in
// the image; an English or Swiss locale, and values changed by other
// ratios, are none.
func TestDetectLocaleNumberParse(t *testing.T) {
	pyLocale := "2026-11-26 06:00:05,224 INFO price_importer.main: locale set from environment: de_DE.UTF-8"
	pyBefore := "2026-11-25 06:00:04,980 INFO price_importer.main: locale set from environment: C.UTF-8"
	pySanity := "2026-11-26 06:00:11,450 WARNING price_importer.sanity: sku=NW-448120 price 12.99 -> 1299.00 (ratio 100.00) exceeds max_change_ratio=5.0; enforce_sanity=false, applying"
	monolog := `[2026-11-26T06:00:11.450000+00:00] feed.WARNING: price for 4711 changed 4.50 => 450 {"supplier":"acme"} []`
	printenv := evidence.CommandOutput{Command: "kubectl -n shop exec deploy/feed-sync -- printenv LANG LC_ALL", Exec: true, Target: "deploy/feed-sync", Lines: []string{"fr_FR.UTF-8", "fr_FR.UTF-8"}}
	atof := evidence.CommandOutput{Command: `kubectl -n catalog run dbg --rm -i --restart=Never --image=registry.example.com/catalog/rate-loader:3.1.0 --command -- python -c 'import locale; locale.setlocale(locale.LC_ALL, ""); print(locale.getlocale(), locale.atof("0.875"))'`,
		Lines: []string{"('es_ES', 'UTF-8') 875.0"}}
	english := "2026-11-26 06:00:05,224 INFO importer: locale set from environment: en_US.UTF-8"
	swiss := "2026-11-26 06:00:05,224 INFO importer: locale set from environment: de_CH.UTF-8"
	other := "2026-11-26 06:00:11,450 WARNING importer.sanity: sku=1 price 12.99 -> 64.95 (ratio 5.00) exceeds max_change_ratio=5.0"
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"python logging, a sanity warning", []LogSet{minedSet("price-importer", false, 0, pyBefore, pyLocale, pySanity)}, nil, "price-importer",
			[]string{"under the locale de_DE.UTF-8", "12.99 -> 1299.00", "C.UTF-8 before"}},
		{"printenv in the container, monolog", []LogSet{minedSet("feed-sync", false, 0, monolog)}, []evidence.CommandOutput{printenv}, "feed-sync",
			[]string{"under the locale fr_FR.UTF-8", "4.50 -> 450"}},
		{"locale.atof in the image", nil, []evidence.CommandOutput{atof}, "rate-loader", []string{"es_ES", "0.875 -> 875.0"}},
		{"an English locale", []LogSet{minedSet("importer", false, 0, english, pySanity)}, nil, "", nil},
		{"a Swiss German locale", []LogSet{minedSet("importer", false, 0, swiss, pySanity)}, nil, "", nil},
		{"values changed by another ratio", []LogSet{minedSet("importer", false, 0, pyLocale, other)}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectLocaleNumberParse(&Gathered{Logs: tc.sets, Commands: tc.cmds, Window: win}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindLocaleNumberParse, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}

// The decimal values a question quotes; times, versions and dates are not
// values.
func TestAskedValues(t *testing.T) {
	for msg, want := range map[string][]string{
		"a 12.99 jacket at 1299.00 since the 06:00 import":        {"12.99", "1299.00"},
		"totals are 0,01 off: 100,00 in the ERP, 99,99 on paper.": {"0,01", "100,00", "99,99"},
		"did pdp-web 4.2.1 break it on 2026-11-25 at 10:05?":      nil,
	} {
		got := askedValues(msg)
		if len(got) != len(want) {
			t.Errorf("%q: got %v, want %v", msg, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%q: got %v, want %v", msg, got, want)
			}
		}
	}
}
