package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Decimal numbers parsed under a locale whose separators are the other
// way round. A program that parses numbers through the C locale machinery
// (Python's locale.atof and locale.atoi, C's strtod after setlocale, PHP's
// floatval under setlocale, Java's NumberFormat.getInstance()) reads them
// with the decimal and thousands separators of the process's locale: under
// de_DE, fr_FR, es_ES and most European locales "," is the decimal point
// and "." groups thousands, so "12.99" reads as 1299 and every value with
// two decimals is a hundred times too large (with three, a thousand). The
// locale comes from the environment (LC_ALL, LC_NUMERIC, LANG), often set
// by a base image, not by the program's code: a rebuild "with no code
// changes" brings it. Nothing fails; the values are wrong. The answer names
// the program, its locale and the separators it reads, the scaled values
// (12.99 -> 1299.00), the locale it ran with before, and the change that
// set the locale.

// KindLocaleNumberParse is decimal numbers read under a locale with other
// separators.
const KindLocaleNumberParse Kind = "locale_number_parse"

var localeNumberParse = &mechanism{
	kind:   KindLocaleNumberParse,
	class:  classCause,
	label:  "decimal numbers parsed under a locale whose decimal separator is the other one",
	detect: detectLocaleNumberParse,
	related: exceptOwnAndChanges(KindLocaleNumberParse, func(h *Hypothesis, f *Finding) bool {
		return false
	}),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := strings.ToLower(changeText(c))
		return strings.Contains(t, "locale") || strings.Contains(t, "lc_all") || strings.Contains(t, "lc_numeric") || strings.Contains(t, "lang=") ||
			strings.Contains(t, "base image") || strings.Contains(t, "rebuil") || h.fact("locale") != "" && strings.Contains(t, strings.ToLower(localeLang(h.fact("locale"))))
	},
	// Wrong data fails nothing: its subject's pods, probes and errors are
	// their own story, not consequences of it.
	unrelated: func(h *Hypothesis, f *Finding) bool {
		return f.Kind != KindLocaleNumberParse && infoOf(f.Kind).class != classChange
	},
	describe:  describeLocaleNumberParse,
	recommend: recommendLocaleNumberParse,
}

var (
	// A locale name as the environment sets it (de_DE.UTF-8, fr_FR@euro).
	localeNameRE = regexp.MustCompile(`\b([a-z]{2,3}_[A-Z]{2})(?:\.[A-Za-z0-9-]+)?(?:@\w+)?\b`)
	// A line that speaks of the locale: a log line reporting it, an
	// environment listing, an image's Env.
	localeWordRE = regexp.MustCompile(`(?i)\blocale\b|\bLC_(?:ALL|NUMERIC)\b|\bLANG\b`)
	// A neutral locale: C, POSIX, C.UTF-8 or English.
	neutralLocaleRE = regexp.MustCompile(`(?i:locale|LC_ALL|LC_NUMERIC|LANG)\b[^\n]{0,40}?[=:\s]"?(C\.(?i:UTF-?8)|C|POSIX|en_[A-Z]{2}(?:\.[\w-]+)?)(?:$|[^\w.])`)
	// A value and what it became: "12.99 -> 1299.00", "12,99 => 1299".
	scaledPairRE = regexp.MustCompile(`(?:^|[^\d.,])(\d{1,6}[.,]\d{2,3})\s*(?:->|=>|→|became|parsed as|read as|stored as)\s*(\d{3,10}(?:\.\d+)?)\b`)
	// locale.atof("12.99") in a command and its result in the output.
	atofCallRE = regexp.MustCompile(`(?:atof|atoi|strtod|floatval|parse)\(\s*["'](\d{1,6}[.,]\d{2,3})["']`)
	// A ratio of exactly a power of ten in a sanity check's words.
	ratioHundredRE = regexp.MustCompile(`(?i)\bratio[ =:]*(100|1000)(?:\.0+)?\b`)
)

// commaDecimalLangs are the languages whose locales write "," as the
// decimal separator (and group thousands with "." or a space).
var commaDecimalLangs = map[string]bool{
	"de": true, "fr": true, "es": true, "it": true, "nl": true, "pt": true, "ru": true, "pl": true, "sv": true,
	"da": true, "fi": true, "nb": true, "nn": true, "no": true, "cs": true, "sk": true, "tr": true, "el": true,
	"hu": true, "ro": true, "bg": true, "uk": true, "id": true, "hr": true, "sl": true, "lt": true, "lv": true,
	"et": true, "ca": true, "sr": true, "is": true, "be": true, "kk": true, "az": true, "vi": true,
}

// dotDecimalExceptions are the territories of those languages that write
// "." as the decimal separator.
var dotDecimalExceptions = map[string]bool{"de_CH": true, "de_LI": true, "es_MX": true, "es_US": true, "fr_CH": true, "it_CH": true}

func localeLang(l string) string {
	if i := strings.IndexByte(l, '_'); i > 0 {
		return l[:i]
	}
	return l
}

// commaDecimal reports whether a locale writes "," as its decimal point.
func commaDecimal(l string) bool {
	base := l
	if i := strings.IndexAny(base, ".@"); i > 0 {
		base = base[:i]
	}
	return commaDecimalLangs[localeLang(base)] && !dotDecimalExceptions[base]
}

// scaledBySeparator reports whether got is from with its separator
// dropped: the separator read as a thousands separator.
func scaledBySeparator(from, got string) (sep byte, ok bool) {
	i := strings.IndexAny(from, ".,")
	if i < 0 {
		return 0, false
	}
	digits := from[:i] + from[i+1:]
	want, err := strconv.ParseFloat(digits, 64)
	if err != nil {
		return 0, false
	}
	g, err := strconv.ParseFloat(got, 64)
	if err != nil || g != want {
		return 0, false
	}
	return from[i], true
}

type localeLine struct {
	text, subject string
	cmd           *evidence.CommandOutput
	at            time.Time
}

func detectLocaleNumberParse(ev *Gathered, _ []Finding) []Finding {
	var lines []localeLine
	add := func(text, subject string, cmd *evidence.CommandOutput, at time.Time) {
		if t, ok := evidence.LineTime([]byte(text), ev.Window.End); ok {
			at = t
		}
		lines = append(lines, localeLine{text, subject, cmd, at})
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				add(l, set.Subject, nil, firstOf(t.FirstIncident, t.FirstSeen))
			}
		}
		for _, l := range set.Lines {
			add(l.Text, set.Subject, nil, l.Time)
		}
	}
	for key, ls := range ev.K8s.PreviousLogs {
		parts := strings.Split(key, "/")
		for _, l := range ls {
			add(l.Text, workloadOfPodName(parts[min(1, len(parts)-1)]), nil, l.Time)
		}
	}
	for i := range ev.Commands {
		c := &ev.Commands[i]
		subject := commandWorkload(c)
		add(c.Command, subject, c, time.Time{})
		for _, l := range c.Lines {
			add(l, subject, c, time.Time{})
		}
	}

	// The comma-decimal locale a program runs with, and the neutral one
	// it ran with before.
	locale, subject, before := "", "", ""
	var localeAt time.Time
	for _, l := range lines {
		if l.cmd != nil && l.text != l.cmd.Command && !localeWordRE.MatchString(l.cmd.Command) {
			continue
		}
		if l.cmd == nil && !localeWordRE.MatchString(l.text) {
			continue
		}
		if m := neutralLocaleRE.FindStringSubmatch(l.text); m != nil && l.cmd == nil {
			if before == "" {
				before = m[1]
			}
			continue
		}
		for _, m := range localeNameRE.FindAllStringSubmatch(l.text, -1) {
			if !commaDecimal(m[0]) {
				continue
			}
			if locale == "" || subject == "" && l.subject != "" {
				locale, subject, localeAt = m[0], l.subject, l.at
			}
		}
	}
	if locale == "" {
		return nil
	}

	// Values scaled by a power of ten with their separator dropped.
	var pairs []string
	seen := map[string]bool{}
	sep := byte(0)
	var at time.Time
	ratios := 0
	for _, l := range lines {
		if subject != "" && l.subject != "" && l.subject != subject {
			continue
		}
		if l.cmd != nil && l.text == l.cmd.Command {
			continue
		}
		for _, m := range scaledPairRE.FindAllStringSubmatch(l.text, -1) {
			if s, ok := scaledBySeparator(m[1], m[2]); ok {
				p := m[1] + " -> " + m[2]
				if !seen[p] {
					seen[p] = true
					pairs = append(pairs, p)
				}
				sep = s
				if !l.at.IsZero() && (at.IsZero() || l.at.Before(at)) {
					at = l.at
				}
			}
		}
		if ratioHundredRE.MatchString(l.text) {
			ratios++
		}
		// A call of the parser on a value and the output it printed.
		if l.cmd != nil {
			if m := atofCallRE.FindStringSubmatch(l.cmd.Command); m != nil {
				for _, f := range strings.Fields(l.text) {
					if _, ok := scaledBySeparator(m[1], f); ok {
						p := fmt.Sprintf("%s -> %s", m[1], f)
						if !seen[p] {
							seen[p] = true
							pairs = append(pairs, "a parse of "+p)
						}
						sep = m[1][strings.IndexAny(m[1], ".,")]
						break
					}
				}
			}
		}
	}
	// Under a comma-decimal locale the dropped separator is ".".
	if len(pairs) == 0 || sep != '.' {
		return nil
	}
	if subject == "" {
		subject = ev.Scope.Service
	}
	if subject == "" {
		return nil
	}
	if at.IsZero() {
		at = localeAt
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindLocaleNumberParse, Subject: subject, Object: "locale " + locale, Time: at, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	f.setFact("locale", locale)
	f.setFact("before", before)
	f.setFact("values", strings.Join(pairs[:min(3, len(pairs))], ", "))
	if len(pairs) > 1 || ratios > 0 {
		f.Weight = 0.95
	}
	// The change that set the locale, and the rebuild that brought it.
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		d := strings.ToLower(c.Description)
		if strings.Contains(d, strings.ToLower(localeLang(locale))+"_") || strings.Contains(d, "lc_all") || strings.Contains(d, "lc_numeric") || strings.Contains(d, "lang=") || strings.Contains(d, "lang/") || strings.Contains(d, "locale") {
			f.setFact("set_by", fmt.Sprintf("%s's change at %s (%s)", c.Service, c.Timestamp.UTC().Format(time.RFC3339), quote(c.Description, 160)))
		}
	}
	// The subject's own rebuild or release before the onset that took it.
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		if c.Service == subject && !c.Timestamp.After(at) {
			f.setFact("rebuild", fmt.Sprintf("%s at %s (%s)", orWord(c.Revision, c.Kind), c.Timestamp.UTC().Format(time.RFC3339), quote(c.Description, 160)))
		}
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s runs with the locale %s, whose decimal separator is \",\" and thousands separator \".\"", subject, locale))
	if before != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s ran with the locale %s before", subject, before))
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("values read a hundred or a thousand times too large, their decimal point dropped: %s", f.fact("values")))
	f.Summary = fmt.Sprintf("%s: decimal numbers parsed under the locale %s (%s)", subject, locale, pairs[0])
	return []Finding{f}
}

// commandWorkload is the workload a command ran against: the pod of an
// exec or a log read, or the image of a kubectl run.
func commandWorkload(c *evidence.CommandOutput) string {
	if c.Pod != "" {
		return workloadOfPodName(c.Pod)
	}
	if _, name, ok := strings.Cut(c.Target, "/"); ok {
		return name
	}
	if m := runImageRE.FindStringSubmatch(c.Command); m != nil {
		return m[1]
	}
	return ""
}

var runImageRE = regexp.MustCompile(`--image[= ](?:\S+/)?([a-z0-9][a-z0-9-]*)(?::|@|\s|$)`)

func describeLocaleNumberParse(h *Hypothesis, sc Scope) string {
	l := h.fact("locale")
	d := fmt.Sprintf("%s parses decimal numbers under the locale %s (LC_ALL/LANG from its environment): in that locale \",\" is the decimal separator and \".\" the thousands separator, so a value written with a decimal point is read with the point dropped (%s) and stored a hundred times too large (a thousand with three decimals); the input is not wrong, its reading is (locale.atof, strtod after setlocale, a locale-aware number format)", h.Subject, l, h.fact("values"))
	if b := h.fact("before"); b != "" {
		d += fmt.Sprintf("; %s ran with the locale %s before", h.Subject, b)
	}
	if s := h.fact("set_by"); s != "" {
		d += "; the locale was set by " + s
	}
	if r := h.fact("rebuild"); r != "" && h.Trigger == nil {
		d += fmt.Sprintf("; %s took it with its change %s", h.Subject, r)
	}
	if t := h.Trigger; t != nil {
		d += fmt.Sprintf("; it reached %s with %s's change at %s (%s)", h.Subject, t.Subject, t.Time.UTC().Format(time.RFC3339), quote(t.Summary, 160))
	}
	return d
}

func recommendLocaleNumberParse(h *Hypothesis, sc Scope, r *recommender) {
	r.high("Run %s with a neutral numeric locale (LC_ALL=C.UTF-8 or LC_NUMERIC=C in its container env), or roll back to the image it ran before", h.Subject)
	r.high("Repair the values %s wrote since: re-run it under the neutral locale, or restore them from the previous run", h.Subject)
	r.med("Parse input numbers without the process locale (Decimal(text), float(text), a fixed-format parser) so a base image's LANG/LC_ALL cannot change them")
	r.low("Make %s's sanity checks on value changes (a ratio of 100) block the write instead of only warning", h.Subject)
}
