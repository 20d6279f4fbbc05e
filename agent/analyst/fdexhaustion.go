package analyst

import (
	"fmt"
	"regexp"
)

// File-descriptor exhaustion: a process at its open-files limit (nofile
// rlimit), so accepts, dials and file opens fail with "too many open
// files" (EMFILE) or the system table is full (ENFILE).
var fdExhaustion = &mechanism{
	kind:       KindFDExhaustion,
	class:      classCause,
	label:      "file descriptor exhaustion (too many open files)",
	lines:      regexp.MustCompile(`(?i)too many open files|\bEMFILE\b|\bENFILE\b|file descriptor limit|out of file descriptors|file table overflow`),
	lineWeight: 0.9,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s exhausts its file descriptors (too many open files, EMFILE): a file-descriptor leak keeps sockets/files open until the process hits its open-files limit (nofile rlimit), so accepts and outbound connections fail", h.Subject)
		if l := h.fact("line"); l != "" {
			d += " — " + quote(ReadableLine(l), 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Restart %s to release the leaked file descriptors, and raise its open-files limit (nofile) as a stopgap", h.Subject)
		r.med("Find the descriptor leak (unclosed response bodies, sockets, files) from process_open_fds growth and lsof")
		r.low("Alert on process_open_fds / process_max_fds above 80%%")
	},
}
