// Package rediscli reads what redis-cli (and valkey-cli, keydb-cli) print
// for the commands an investigator runs against a server: SLOWLOG GET, in
// the nested form redis-cli prints to a terminal, the raw form it prints
// when its output is not a terminal (kubectl exec without -t) and the
// JSON of --json; and INFO commandstats.
package rediscli

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SlowEntry is one entry of the slow log: the command and its arguments,
// when it ran, how long it took, and the client that sent it (Redis 4.0
// and later log its address and its CLIENT SETNAME name).
type SlowEntry struct {
	ID       int64
	At       time.Time
	Duration time.Duration
	Args     []string // the command first, as sent
	Addr     string
	Client   string
}

// Command is the entry's command in upper case ("KEYS").
func (e SlowEntry) Command() string {
	if len(e.Args) == 0 {
		return ""
	}
	return strings.ToUpper(e.Args[0])
}

var (
	// "1) 1) (integer) 88412", "   4) 1) \"KEYS\"", "   6) \"\"".
	nestedRE = regexp.MustCompile(`^\s*\d+\) `)
	intRE    = regexp.MustCompile(`^\(integer\) (-?\d+)$`)
	numRE    = regexp.MustCompile(`^\d+$`)
	// A client address: ip:port, [ipv6]:port, or a unix socket path.
	addrRE = regexp.MustCompile(`^(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]|[0-9a-fA-F:]+):\d{1,5}$|^/\S+\.sock$|^unix:`)
)

// ParseSlowlog reads the output of SLOWLOG GET in any of redis-cli's forms;
// lines that are not part of an entry are skipped. Entries come in the
// order printed (newest first).
func ParseSlowlog(lines []string) []SlowEntry {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "[") {
			if es, ok := parseJSON(strings.Join(lines, "\n")); ok {
				return es
			}
		}
		break
	}
	for _, l := range lines {
		if nestedRE.MatchString(l) {
			return parseNested(lines)
		}
	}
	return parseRaw(lines)
}

func parseJSON(s string) ([]SlowEntry, bool) {
	var raw [][]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &raw); err != nil {
		return nil, false
	}
	var out []SlowEntry
	for _, r := range raw {
		if len(r) < 4 {
			continue
		}
		var e SlowEntry
		id, ok1 := r[0].(float64)
		at, ok2 := r[1].(float64)
		us, ok3 := r[2].(float64)
		args, ok4 := r[3].([]any)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			continue
		}
		e.ID, e.At, e.Duration = int64(id), time.Unix(int64(at), 0).UTC(), time.Duration(us)*time.Microsecond
		for _, a := range args {
			if s, ok := a.(string); ok {
				e.Args = append(e.Args, s)
			}
		}
		if len(r) >= 6 {
			e.Addr, _ = r[4].(string)
			e.Client, _ = r[5].(string)
		}
		out = append(out, e)
	}
	return out, true
}

// parseNested reads the terminal form: each entry a numbered list, its
// fields numbered inside it, the arguments a list in field 4. A marker's
// depth is the column of its ")" (redis-cli right-aligns the numbers).
func parseNested(lines []string) []SlowEntry {
	var out []SlowEntry
	var cur *SlowEntry
	entryCol, fieldCol, field := -1, -1, 0
	flush := func() {
		if cur != nil && len(cur.Args) > 0 {
			out = append(out, *cur)
		}
		cur = nil
	}
	for _, l := range lines {
		rest, col := l, 0
		var cols []int
		var nums []int
		for {
			m := markerRE.FindStringSubmatchIndex(rest)
			if m == nil {
				break
			}
			n, _ := strconv.Atoi(rest[m[2]:m[3]])
			cols = append(cols, col+m[3])
			nums = append(nums, n)
			col += m[1]
			rest = rest[m[1]:]
		}
		if len(cols) == 0 {
			continue
		}
		if entryCol < 0 {
			if len(cols) < 2 {
				continue
			}
			entryCol, fieldCol = cols[0], cols[1]
		}
		for i, c := range cols {
			switch {
			case c == entryCol:
				flush()
				cur = &SlowEntry{}
			case c == fieldCol:
				field = nums[i]
			}
		}
		if cur == nil {
			continue
		}
		if field == 4 {
			cur.Args = append(cur.Args, unquote(rest))
			continue
		}
		setField(cur, field, rest)
	}
	flush()
	return out
}

// markerRE is one "N) " marker of redis-cli's nested form at the start of
// what is left of a line.
var markerRE = regexp.MustCompile(`^\s*(\d+)\) `)

func setField(e *SlowEntry, field int, v string) {
	v = strings.TrimSpace(v)
	num := func() int64 {
		if m := intRE.FindStringSubmatch(v); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			return n
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	switch field {
	case 1:
		e.ID = num()
	case 2:
		e.At = time.Unix(num(), 0).UTC()
	case 3:
		e.Duration = time.Duration(num()) * time.Microsecond
	case 4:
		e.Args = append(e.Args, unquote(v))
	case 5:
		e.Addr = unquote(v)
	case 6:
		e.Client = unquote(v)
	}
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return strings.Trim(s, `"`)
}

// parseRaw reads the raw form, one value a line: id, time, microseconds,
// the arguments, then (Redis 4.0 and later) the client's address and name.
// An entry starts at three numbers in a row, the second a Unix time.
func parseRaw(lines []string) []SlowEntry {
	vals := make([]string, len(lines))
	for i, l := range lines {
		vals[i] = strings.TrimRight(l, "\r")
	}
	isStart := func(i int) bool {
		return i+3 < len(vals) && numRE.MatchString(vals[i]) && len(vals[i+1]) >= 9 && numRE.MatchString(vals[i+1]) && numRE.MatchString(vals[i+2])
	}
	var out []SlowEntry
	for i := 0; i < len(vals); {
		if !isStart(i) {
			i++
			continue
		}
		var e SlowEntry
		setField(&e, 1, vals[i])
		setField(&e, 2, vals[i+1])
		setField(&e, 3, vals[i+2])
		j := i + 3
		for ; j < len(vals); j++ {
			if addrRE.MatchString(strings.TrimSpace(vals[j])) {
				e.Addr = strings.TrimSpace(vals[j])
				if j+1 < len(vals) && !isStart(j+1) {
					e.Client = strings.TrimSpace(vals[j+1])
					j++
				}
				j++
				break
			}
			if len(e.Args) > 0 && isStart(j) {
				break
			}
			e.Args = append(e.Args, vals[j])
		}
		if len(e.Args) > 0 {
			out = append(out, e)
		}
		i = j
	}
	return out
}

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls   int64
	PerCall time.Duration
}

var cmdstatRE = regexp.MustCompile(`^cmdstat_([\w|-]+):(.*)$`)

// ParseCommandStats reads INFO commandstats lines
// ("cmdstat_keys:calls=88,usec=164933120,usec_per_call=1874240.00,..."),
// by command in upper case.
func ParseCommandStats(lines []string) map[string]CommandStat {
	out := map[string]CommandStat{}
	for _, l := range lines {
		m := cmdstatRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		var st CommandStat
		for _, kv := range strings.Split(m[2], ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				st.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec_per_call":
				f, _ := strconv.ParseFloat(v, 64)
				st.PerCall = time.Duration(f * float64(time.Microsecond))
			}
		}
		out[strings.ToUpper(m[1])] = st
	}
	return out
}
