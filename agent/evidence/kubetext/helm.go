package kubetext

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Release is one revision of a Helm release as helm history, helm list or
// helm status printed it: when it was deployed, with what chart, and how
// it ended.
type Release struct {
	Name      string
	Namespace string // from -n, or helm list's NAMESPACE column; empty when not said
	Revision  int64
	// Updated is when the revision was deployed; zero when not shown.
	Updated time.Time
	// ZoneShown tells whether helm printed Updated's zone: helm list and
	// -o json|yaml do; the helm history table and helm status print the
	// time in the zone of the machine that deployed, without saying which
	// (read as UTC).
	ZoneShown   bool
	Status      string // deployed, superseded, failed, pending-upgrade...
	Chart       string // name-version, as helm prints it
	AppVersion  string
	Description string // "Upgrade complete", "Rollback to 3", the failure
	Line        int    // 1-based line of the row (of the command, for json, yaml and status)
	Command     string // the command line, without the prompt
}

// helmCommand reads a helm command line: its verb (history, list, status),
// the release named, the namespace, -A and the output format. ok is false
// for other programs and other helm verbs.
func helmCommand(text string) (verb, release, ns, output string, all, ok bool) {
	words, piped := splitWords(text)
	if piped || len(words) < 2 {
		return "", "", "", "", false, false
	}
	bin := words[0]
	if i := strings.LastIndexByte(bin, '/'); i >= 0 {
		bin = bin[i+1:]
	}
	if bin != "helm" && bin != "helm3" {
		return "", "", "", "", false, false
	}
	output = "table"
	var args []string
	for i := 1; i < len(words); i++ {
		w := words[i]
		val := func() string {
			if i+1 < len(words) {
				i++
				return words[i]
			}
			return ""
		}
		switch {
		case w == "-n" || w == "--namespace":
			ns = val()
		case strings.HasPrefix(w, "--namespace="):
			ns = strings.TrimPrefix(w, "--namespace=")
		case w == "-A" || w == "--all-namespaces":
			all = true
		case w == "-o" || w == "--output":
			output = val()
		case strings.HasPrefix(w, "--output="):
			output = strings.TrimPrefix(w, "--output=")
		case strings.HasPrefix(w, "-o") && len(w) > 2 && !strings.HasPrefix(w, "--"):
			output = w[2:]
		case w == "--max" || w == "--kube-context" || w == "--kubeconfig" || w == "--revision" || w == "--filter" || w == "-f" ||
			w == "--max-col-width" || w == "-m" || w == "--time-format" || w == "--offset" || w == "--selector" || w == "-l":
			val()
		case strings.HasPrefix(w, "-"):
		default:
			args = append(args, w)
		}
	}
	if len(args) == 0 {
		return "", "", "", "", false, false
	}
	switch args[0] {
	case "history", "hist":
		verb = "history"
	case "list", "ls":
		verb = "list"
	case "status":
		verb = "status"
	default:
		return "", "", "", "", false, false
	}
	if len(args) > 1 {
		release = args[1]
	}
	if verb != "list" && release == "" {
		return "", "", "", "", false, false
	}
	if output != "table" && output != "json" && output != "yaml" {
		return "", "", "", "", false, false
	}
	return verb, release, ns, output, all, true
}

// helm reads helm history, helm list and helm status outputs into
// releases and reports whether the command was one of them (its output is
// kept as text as well, by the caller).
func (p *parser) helm(text string, out []string, line int) bool {
	verb, release, ns, output, _, ok := helmCommand(text)
	if !ok {
		return false
	}
	if len(out) > 0 && strings.HasPrefix(strings.TrimSpace(out[0]), "Error:") {
		p.skip(line, text, "helm answered an error (kept as text): "+strings.TrimSpace(out[0]))
		return true
	}
	var rs []Release
	var err error
	switch {
	case output == "json" || output == "yaml":
		rs, err = helmDocument(verb, release, ns, out, output)
		for i := range rs {
			rs[i].Line = line
		}
	case verb == "status":
		rs = helmStatus(release, ns, out, line)
	default:
		rs, err = helmTable(verb, release, ns, out, line+1)
	}
	if err != nil {
		p.skip(line, text, "helm "+verb+" output not read (kept as text): "+err.Error())
		return true
	}
	if len(rs) == 0 {
		p.skip(line, text, "helm "+verb+" output holds no release (kept as text)")
		return true
	}
	for _, r := range rs {
		if len(p.res.Releases) >= MaxObjects {
			p.skip(line, text, fmt.Sprintf("more than %d helm releases: the rest are dropped", MaxObjects))
			break
		}
		r.Command = text
		p.res.Releases = append(p.res.Releases, r)
	}
	return true
}

// helmTable reads the table helm history (REVISION UPDATED STATUS CHART
// APP VERSION DESCRIPTION) or helm list (NAME NAMESPACE REVISION UPDATED
// STATUS CHART APP VERSION) prints.
func helmTable(verb, release, ns string, out []string, first int) ([]Release, error) {
	t := parseTable(out, first, MaxObjects)
	if t == nil || t.col("REVISION") < 0 || t.col("UPDATED") < 0 || t.col("STATUS") < 0 {
		return nil, fmt.Errorf("no REVISION, UPDATED and STATUS columns")
	}
	if verb == "list" && t.col("NAME") < 0 {
		return nil, fmt.Errorf("no NAME column")
	}
	var rs []Release
	for i, row := range t.rows {
		r := Release{Name: release, Namespace: ns, Status: t.get(row, "STATUS"), Chart: t.get(row, "CHART"),
			AppVersion: t.get(row, "APP VERSION"), Description: t.get(row, "DESCRIPTION"), Line: t.lines[i]}
		if verb == "list" {
			r.Name = t.get(row, "NAME")
			if n := t.get(row, "NAMESPACE"); n != "" {
				r.Namespace = n
			}
		}
		n, err := strconv.ParseInt(t.get(row, "REVISION"), 10, 64)
		if err != nil || n <= 0 || r.Name == "" {
			return nil, fmt.Errorf("line %d: no release revision", t.lines[i])
		}
		r.Revision = n
		r.Updated, r.ZoneShown = helmTime(t.get(row, "UPDATED"))
		rs = append(rs, r)
	}
	return rs, nil
}

// helmTime reads the times helm prints: the history table's and helm
// status's "Mon Jan _2 15:04:05 2006" (no zone: read as UTC), helm list's
// Go time ("2006-01-02 15:04:05.999999999 -0700 MST"), and RFC 3339 (-o
// json|yaml).
func helmTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, " m=+"); i > 0 {
		s = s[:i] // a monotonic clock reading
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), true
	}
	if t, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", s); err == nil {
		return t.UTC(), true
	}
	if t, err := time.Parse(time.ANSIC, strings.Join(strings.Fields(s), " ")); err == nil {
		return t, false
	}
	if t, err := time.Parse("Mon Jan 2 15:04:05 2006", strings.Join(strings.Fields(s), " ")); err == nil {
		return t, false
	}
	return time.Time{}, false
}

// helmDocument reads helm history or helm list -o json|yaml.
func helmDocument(verb, release, ns string, out []string, format string) ([]Release, error) {
	text := strings.Join(out, "\n")
	var data []byte
	if format == "yaml" {
		j, err := yaml.YAMLToJSON([]byte(text))
		if err != nil {
			return nil, err
		}
		data = j
	} else {
		data = []byte(text)
	}
	if verb == "status" {
		var s struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
			Version   int64  `json:"version"`
			Info      struct {
				LastDeployed string `json:"last_deployed"`
				Status       string `json:"status"`
				Description  string `json:"description"`
			} `json:"info"`
			Chart struct {
				Metadata struct {
					Name       string `json:"name"`
					Version    string `json:"version"`
					AppVersion string `json:"appVersion"`
				} `json:"metadata"`
			} `json:"chart"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, err
		}
		if s.Name == "" || s.Version <= 0 {
			return nil, nil
		}
		r := Release{Name: s.Name, Namespace: s.Namespace, Revision: s.Version, Status: s.Info.Status, Description: s.Info.Description,
			AppVersion: s.Chart.Metadata.AppVersion}
		if s.Chart.Metadata.Name != "" {
			r.Chart = s.Chart.Metadata.Name + "-" + s.Chart.Metadata.Version
		}
		r.Updated, r.ZoneShown = helmTime(s.Info.LastDeployed)
		return []Release{r}, nil
	}
	var rows []struct {
		Name        string          `json:"name"`
		Namespace   string          `json:"namespace"`
		Revision    json.RawMessage `json:"revision"` // a number in history, a string in list
		Updated     string          `json:"updated"`
		Status      string          `json:"status"`
		Chart       string          `json:"chart"`
		AppVersion  string          `json:"app_version"`
		Description string          `json:"description"`
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, err
	}
	var rs []Release
	for _, row := range rows {
		n, err := strconv.ParseInt(strings.Trim(string(row.Revision), `"`), 10, 64)
		if err != nil || n <= 0 {
			continue
		}
		r := Release{Name: release, Namespace: ns, Revision: n, Status: row.Status, Chart: row.Chart, AppVersion: row.AppVersion, Description: row.Description}
		if verb == "list" {
			r.Name = row.Name
			if row.Namespace != "" {
				r.Namespace = row.Namespace
			}
		}
		if r.Name == "" {
			continue
		}
		r.Updated, r.ZoneShown = helmTime(row.Updated)
		rs = append(rs, r)
		if len(rs) >= MaxObjects {
			break
		}
	}
	return rs, nil
}

// helmStatus reads helm status's header: NAME, LAST DEPLOYED, NAMESPACE,
// STATUS, REVISION (and DESCRIPTION with --show-desc).
func helmStatus(release, ns string, out []string, line int) []Release {
	r := Release{Name: release, Namespace: ns, Line: line}
	for i, l := range out {
		if i > 20 {
			break
		}
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "NAME":
			r.Name = v
		case "NAMESPACE":
			r.Namespace = v
		case "STATUS":
			r.Status = v
		case "REVISION":
			r.Revision, _ = strconv.ParseInt(v, 10, 64)
		case "LAST DEPLOYED":
			r.Updated, r.ZoneShown = helmTime(v)
		case "DESCRIPTION":
			r.Description = v
		}
	}
	if r.Name == "" || r.Revision <= 0 {
		return nil
	}
	return []Release{r}
}
