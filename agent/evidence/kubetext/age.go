package kubetext

import (
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// parseAge reads a relative age as kubectl prints it (HumanDuration):
// "45s", "5m", "3m12s", "3h12m", "2d3h", "400d", "2y30d". ok is false for
// anything else, "<unknown>" and "<invalid>" included.
func parseAge(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	var total time.Duration
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 || i == len(s) || i > 9 {
			return 0, false
		}
		n, _ := strconv.Atoi(s[:i])
		var unit time.Duration
		switch s[i] {
		case 's':
			unit = time.Second
		case 'm':
			unit = time.Minute
		case 'h':
			unit = time.Hour
		case 'd':
			unit = 24 * time.Hour
		case 'y':
			unit = 365 * 24 * time.Hour
		default:
			return 0, false
		}
		total += time.Duration(n) * unit
		s = s[i+1:]
	}
	return total, true
}

// eventAge reads an events column: "2m", "2m (x96 over 24m)", "<unknown>".
// It returns the last age, the first age (the same when no series) and the
// count (1 when no series).
func eventAge(s string) (last, first time.Duration, count int32, ok bool) {
	s = strings.TrimSpace(s)
	head, rest, series := strings.Cut(s, " (x")
	last, ok = parseAge(head)
	if !ok {
		return 0, 0, 0, false
	}
	first, count = last, 1
	if series {
		rest = strings.TrimSuffix(rest, ")")
		n, over, _ := strings.Cut(rest, " over ")
		if c, err := strconv.Atoi(n); err == nil && c > 0 {
			count = int32(min(c, 1<<30))
		}
		if f, ok := parseAge(over); ok {
			first = f
		}
	}
	return last, first, count, true
}

// before returns ref - d as a metav1.Time, or the zero time when ref is zero.
func (p *parser) before(d time.Duration) metav1.Time {
	if p.ref.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(p.ref.Add(-d))
}

// describeTime layouts: kubectl describe prints RFC 1123 with a numeric zone.
var describeTimeLayouts = []string{time.RFC1123Z, time.RFC1123, time.RFC3339, "2006-01-02 15:04:05 -0700 MST"}

func parseDescribeTime(s string) (metav1.Time, bool) {
	s = strings.TrimSpace(s)
	for _, l := range describeTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return metav1.NewTime(t.UTC()), true
		}
	}
	return metav1.Time{}, false
}
