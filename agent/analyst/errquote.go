package analyst

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A long error reads from the general to the specific: its head names the
// operation ("failed to provision volume ...: could not create volume in
// EC2"), its last clause the reason ("api error InvalidKMSKey.InvalidState:
// The KMS key provided is in an incorrect state"). Cut to fit, it keeps
// both ends and drops the middle, so the reason is never lost.

// clipMiddle shortens s to about n bytes by cutting its middle: the head
// and the last clause (from the last ": " or ", " within the tail's
// budget) are kept, joined by " … ".
func clipMiddle(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n || n < 20 {
		return truncate(s, n)
	}
	tailMax := n * 11 / 20
	start := len(s) - tailMax
	for !utf8.RuneStart(s[start]) {
		start++
	}
	tail := s[start:]
	// Start the tail at a clause: after the first separator in it that
	// still leaves most of the budget, else at a word.
	if i := strings.Index(tail, ": "); i >= 0 && i < tailMax/2 {
		tail = tail[i+2:]
	} else if i := strings.Index(tail, ", "); i >= 0 && i < tailMax/2 {
		tail = tail[i+2:]
	} else if i := strings.IndexByte(tail, ' '); i >= 0 && i < tailMax/3 {
		tail = tail[i+1:]
	}
	headMax := n - len(tail) - 3
	end := headMax
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	head := strings.TrimSpace(s[:end])
	return head + " … " + tail
}

// quoteError quotes a long error cut in its middle (clipMiddle).
func quoteError(s string, n int) string {
	return fmt.Sprintf("%q", clipMiddle(s, n))
}
