package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A MySQL server whose InnoDB buffer pool is far smaller than the data it
// serves. The pool caches pages in memory; when it holds a fraction of the
// working set, most reads miss it and go to disk: queries slow down while
// the server's CPU stays low (it waits on I/O), the hit rate drops below
// the 99.9 % a healthy server shows, and free pages run out (wait_free).
// The usual trigger is a configuration that did not reach the server: a
// chart upgrade that moved or renamed where my.cnf overrides go, a config
// file not mounted, and the server starts with the 128 MiB default. It is
// read from the server's own words:
//
//   - SHOW [GLOBAL] VARIABLES LIKE 'innodb_buffer_pool%' (or SELECT
//     @@innodb_buffer_pool_size): the size in bytes, 134217728 the default;
//   - SHOW GLOBAL STATUS: Innodb_buffer_pool_reads (misses) against
//     Innodb_buffer_pool_read_requests, Innodb_buffer_pool_wait_free;
//   - SHOW ENGINE INNODB STATUS: "Buffer pool hit rate 913 / 1000";
//   - information_schema.tables: the data and index size of the schema;
//   - the configuration meant for it (helm values, a ConfigMap's my.cnf, a
//     change) setting innodb_buffer_pool_size to more than it runs with.

// KindBufferPoolSmall is a database whose page cache is far smaller than
// its working set.
const KindBufferPoolSmall Kind = "buffer_pool_small"

var bufferPoolSmall = &mechanism{
	kind:   KindBufferPoolSmall,
	class:  classCause,
	label:  "InnoDB buffer pool far smaller than the data (reads go to disk)",
	detect: detectBufferPoolSmall,
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindSlowQuery || f.Kind == KindSlowOperation && databaseLike(f) || namedByTop(h, f, KindBufferPoolSmall)
	},
	// A change of the server's configuration, chart or version is the
	// trigger; a client's deploy is not.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(bufferPoolChangeRE, changeText(c))
	},
	describe:  describeBufferPoolSmall,
	recommend: recommendBufferPoolSmall,
}

var (
	bufferPoolChangeRE = regexp.MustCompile(`(?i)\bchart\b|\bhelm\b|values|my\.cnf|\bconfig|innodb|buffer.pool|mysql \d|mariadb \d|upgrade`)
	// hitRateRE is SHOW ENGINE INNODB STATUS' hit rate.
	hitRateRE = regexp.MustCompile(`Buffer pool hit rate (\d+) / 1000`)
	// innodbPoolSettingRE is innodb_buffer_pool_size set in a config (my.cnf,
	// helm values, a flag).
	innodbPoolSettingRE = regexp.MustCompile(`(?i)innodb[_-]buffer[_-]pool[_-]size\s*[=:]\s*["']?(\d+(?:\.\d+)?)\s*([KMGT]i?B?)?\b`)
	// schemaSizeColRE is a size column of an information_schema sum.
	schemaSizeColRE = regexp.MustCompile(`(?i)^(?:\w+_)?(?:size|total)_?(gb|gib|mb|mib)$`)
)

// byteSize reads "12G", "134217728", "1.5GB" as bytes.
func byteSize(num, unit string) int64 {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return -1
	}
	switch strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(unit), "B"), "I") {
	case "K":
		f *= 1 << 10
	case "M":
		f *= 1 << 20
	case "G":
		f *= 1 << 30
	case "T":
		f *= 1 << 40
	}
	return int64(f)
}

// sizeWords writes bytes the way people say them (128 MiB, 12 GiB).
func sizeWords(b int64) string {
	switch {
	case b >= 1<<30:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(b)/(1<<30)), ".0") + " GiB"
	case b >= 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(b)/(1<<20)), ".0") + " MiB"
	}
	return fmt.Sprintf("%d bytes", b)
}

// detectBufferPoolSmall reads the running pool size, how often reads
// miss it, the data it serves and the size it was meant to have.
func detectBufferPoolSmall(ev *Gathered, _ []Finding) []Finding {
	pool, dataSize, configured := int64(-1), int64(-1), int64(-1)
	var reads, requests, waitFree int64 = -1, -1, -1
	hitRate := -1
	instance, configuredLine := "", ""
	for _, c := range ev.Commands {
		inst, _ := sqlInstanceOf(c)
		for _, t := range sqlTables(c.Lines) {
			for r := range t.rows {
				name, val := strings.ToLower(t.cell(r, "variable_name")), t.cell(r, "value")
				if name == "" {
					if v := t.cell(r, "@@innodb_buffer_pool_size"); v != "" {
						name, val = "innodb_buffer_pool_size", v
					}
				}
				n := sqlInt(val)
				switch name {
				case "innodb_buffer_pool_size":
					if n > 0 {
						pool = n
						if instance == "" {
							instance = inst
						}
					}
				case "innodb_buffer_pool_reads":
					reads = n
				case "innodb_buffer_pool_read_requests":
					requests = n
				case "innodb_buffer_pool_wait_free":
					waitFree = n
				}
				for i, col := range t.cols {
					m := findSubmatch(schemaSizeColRE, col)
					if m == nil || i >= len(t.rows[r]) {
						continue
					}
					if b := byteSize(t.rows[r][i], m[1]); b > 0 {
						dataSize = max(dataSize, 0) + b
					}
				}
			}
		}
		for _, l := range c.Lines {
			if m := findSubmatch(hitRateRE, l); m != nil {
				hitRate, _ = strconv.Atoi(m[1])
			}
			if m := findSubmatch(innodbPoolSettingRE, l); m != nil {
				if b := byteSize(m[1], m[2]); b > configured {
					configured, configuredLine = b, strings.TrimSpace(l)
				}
			}
		}
	}
	if pool <= 0 {
		return nil
	}
	// Reads miss the pool.
	missing := hitRate >= 0 && hitRate < 990 || reads > 0 && requests > 0 && reads*100 >= requests
	if !missing {
		return nil
	}
	small := dataSize > 0 && pool*4 <= dataSize
	unapplied := configured > pool*2
	if !small && !unapplied {
		return nil
	}
	instance = orWord(instance, "the database")
	f := Finding{Kind: KindBufferPoolSmall, Subject: instance, Object: "innodb_buffer_pool_size", Severity: SevCritical, Weight: 0.85, Source: "database-status", Time: ev.Window.Start}
	size := fmt.Sprintf("innodb_buffer_pool_size %d (%s", pool, sizeWords(pool))
	if pool == 134217728 {
		size += ", the 128M default"
	}
	size += ")"
	f.setFact("size", size)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s runs with %s", instance, size))
	if dataSize > 0 {
		f.setFact("data", fmt.Sprintf("for %s of data and indexes", sizeWords(dataSize)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("its schema holds %s of data and indexes", sizeWords(dataSize)))
	}
	var miss []string
	if hitRate >= 0 {
		miss = append(miss, fmt.Sprintf("buffer pool hit rate %d / 1000", hitRate))
	}
	if reads > 0 && requests > 0 {
		miss = append(miss, fmt.Sprintf("%.1f %% of page reads miss it (Innodb_buffer_pool_reads %d of %d requests)", float64(reads)*100/float64(requests), reads, requests))
	}
	if waitFree > 0 {
		miss = append(miss, fmt.Sprintf("Innodb_buffer_pool_wait_free %d", waitFree))
	}
	f.setFact("miss", strings.Join(miss, ", "))
	f.Evidence = append(f.Evidence, strings.Join(miss, ", "))
	if unapplied {
		f.setFact("configured", fmt.Sprintf("its configuration asks for %s (%s) but the server does not run with it", sizeWords(configured), quote(configuredLine, 80)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("the configuration meant for it sets %s: %s", sizeWords(configured), quote(configuredLine, 120)))
		f.Weight = 0.9
	}
	// The server's own changes (its chart, its configuration) are the
	// trigger's candidates.
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		if c.Service != "" && strings.HasPrefix(instance, c.Service) && matchLine(bufferPoolChangeRE, c.Description) && !c.Timestamp.After(ev.Window.End) && ev.Window.End.Sub(c.Timestamp) <= 7*24*time.Hour {
			f.Related = appendNew(f.Related, c.Service)
			f.setFact("change", fmt.Sprintf("since the change of %s at %s: %s", c.Service, ts(c.Timestamp), quote(c.Description, 160)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("change of %s at %s: %s", c.Service, ts(c.Timestamp), quote(c.Description, 160)))
			if c.Timestamp.Before(ev.Window.Start) {
				f.setFact("cause_at", c.Timestamp.UTC().Format(time.RFC3339))
				f.setFact("cause_event", fmt.Sprintf("change of %s: %s", c.Service, truncate(c.Description, 160)))
			}
		}
	}
	if s := ev.Scope.Service; s != "" && s != instance {
		f.Related = appendNew(f.Related, s)
		f.setFact("caller", s)
	}
	f.setFact("why", "its buffer pool holds a fraction of the working set, so reads go to disk")
	f.Summary = fmt.Sprintf("%s: InnoDB buffer pool of %s, reads miss it and go to disk", instance, sizeWords(pool))
	return []Finding{f}
}

func describeBufferPoolSmall(h *Hypothesis, sc Scope) string {
	d := fmt.Sprintf("%s runs with an InnoDB buffer pool far smaller than its data: %s", h.Subject, orWord(h.fact("size"), "a small innodb_buffer_pool_size"))
	d += h.clause(" ", "data")
	d += h.clause("; ", "configured")
	d += h.clause(" ", "change")
	d += h.clause("; ", "miss")
	d += "; most page reads go to disk, so queries are slow while the server's CPU stays low (it waits on I/O)"
	if c := h.fact("caller"); c != "" {
		d += fmt.Sprintf(", and %s is slow", c)
	}
	return d
}

func recommendBufferPoolSmall(h *Hypothesis, sc Scope, r *recommender) {
	r.high("Set innodb_buffer_pool_size on %s to hold the working set (commonly 50-75 %% of the container's memory) where the server reads it: check the rendered my.cnf (the chart's ConfigMap) carries it, then SET GLOBAL innodb_buffer_pool_size (resizable online) or restart", h.Subject)
	r.med("After a chart upgrade, compare the running variables (SHOW GLOBAL VARIABLES) with the values meant for the server: a values key the new chart ignores is dropped silently")
	r.low("Alert on the buffer pool hit rate (Innodb_buffer_pool_reads / Innodb_buffer_pool_read_requests) and on innodb_buffer_pool_size below its expected value")
}
