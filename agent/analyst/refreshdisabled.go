package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A search index that serves reads with refresh turned off. A bulk load
// or reindex sets index.refresh_interval to -1 (and often replicas to 0)
// for speed and is meant to restore them when it ends; when the restore
// fails or is forgotten and the index goes live (an alias swapped to it),
// every document indexed since is stored (a GET by id finds it, the
// indexer reports no errors) but never refreshed into a searchable
// segment: searches do not see new or changed documents until something
// refreshes. Elasticsearch and OpenSearch report it in _settings
// ("refresh_interval" : "-1", flat "index.refresh_interval": "-1"), the
// loading job in its own log.

// KindRefreshDisabled is a live search index with refresh disabled.
const KindRefreshDisabled Kind = "refresh_disabled"

var (
	// refreshOffRE is an index's refresh_interval at -1: _settings JSON
	// (pretty or flat), a job's log of the settings it set.
	refreshOffRE = regexp.MustCompile(`(?i)"?(?:index\.)?refresh_interval"?\s*[:=]\s*"?-1\b`)
	// settingsIndexRE is the index a _settings request or its pretty
	// output names (".../products_v12/_settings", `"products_v12" : {`).
	settingsIndexRE = regexp.MustCompile(`(?:^|/)([\w.-]+)/_settings\b`)
	jsonIndexKeyRE  = regexp.MustCompile(`^\s{0,2}"([\w.-]+)"\s*:\s*\{\s*$`)
	// settingsRestoreFailRE is a job failing to restore an index's
	// settings after a load.
	settingsRestoreFailRE = regexp.MustCompile(`(?i)(?:restor|reset|revert|re-enabl|updat)\w*\s+(?:index\s+)?settings\b.*\b(?:failed|error|timed? ?out|timeout)`)
	// aliasRowRE is a _cat/aliases row: alias, index.
	aliasRowRE = regexp.MustCompile(`^\s*([\w.-]+)\s+([\w.-]+)\s+(?:-|\S+)\s+`)
)

var refreshDisabled = &mechanism{
	kind:   KindRefreshDisabled,
	class:  classCause,
	label:  "search index serving with refresh disabled (refresh_interval -1)",
	detect: detectRefreshDisabled,
	// The load or reindex that turned refresh off, or its index, is the
	// trigger; another deploy of the search service is not.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		idx := strings.ToLower(h.fact("index"))
		return (idx != "" && strings.Contains(t, idx)) || strings.Contains(t, "reindex") || strings.Contains(t, "refresh_interval") || strings.Contains(t, "bulk load")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the search index %s of %s runs with index.refresh_interval -1 (refresh disabled)", orWord(h.fact("index"), "(unnamed)"), h.Subject)
		d += h.wrapped(" and is live (", "alias", ")")
		d += ": documents indexed since are stored but never refreshed into search, so searches do not find new or changed documents while writes and gets by id succeed"
		d += h.clause("; ", "loader")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		idx := orWord(h.fact("index"), "the index")
		r.high("Restore refresh on %s: PUT %s/_settings {\"index\":{\"refresh_interval\":null}} (the 1s default), then POST %s/_refresh; restore number_of_replicas too if the load set it to 0", idx, idx, idx)
		r.med("Make the reindex job fail (non-zero exit) when it cannot restore the index settings, and restore them before swapping the alias")
		r.low("Alert on a live index whose refresh_interval is -1 or whose newest document is not searchable")
	},
}

// detectRefreshDisabled reads an index's refresh_interval -1 from
// _settings output or a loader's log, with the aliases pointing at it and
// a failed settings restore.
func detectRefreshDisabled(ev *Gathered, _ []Finding) []Finding {
	index, settingsLine, settingsCmd := "", "", ""
	for _, c := range ev.Commands {
		key := ""
		if m := findSubmatch(settingsIndexRE, c.Command); m != nil && !strings.HasPrefix(m[1], "_") {
			key = m[1]
		}
		for _, l := range c.Lines {
			if m := findSubmatch(settingsIndexRE, l); m != nil && !strings.HasPrefix(m[1], "_") {
				key = m[1]
			}
			if m := findSubmatch(jsonIndexKeyRE, l); m != nil && m[1] != "settings" && m[1] != "index" {
				key = m[1]
			}
			if matchLine(refreshOffRE, l) && settingsLine == "" {
				index, settingsLine = key, strings.TrimSpace(l)
				settingsCmd = truncate(c.Command, 160)
				for _, p := range c.Lines {
					if m := findSubmatch(settingsIndexRE, p); m != nil && !strings.HasPrefix(m[1], "_") && index == "" {
						index = m[1]
					}
				}
			}
		}
	}
	// A loader's log: the settings it set, its failed restore.
	loader, loaderLine, restore := "", "", ""
	var at time.Time
	for _, set := range ev.Logs {
		if set.Host {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if matchLine(settingsRestoreFailRE, l) && (index == "" || strings.Contains(l, index)) && restore == "" {
					loader, restore = set.Subject, l
					at = t.FirstSeen
					if lt, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
						at = lt
					}
				}
				if matchLine(refreshOffRE, l) && (index == "" || strings.Contains(l, index)) && loaderLine == "" {
					loaderLine = l
					if loader == "" {
						loader = set.Subject
					}
				}
			}
		}
	}
	// The index's setting now, or a load that set it and failed to put it
	// back.
	if settingsLine == "" && (restore == "" || loaderLine == "") {
		return nil
	}
	subject := orWord(ev.Scope.Service, orWord(index, loader))
	f := Finding{Kind: KindRefreshDisabled, Subject: subject, Object: "index " + orWord(index, "?"), Severity: SevCritical, Weight: 0.6, Source: SrcLogs}
	f.Time = at
	if f.Time.IsZero() {
		f.Time = ev.Window.Start
	}
	f.setFact("index", index)
	if settingsLine != "" {
		f.Source = "search-settings"
		f.Weight = 0.8
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", settingsCmd, quote(settingsLine, 120)))
	}
	if index != "" {
		for _, c := range ev.Commands {
			// The rows of a _cat/aliases answer: the command's own, or
			// those after it in a shell's transcript.
			in := strings.Contains(c.Command, "alias")
			for _, l := range c.Lines {
				if strings.Contains(l, "$ ") || strings.Contains(l, "# ") {
					in = strings.Contains(l, "alias")
					continue
				}
				if m := findSubmatch(aliasRowRE, l); in && m != nil && m[2] == index && m[1] != "alias" {
					f.setFact("alias", fmt.Sprintf("alias %s points at it", m[1]))
					f.Weight = 0.9
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: alias %s -> %s", truncate(c.Command, 120), m[1], index))
				}
			}
		}
	}
	if loader != "" {
		if loader != subject {
			f.Related = append(f.Related, loader)
		}
		switch {
		case restore != "":
			f.setFact("loader", fmt.Sprintf("%s turned refresh off for its load and failed to restore the settings: %s", loader, quote(ReadableLine(restore), 200)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs its settings restore failing at %s: %s", loader, hm(at), quote(ReadableLine(restore), 240)))
		case loaderLine != "":
			f.setFact("loader", fmt.Sprintf("%s set it for its load: %s", loader, quote(ReadableLine(loaderLine), 200)))
		}
	}
	f.setFact("why", fmt.Sprintf("%s has refresh disabled, so what is indexed is not searchable", orWord(index, "the index")))
	f.Summary = fmt.Sprintf("search index %s has refresh_interval -1: new documents are not searchable", orWord(index, "?"))
	return []Finding{f}
}
