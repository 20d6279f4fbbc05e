package analyst

// Words of error text are not hosts. "session lookup timed out" and "taxrates
// lookup failed for DE/10115" are an application's lookups, not DNS lookups
// (Go's resolver says "lookup HOST on 10.0.0.10:53: no such host"), and "to
// failed" or "from closed" name no peer; without this a failing call would be
// blamed on a dependency called "timed" or "failed", and the real peer the
// line names further on (upstream=session-service, a host:port, a URL) would
// be missed.
var notHostWords = []string{
	"failed", "failure", "fails", "fail", "timed", "timeout", "timeouts", "refused", "reset", "closed", "aborted",
	"error", "errors", "errored", "denied", "rejected", "unavailable", "expired", "succeeded", "success",
	"ok", "done", "started", "completed", "returned", "took", "slow", "pending", "retry", "retrying", "missing",
	"not", "no", "is", "was", "of", "on", "in", "at", "by", "with", "and", "or", "result", "results",
}

func init() {
	for _, w := range notHostWords {
		if _, set := stopHosts[w]; !set {
			stopHosts[w] = true
		}
	}
}
