package analyst

import (
	"regexp"
	"slices"
	"testing"
)

// TestMatchLineAgreesWithRegexp checks that matchLine, findSubmatch and
// findAllSubmatch answer exactly as the expression does, on lines in
// several real formats, in other cases and with non-ASCII text (where
// Unicode case folding matches 'K' with the Kelvin sign).
func TestMatchLineAgreesWithRegexp(t *testing.T) {
	res := []string{
		`(?i)too many open files|\bEMFILE\b`,
		`(?i)connection refused|ECONNREFUSED`,
		`(?i)\b(dns|lookup)[._-]?(ms|time)?\s*[=:]\s*(\d+)`,
		`(?i)kill(ed)?`,
		`(?i)k8s`,
		`\d+ ms`,
		`x?y*`,
		`(?i)time is (un|not )synchroni[sz]ed`,
		`^(\S+) (\S+) \[([^\]]+)\] "(\w+) ([^ "]+)`,
	}
	lines := []string{
		`2026-11-25T03:12:04Z ERROR accept4: too many open files; retrying in 1s`,
		`time="2026-11-25T03:12:04Z" level=error msg="dial tcp 10.0.0.7:5432: connect: connection refused"`,
		`{"level":"warn","msg":"upstream call","dns_ms":812,"connect_ms":3}`,
		`Nov 25 03:12:04 wk-12 kernel: Out of memory: KILLED process 4121 (java)`,
		"Nov 25 03:12:04 wk-12 kernel: Out of memory: \u212aILLED process 4121 (java)",
		"\u212a8s node wk-12 NotReady",
		`10.1.2.3 - - [25/Nov/2026:03:12:04 +0000] "GET /api/v1/orders HTTP/1.1" 200 512 "-" 31 ms`,
		`Nov 25 03:12:04 ip-10-0-1-2 chronyd[811]: System clock TIME IS NOT SYNCHRONIZED`,
		`lookup=1.5 ok`,
		``,
		`ECONNREFUSED ünïcode`,
	}
	for _, p := range res {
		re := regexp.MustCompile(p)
		for _, l := range lines {
			if got, want := matchLine(re, l), re.MatchString(l); got != want {
				t.Errorf("matchLine(%s, %q) = %v, want %v", p, l, got, want)
			}
			if got, want := findSubmatch(re, l), re.FindStringSubmatch(l); !slices.Equal(got, want) {
				t.Errorf("findSubmatch(%s, %q) = %q, want %q", p, l, got, want)
			}
			got, want := findAllSubmatch(re, l, -1), re.FindAllStringSubmatch(l, -1)
			if len(got) != len(want) {
				t.Errorf("findAllSubmatch(%s, %q) = %q, want %q", p, l, got, want)
			}
			if got, want := findString(re, l), re.FindString(l); got != want {
				t.Errorf("findString(%s, %q) = %q, want %q", p, l, got, want)
			}
			if got, want := findAllString(re, l, -1), re.FindAllString(l, -1); !slices.Equal(got, want) {
				t.Errorf("findAllString(%s, %q) = %q, want %q", p, l, got, want)
			}
		}
	}
}

// TestMatchersBounded checks that expressions compiled per call do not
// grow the kept matchers without end.
func TestMatchersBounded(t *testing.T) {
	for i := 0; i < maxMatchers+10; i++ {
		matchLine(regexp.MustCompile(`abc`+regexp.QuoteMeta(string(rune('a'+i%26)))), "xyz")
	}
	matchersMu.RLock()
	n := len(matchers)
	matchersMu.RUnlock()
	if n > maxMatchers {
		t.Fatalf("%d matchers kept, at most %d", n, maxMatchers)
	}
}
