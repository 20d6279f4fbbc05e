package analyst

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRequiredLiterals(t *testing.T) {
	cases := []struct {
		re   string
		want []string // nil: no prefilter
	}{
		{`(?i)too many open files|\bEMFILE\b`, []string{"too many open files", "emfile"}},
		{`(?i)certificate (is )?expir`, []string{"certificate expir", "certificate is expir"}},
		{`(?i)duration: \d{4,}(\.\d+)? ms`, []string{"duration: "}},
		{`(?i)event loop (lag|blocked)`, []string{"event loop lag", "event loop blocked"}},
		{`(?i)\b(error|err|exception|fail(ed|ure)?)\b`, []string{"err", "exception", "fail"}},
		{`\d+ ms`, []string{" ms"}},
		{`(?i)a|\d+`, nil},
		{`x?y*`, nil},
		{`(?i)\b(error|err|fatal)\b`, []string{"err", "fatal"}},
		{`(?i)a(b|c)(d|e)x`, []string{"abdx", "abex", "acdx", "acex"}},
		{`(?i)time is (un|not )synchroni[sz]ed`, []string{"time is unsynchronised", "time is unsynchronized", "time is not synchronised", "time is not synchronized"}},
	}
	for _, c := range cases {
		m := newMatcher(regexp.MustCompile(c.re))
		if !slices.Equal(m.keywords, c.want) {
			t.Errorf("%s: keywords %q, want %q", c.re, m.keywords, c.want)
		}
	}
}

// TestPrefilterAgreesWithRegexp checks, on every log line of the scenario
// and holdout bundles and on lines with non-ASCII text, that a rule's
// prefilter never rejects a line its expression matches.
func TestPrefilterAgreesWithRegexp(t *testing.T) {
	// One line per shape (digits folded), so the test stays quick.
	var lines []string
	seen := map[string]bool{}
	var files []string
	for _, set := range []string{"scenarios", "holdout", "holdout2", "holdout3", "holdout4", "holdout5"} {
		for _, pat := range []string{"*/logs/*", "*/kubernetes/*/*/*.txt", "*/kubernetes/*/*/*.log"} {
			fs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", set, pat))
			files = append(files, fs...)
		}
	}
	{
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(fh)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				key := strings.Map(func(r rune) rune {
					if r >= '0' && r <= '9' {
						return '0'
					}
					return r
				}, sc.Text())
				if !seen[key] {
					seen[key] = true
					// Every 16th shape, for time; the regexp side is slow.
					if len(seen)%16 == 0 {
						lines = append(lines, sc.Text())
					}
				}
			}
			fh.Close()
		}
	}
	lines = append(lines, "ERROR Certificate HAS EXPIRED", "Too Many Open Files", "ſtatement timeout", "KELVIN \u212a too many clients", "x509: certificate signed by unknown authority")
	t.Logf("%d distinct lines", len(lines))
	if len(lines) < 100 {
		t.Fatalf("only %d lines found", len(lines))
	}
	all := append(slices.Clone(ruleMatchers), errorWordM, certWordM)
	for _, l := range lines {
		lower := lowerASCII(l)
		for _, m := range all {
			if got, want := m.match(l, lower), m.re.MatchString(l); got != want {
				t.Errorf("rule %s on %q: prefilter %v, regexp %v (keywords %q)", m.re, l, got, want, m.keywords)
			}
		}
	}
}

// TestLowerASCII: strings.ToLower's answer for ASCII lines (the line
// itself when it has no upper-case letter), "" for any other.
func TestLowerASCII(t *testing.T) {
	for _, s := range []string{"", "a", "Z", "already lower 123 {}[]", "ERROR Certificate HAS EXPIRED at 10:04:05Z", "@[\\]^_`{|}~ AZaz09",
		"ſtatement timeout", "KELVIN \u212a too many clients", "caf\u00e9", "x\xff"} {
		want := strings.ToLower(s)
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				want = ""
			}
		}
		if got := lowerASCII(s); got != want {
			t.Errorf("lowerASCII(%q) = %q, want %q", s, got, want)
		}
	}
	for c := 0; c < 0x80; c++ {
		s := string(rune(c))
		if got := lowerASCII(s); got != strings.ToLower(s) {
			t.Errorf("lowerASCII(%q) = %q", s, got)
		}
	}
}
