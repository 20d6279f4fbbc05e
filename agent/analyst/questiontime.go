package analyst

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// When the question says when the trouble began ("since about 14:10",
// "p99 jumped around 15:20", "since this morning", "since last night"), the
// incident window starts a little before that moment even when it lies more
// than an hour back: an onset the default hour would leave in the baseline
// (or before it) is the incident itself, not its background. The stated
// moment only ever widens the window; a window given in the context wins.

// onsetMargin is how long before a stated clock time the window starts: people
// round ("about 14:10"), and a cause precedes the symptom it is noticed by.
const onsetMargin = 15 * time.Minute

// maxStatedLookback bounds how far back a stated moment may move the window.
const maxStatedLookback = 48 * time.Hour

var (
	clockRe = regexp.MustCompile(`(?i)(?:^|[^\d:.])([01]?\d|2[0-3])[:h]([0-5]\d)(?::[0-5]\d)?\s*(am|pm)?(?:[^\d:]|$)`)
	// A bare hour with its half of the day: "since about 1pm", "at 11 am".
	hourRe     = regexp.MustCompile(`(?i)(?:^|[^\d:.])(1[0-2]|0?[1-9])\s*(am|pm|a\.m\.|p\.m\.)(?:[^a-z]|$)`)
	agoRe      = regexp.MustCompile(`(?i)\b(\d+|an?|one|two|three|few)\s*(minutes?|mins?|hours?|hrs?|h)\s+ago\b`)
	lastSpanRe = regexp.MustCompile(`(?i)\b(?:last|past)\s+(\d+|few|couple of)\s*(minutes?|mins?|hours?|hrs?|days?)\b`)
)

// statedOnset reads the earliest moment the message gives for the trouble's
// start, relative to now. ok is false when the message states none.
func statedOnset(msg string, now time.Time) (time.Time, bool) {
	var best time.Time
	take := func(t time.Time) {
		if t.After(now) || now.Sub(t) > maxStatedLookback {
			return
		}
		if best.IsZero() || t.Before(best) {
			best = t
		}
	}
	low := strings.ToLower(msg)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	for _, m := range findAllSubmatch(clockRe, msg, -1) {
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		switch strings.ToLower(m[3]) {
		case "pm":
			if h < 12 {
				h += 12
			}
		case "am":
			if h == 12 {
				h = 0
			}
		}
		t := day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute)
		if t.After(now) { // a clock time later than now is yesterday's
			t = t.Add(-24 * time.Hour)
		}
		take(t.Add(-onsetMargin))
	}
	for _, m := range findAllSubmatch(hourRe, msg, -1) {
		h, _ := strconv.Atoi(m[1])
		if h == 12 {
			h = 0
		}
		if strings.HasPrefix(strings.ToLower(m[2]), "p") {
			h += 12
		}
		t := day.Add(time.Duration(h) * time.Hour)
		if t.After(now) {
			t = t.Add(-24 * time.Hour)
		}
		take(t.Add(-onsetMargin))
	}
	for _, m := range findAllSubmatch(agoRe, low, -1) {
		if d, ok := spanOf(m[1], m[2]); ok {
			take(now.Add(-d - onsetMargin))
		}
	}
	for _, m := range findAllSubmatch(lastSpanRe, low, -1) {
		if d, ok := spanOf(m[1], m[2]); ok {
			take(now.Add(-d))
		}
	}
	// The night before, read on the clock of the evidence (UTC). A moment
	// of today ("felt slow this morning") does not move the window: the
	// default hour already sees the current state, and a vague start would
	// stretch the baseline over hours without evidence. A morning the
	// trouble has lasted through ("has been timing out … this morning")
	// does: its onset lies hours back, before any default baseline.
	at := func(ref time.Time, h int) time.Time { return ref.Add(time.Duration(h) * time.Hour) }
	yesterday := day.Add(-24 * time.Hour)
	switch {
	case strings.Contains(low, "last night") || strings.Contains(low, "overnight") || strings.Contains(low, "during the night") ||
		strings.Contains(low, "every night") || strings.Contains(low, "each night"):
		// A failure that recurs every night is asked about the morning
		// after: its last occurrence is last night's.
		take(at(yesterday, 18))
	case strings.Contains(low, "since yesterday"):
		take(yesterday)
	case matchLine(sinceMorningRE, low) && now.Sub(at(day, 6)) > 2*time.Hour:
		// "since this morning", "has been timing out … this morning": the
		// trouble has lasted since the morning began, not an hour.
		take(at(day, 6))
	case matchLine(sinceAfternoonRE, low) && now.Sub(at(day, 12)) > 2*time.Hour:
		take(at(day, 12))
	case matchLine(countedTodayRE, low) && now.Sub(at(day, 6)) > 2*time.Hour:
		// "~60 tickets today", "200 complaints so far today": reports
		// that piled up over the day say the trouble has lasted since
		// the day began, not an hour.
		take(at(day, 6))
	}
	// A change from one state to another in a part of today ("p99 went
	// from 40ms to 2s+ this afternoon", "error rate jumped this morning"):
	// the state before it is what the baseline must hold, and the change
	// lies somewhere in that part of the day, not in the last hour.
	if m := findSubmatch(changedTodayRE, low); m != nil {
		h := 6
		if m[1] == "afternoon" {
			h = 12
		}
		if now.Sub(at(day, h)) > 2*time.Hour {
			take(at(day, h))
		}
	}
	return best, !best.IsZero()
}

var (
	// countedTodayRE is a count of reports gathered over today.
	countedTodayRE = regexp.MustCompile(`[~≈]?\b\d+\+?\s+(?:(?:support|customer|user)\s+)?(?:tickets?|complaints?|reports?|cases?|calls?)\s+(?:so far\s+)?today\b`)
	// sinceAfternoonRE is an afternoon the trouble has lasted through, as
	// sinceMorningRE is a morning.
	sinceAfternoonRE = regexp.MustCompile(`\bsince (?:early )?this afternoon\b|\b(?:has|have|'ve|'s) been\b[^.?!]{0,80}\bthis afternoon\b`)
	// changedTodayRE is a change of state said to happen in a part of
	// today: a verb of change, or "from X to Y", before "this morning" or
	// "this afternoon" in the same sentence.
	changedTodayRE = regexp.MustCompile(`\b(?:went|jumped|rose|climbed|spiked|shot up|increased|grew|doubled|tripled|dropped|fell|degraded|(?:went|got) (?:up|down)|from \S+ to)\b[^.?!]{0,60}?\bthis (morning|afternoon)\b`)
)

// sinceMorningRE is a morning the trouble has lasted through: "since this
// morning", or a present perfect ("has been timing out for customers this
// morning") in the same sentence. A past tense ("felt slow this morning")
// is a moment, which the default hour already covers.
var sinceMorningRE = regexp.MustCompile(`\bsince (?:early )?this morning\b|\b(?:has|have|'ve|'s) been\b[^.?!]{0,80}\bthis morning\b`)

// spanOf reads "3 hours", "a few minutes", "an hour" as a duration.
func spanOf(n, unit string) (time.Duration, bool) {
	k := 0
	switch n {
	case "a", "an", "one":
		k = 1
	case "two", "couple of":
		k = 2
	case "three", "few":
		k = 3
	default:
		v, err := strconv.Atoi(n)
		if err != nil || v <= 0 {
			return 0, false
		}
		k = v
	}
	var u time.Duration
	switch {
	case strings.HasPrefix(unit, "m"):
		u = time.Minute
	case strings.HasPrefix(unit, "h"):
		u = time.Hour
	case strings.HasPrefix(unit, "d"):
		u = 24 * time.Hour
	default:
		return 0, false
	}
	return time.Duration(k) * u, true
}

// widenToStatedOnset moves the window's start back to the moment the message
// says the trouble began, when that is earlier than the start; the baseline
// keeps the window's length (at least 30 minutes) before it.
func widenToStatedOnset(w Window, msg string, now time.Time) Window {
	t, ok := statedOnset(msg, now)
	if !ok || !t.Before(w.Start) {
		return w
	}
	t = t.Truncate(time.Minute)
	length := max(w.End.Sub(t), 30*time.Minute)
	return Window{BaselineStart: t.Add(-length), Start: t, End: w.End}
}
