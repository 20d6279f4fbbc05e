package analyst

import (
	"fmt"
	"regexp"
)

// Worker-pool exhaustion: every worker of an HTTP server busy (gunicorn
// WORKER TIMEOUT, php-fpm max_children, a full thread pool), so requests
// queue and time out while the CPU may be idle.
var workerPool = &mechanism{
	kind:       KindWorkerPool,
	class:      classCause,
	label:      "worker pool exhausted (all workers busy)",
	lines:      regexp.MustCompile(`(?i)WORKER TIMEOUT|all \d+ (sync |async )?workers (are )?busy|no (idle|free|available) workers?|max_children|thread ?pool (is )?(exhausted|full|saturated)|worker pool (is )?(exhausted|full|saturated)|workers? (are )?all busy|request queue (is )?full|listen queue (overflow|full)|RejectedExecutionException|puma.{0,30}(backlog|all threads busy)|no free worker`),
	lineWeight: 0.85,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the worker pool of %s is exhausted: all workers are busy (slow requests hold them), so new requests queue in the backlog and time out — a capacity/saturation problem of the HTTP server, not of CPU", h.Subject)
		d += h.quoteClause(" — ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Add workers/replicas to %s and put a timeout on the slow endpoint so it cannot hold every worker", h.Subject)
		r.med("Move slow requests off the synchronous workers (async workers, a separate pool or a background job) and rate-limit their callers")
		r.low("Alert on busy workers / request backlog, not only on CPU")
	},
}
