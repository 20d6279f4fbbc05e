package analyst

import (
	"encoding/json"
	"iter"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// A managed service's own record of what it did — an RDS or Aurora event
// ("Started cross AZ failover to DB instance: db-2"), a secret's rotation,
// a CloudTrail call — reaches the analyst as an operator's command output
// (`aws rds describe-events` in text, table or JSON form) or as lines of a
// log group the events are delivered to. eventLines reads both the same
// way, each line with the time it carries.

// timedLine is a line of an event, with its time (zero when it carries
// none) and where it was read.
type timedLine struct {
	Time time.Time
	Text string
	From string
}

// eventLines lists the lines matching re of the operator's command
// outputs and of the gathered log templates, with their times, earliest
// first (lines without a time last). JSON command output is read object
// by object: a string field matching re is the line, and the object's
// Date, EventTime, Time or Timestamp field its time.
func eventLines(ev *Gathered, re *regexp.Regexp) []timedLine {
	var out []timedLine
	ref := ev.Window.End
	for _, c := range ev.Commands {
		text := strings.Join(c.Lines, "\n")
		if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			var v any
			if json.Unmarshal([]byte(t), &v) == nil {
				jsonEvents(v, re, c.Command, &out)
				continue
			}
		}
		for _, l := range c.Lines {
			if !matchLine(re, l) {
				continue
			}
			// A table's row: "|  2026-11-25T03:12:04Z |  Started … |".
			cells := strings.TrimSpace(strings.Trim(strings.TrimSpace(l), "|"))
			cells = strings.ReplaceAll(cells, "|", " ")
			// The AWS CLI's text output leads a record with its type
			// ("EVENTS\t2026-11-25T03:00:31Z\tApplying off-line patches…").
			if f := strings.Fields(cells); len(f) > 2 && f[0] == strings.ToUpper(f[0]) && strings.Trim(f[0], "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
				if _, ok := parseISO8601(f[1]); ok {
					cells = strings.TrimSpace(strings.TrimPrefix(cells, f[0]))
				}
			}
			tm, _ := evidence.LineTime([]byte(cells), ref)
			text := cells
			// The time leads a text or table row: the event is the rest.
			if f := strings.Fields(cells); len(f) > 1 {
				if _, ok := parseISO8601(f[0]); ok {
					text = strings.TrimSpace(strings.TrimPrefix(cells, f[0]))
				}
			}
			out = append(out, timedLine{Time: tm, Text: text, From: c.Command})
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if !matchLine(re, l) {
					continue
				}
				out = append(out, timedLine{Time: t.FirstSeen, Text: l, From: set.Origin + " " + set.Source})
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Time, out[j].Time
		if a.IsZero() != b.IsZero() {
			return !a.IsZero()
		}
		return a.Before(b)
	})
	return out
}

// templateLine is the template's example or, failing that, its last
// line, whichever first matches re; "" when neither does.
func templateLine(t analysis.LogTemplate, re *regexp.Regexp) string {
	for _, l := range t.Lines() {
		if matchLine(re, l) {
			return l
		}
	}
	return ""
}

// templateMatch is a log template with its line that matched.
type templateMatch struct {
	set  *LogSet
	t    analysis.LogTemplate
	line string
}

// incidentTemplates yields the gathered log templates seen during the
// incident, each with its log set, in the order they were gathered.
func incidentTemplates(ev *Gathered) iter.Seq2[*LogSet, analysis.LogTemplate] {
	return func(yield func(*LogSet, analysis.LogTemplate) bool) {
		for i := range ev.Logs {
			set := &ev.Logs[i]
			for _, t := range set.Templates {
				if t.Incident == 0 {
					continue
				}
				if !yield(set, t) {
					return
				}
			}
		}
	}
}

// allTemplates yields every gathered log template, seen during the
// incident or before it, each with its log set.
func allTemplates(ev *Gathered) iter.Seq2[*LogSet, analysis.LogTemplate] {
	return func(yield func(*LogSet, analysis.LogTemplate) bool) {
		for i := range ev.Logs {
			set := &ev.Logs[i]
			for _, t := range set.Templates {
				if !yield(set, t) {
					return
				}
			}
		}
	}
}

// incidentMatches yields the gathered log templates seen during the
// incident whose example or last line matches re, with that line.
func incidentMatches(ev *Gathered, re *regexp.Regexp) iter.Seq[templateMatch] {
	return func(yield func(templateMatch) bool) {
		for set, t := range incidentTemplates(ev) {
			if line := templateLine(t, re); line != "" && !yield(templateMatch{set, t, line}) {
				return
			}
		}
	}
}

// allMatches yields every gathered log template, seen during the incident
// or before it, whose example or last line matches re, with that line.
func allMatches(ev *Gathered, re *regexp.Regexp) iter.Seq[templateMatch] {
	return func(yield func(templateMatch) bool) {
		for set, t := range allTemplates(ev) {
			if line := templateLine(t, re); line != "" && !yield(templateMatch{set, t, line}) {
				return
			}
		}
	}
}

// eventTimeKeys are the fields of a JSON event that hold its time.
var eventTimeKeys = []string{"Date", "EventTime", "eventTime", "Time", "time", "Timestamp", "timestamp", "CreationDate"}

// jsonEvents walks decoded JSON for objects whose string fields match re.
func jsonEvents(v any, re *regexp.Regexp, from string, out *[]timedLine) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			jsonEvents(e, re, from, out)
		}
	case map[string]any:
		for k, f := range x {
			s, ok := f.(string)
			if !ok {
				continue
			}
			// A field whose name is the event and whose value its time
			// ("LastRotatedDate": "2026-11-24T04:00:17Z").
			if matchLine(re, k) {
				if t, ok := parseISO8601(s); ok {
					*out = append(*out, timedLine{Time: t, Text: k + ": " + s, From: from})
				}
				continue
			}
			if !matchLine(re, s) {
				continue
			}
			var tm time.Time
			for _, tk := range eventTimeKeys {
				if ts, ok := x[tk].(string); ok {
					if t, ok := parseISO8601(ts); ok {
						tm = t
						break
					}
				}
			}
			*out = append(*out, timedLine{Time: tm, Text: s, From: from})
		}
		for _, f := range x {
			switch f.(type) {
			case []any, map[string]any:
				jsonEvents(f, re, from, out)
			}
		}
	}
}

// parseISO8601 reads an RFC 3339 time as AWS prints it (with or without a
// fraction, "Z" or an offset).
func parseISO8601(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999-07:00", "2006-01-02T15:04:05Z0700", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
