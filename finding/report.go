package finding

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// ReportMeta is optional context printed in a report's header.
type ReportMeta struct {
	Title     string   // e.g. the request message or scenario title
	Agent     string   // agent that ran
	ToolsUsed []string // tools_used of the investigation
	Duration  string   // e.g. "1.2s"
}

// reportWidth is the column at which prose is wrapped.
const reportWidth = 96

// Text writes r as a plain-text report for terminals: summary, root cause
// with confidence and evidence, timeline, affected systems,
// recommendations, ruled-out hypotheses, data gaps, runbooks and notes.
func (r *Result) Text(w io.Writer) error { return Render(w, r, ReportMeta{}) }

// Render writes r as a plain-text report with a header from meta.
func Render(w io.Writer, r *Result, meta ReportMeta) error {
	var b strings.Builder
	section := func(title string) {
		b.WriteString("\n")
		b.WriteString(title)
		b.WriteString("\n")
		b.WriteString(strings.Repeat("-", utf8.RuneCountInString(title)))
		b.WriteString("\n")
	}
	if meta.Title != "" {
		b.WriteString(wrap("Investigation: "+meta.Title, reportWidth, ""))
		b.WriteString("\n")
	}
	var head []string
	if meta.Agent != "" {
		head = append(head, "agent "+meta.Agent)
	}
	if r.Verdict != "" {
		head = append(head, "verdict "+r.Verdict)
	}
	head = append(head, fmt.Sprintf("confidence %.0f%%", r.RootCause.Confidence))
	if meta.Duration != "" {
		head = append(head, "took "+meta.Duration)
	}
	b.WriteString(strings.Join(head, " · "))
	b.WriteString("\n")

	section("Summary")
	b.WriteString(wrap(r.Summary, reportWidth, ""))
	b.WriteString("\n")

	section(fmt.Sprintf("Root cause (confidence %.0f%%)", r.RootCause.Confidence))
	b.WriteString(wrap(r.RootCause.Description, reportWidth, ""))
	b.WriteString("\n")
	if len(r.RootCause.Evidence) > 0 {
		b.WriteString("\nEvidence:\n")
		for _, e := range r.RootCause.Evidence {
			b.WriteString(wrap("  - "+e, reportWidth, "    "))
			b.WriteString("\n")
		}
	}
	if len(r.Timeline) > 0 {
		section("Timeline")
		for _, e := range r.Timeline {
			prefix := "  " + e.Timestamp + "  "
			pad := strings.Repeat(" ", len(prefix))
			lines := strings.Split(wrap(e.Event, reportWidth-len(prefix), ""), "\n")
			for i, l := range lines {
				if i == 0 {
					b.WriteString(prefix + l + "\n")
				} else {
					b.WriteString(pad + l + "\n")
				}
			}
		}
	}
	if len(r.AffectedSystems) > 0 {
		section("Affected systems")
		b.WriteString(wrap("  "+strings.Join(r.AffectedSystems, ", "), reportWidth, "  "))
		b.WriteString("\n")
	}
	if len(r.Recommendations) > 0 {
		section("Recommendations")
		for _, rec := range r.Recommendations {
			tag := fmt.Sprintf("  [%s] ", rec.Priority)
			b.WriteString(wrap(tag+rec.Action, reportWidth, strings.Repeat(" ", len(tag))))
			b.WriteString("\n")
		}
	}
	if len(r.RuledOut) > 0 {
		section("Ruled out")
		for _, ro := range r.RuledOut {
			b.WriteString(wrap(fmt.Sprintf("  - %s: %s", ro.Hypothesis, ro.Reason), reportWidth, "    "))
			b.WriteString("\n")
		}
	}
	if len(r.DataGaps) > 0 {
		section("Data gaps")
		for _, g := range r.DataGaps {
			b.WriteString(wrap("  - "+g, reportWidth, "    "))
			b.WriteString("\n")
		}
	}
	if len(r.Runbooks) > 0 {
		section("Runbooks")
		for _, rb := range r.Runbooks {
			b.WriteString(wrap(fmt.Sprintf("  - %s (%s)", rb.Title, rb.Location), reportWidth, "    "))
			b.WriteString("\n")
		}
	}
	if len(meta.ToolsUsed) > 0 {
		section("Tools used")
		b.WriteString(wrap("  "+strings.Join(meta.ToolsUsed, ", "), reportWidth, "  "))
		b.WriteString("\n")
	}
	if len(r.Notes) > 0 {
		section("Notes")
		for _, n := range r.Notes {
			b.WriteString(wrap("  - "+n, reportWidth, "    "))
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrap breaks s into lines of at most width runes at spaces; continuation
// lines start with indent. Words longer than a line are kept whole.
func wrap(s string, width int, indent string) string {
	words := strings.Fields(s)
	if len(words) == 0 {
		return ""
	}
	// Keep the leading indentation of the first line.
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	var b strings.Builder
	line := lead + words[0]
	for _, w := range words[1:] {
		if utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width {
			b.WriteString(line)
			b.WriteString("\n")
			line = indent + w
			continue
		}
		line += " " + w
	}
	b.WriteString(line)
	return b.String()
}
