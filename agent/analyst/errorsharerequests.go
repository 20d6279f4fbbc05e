package analyst

import (
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// minRequestShare is the least share of a service's requests failing (a
// fraction) for its errors per second to count as an error rate that
// rose.
const minRequestShare = 0.005

// errorShareNegligible reports whether the errors per second of subject
// at t (every series of errs, a counter's rate: pods, handlers) are a
// negligible share of the requests it served then, read from the request
// rates behind a latency mean of the same subject (a histogram's _count):
// below minRequestShare, a 5xx every few minutes on a service answering
// tens of requests a second is a service working, not an error rate that
// rose. Without request rates nothing is negligible.
func errorShareNegligible(errs []evidence.Series, sets []MetricSet, subject string, t time.Time) bool {
	var reqs []evidence.Series
	for _, ms := range sets {
		for _, s := range ms.Requests {
			if SubjectOfLabels(s.Labels) == subject {
				reqs = append(reqs, s)
			}
		}
	}
	if len(reqs) == 0 {
		return false
	}
	req := requestTotals(reqs).at(subject, t)
	e := requestTotals(errs).at(subject, t)
	return req > 0 && e/req < minRequestShare
}
