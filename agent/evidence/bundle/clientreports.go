package bundle

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Client reports are what users' browsers and apps say, as people hand it
// over (contract 6.1): HAR exports of DevTools' network panel, error
// reports of the client's error tracker (Sentry issue pages, Sentry's
// events API JSON, Crashlytics issue exports) and plain pasted pages
// (support tickets, DevTools notes, console pastes). They are read as
// command outputs (evidence.CommandOutput) whose Command says what they
// are ("client report: browser/x.har (HAR)"), so that the mechanisms that
// read handed-over outputs read them too:
//
//   - a HAR (HTTP Archive 1.2) becomes curl -v-shaped lines per entry: "*
//     <startedDateTime> <page>", "> METHOD URL", "> name: value" per
//     request header (the Cookie header's size and count added as "*
//     request cookie header: N bytes, C cookies"), "< HTTP status", "<
//     name: value" per response header, "< body: ..." (the start of a
//     text body), "* timings: ...";
//   - a Sentry event (the events API's JSON: an array of events, or one)
//     becomes "<dateCreated> <title>" with its culprit, tags, exception
//     frames and breadcrumbs, one line each;
//   - any other text is read as its lines.
//
// Files read: *.har at the bundle root and in browser/, har/, sentry/,
// crashlytics/ and client/ folders; *.json in those folders (Sentry
// events, a HAR); *.txt and *.md in those folders; and *.txt at the root
// that are an error tracker's page (not terminal transcripts).

// trackerPageRE is the header of an error tracker's page pasted as text
// ("Sentry > org > project > Issues", "Firebase Crashlytics > app").
var trackerPageRE = regexp.MustCompile(`(?im)^\s*(?:sentry|bugsnag|rollbar|firebase crashlytics|crashlytics)\s+>`)

// clientDirs are the folders whose files are client reports.
var clientDirs = []string{"browser", "har", "sentry", "crashlytics", "client"}

// maxClientReports is the most client report files read.
const maxClientReports = 200

// maxClientBody is the most characters of a HAR body kept.
const maxClientBody = 600

// clientReportFiles lists the client report files of a bundle.
func clientReportFiles(fsys fs.FS) []string {
	var out []string
	if ents, err := fs.ReadDir(fsys, "."); err == nil {
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			switch path.Ext(e.Name()) {
			case ".har":
				out = append(out, e.Name())
			case ".txt":
				if data, err := fs.ReadFile(fsys, e.Name()); err == nil && !textTranscript(e.Name(), data) && trackerPageRE.Match(data) {
					out = append(out, e.Name())
				}
			}
		}
	}
	for _, d := range clientDirs {
		_ = fs.WalkDir(fsys, d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() || len(out) >= maxClientReports {
				return nil
			}
			switch path.Ext(p) {
			case ".har", ".json", ".txt", ".md":
				out = append(out, p)
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}

// clientReports reads the client report files as command outputs.
func clientReports(fsys fs.FS) []evidence.CommandOutput {
	var out []evidence.CommandOutput
	for _, name := range clientReportFiles(fsys) {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			continue
		}
		form, lines := readClientReport(name, data)
		if len(lines) == 0 {
			continue
		}
		cmd := fmt.Sprintf("client report: %s (%s)", name, form)
		out = append(out, evidence.CommandOutput{Command: cmd, Run: cmd, ExitCode: -1, Lines: lines, Source: name + ":1"})
	}
	return out
}

// readClientReport turns one file into lines and names its form: "HAR",
// "Sentry events", "page".
func readClientReport(name string, data []byte) (string, []string) {
	trimmed := strings.TrimSpace(string(data))
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		if lines, ok := harLines(data); ok {
			return "HAR", lines
		}
		if lines, ok := sentryEventLines(data); ok {
			return "Sentry events", lines
		}
		if path.Ext(name) == ".json" || path.Ext(name) == ".har" {
			return "", nil // JSON of another shape: not a client report
		}
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		lines = append(lines, strings.TrimRight(l, "\r"))
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return "page", lines
}

// har is the part of an HTTP Archive 1.2 read.
type har struct {
	Log struct {
		Pages []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"pages"`
		Entries []struct {
			StartedDateTime string  `json:"startedDateTime"`
			Time            float64 `json:"time"`
			Pageref         string  `json:"pageref"`
			Request         struct {
				Method      string    `json:"method"`
				URL         string    `json:"url"`
				HTTPVersion string    `json:"httpVersion"`
				Headers     []harPair `json:"headers"`
				Cookies     []harPair `json:"cookies"`
			} `json:"request"`
			Response struct {
				Status      int       `json:"status"`
				StatusText  string    `json:"statusText"`
				HTTPVersion string    `json:"httpVersion"`
				Headers     []harPair `json:"headers"`
				Content     struct {
					MimeType string `json:"mimeType"`
					Text     string `json:"text"`
				} `json:"content"`
				RedirectURL string `json:"redirectURL"`
			} `json:"response"`
			Timings map[string]float64 `json:"timings"`
		} `json:"entries"`
	} `json:"log"`
}

type harPair struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// harLines renders a HAR's entries as curl -v-shaped lines.
func harLines(data []byte) ([]string, bool) {
	var h har
	if err := json.Unmarshal(data, &h); err != nil || h.Log.Entries == nil {
		return nil, false
	}
	pages := map[string]string{}
	for _, p := range h.Log.Pages {
		pages[p.ID] = p.Title
	}
	var out []string
	for _, e := range h.Log.Entries {
		head := "* " + e.StartedDateTime
		if t := pages[e.Pageref]; t != "" {
			head += " page " + t
		}
		out = append(out, head)
		out = append(out, strings.TrimSpace(fmt.Sprintf("> %s %s %s", e.Request.Method, e.Request.URL, strings.ToUpper(e.Request.HTTPVersion))))
		cookieHeader := ""
		for _, p := range e.Request.Headers {
			out = append(out, fmt.Sprintf("> %s: %s", p.Name, p.Value))
			if strings.EqualFold(p.Name, "cookie") {
				if cookieHeader != "" {
					cookieHeader += "; "
				}
				cookieHeader += p.Value
			}
		}
		if cookieHeader != "" {
			n := len(strings.Split(cookieHeader, ";"))
			out = append(out, fmt.Sprintf("* request cookie header: %d bytes, %d cookies", len("Cookie: ")+len(cookieHeader), n))
		} else if len(e.Request.Cookies) == 0 {
			out = append(out, "* request cookie header: none")
		}
		status := fmt.Sprint(e.Response.Status)
		if e.Response.Status == 0 {
			status = "0 (no response: blocked or failed)"
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("< %s %s %s", strings.ToUpper(cmpOr(e.Response.HTTPVersion, "HTTP")), status, e.Response.StatusText)))
		for _, p := range e.Response.Headers {
			out = append(out, fmt.Sprintf("< %s: %s", p.Name, p.Value))
		}
		if b := strings.TrimSpace(e.Response.Content.Text); b != "" && !strings.Contains(e.Response.Content.MimeType, "image") {
			b = strings.Join(strings.Fields(b), " ")
			if len(b) > maxClientBody {
				b = b[:maxClientBody] + "..."
			}
			out = append(out, "< body: "+b)
		}
		if len(e.Timings) > 0 {
			var parts []string
			for _, k := range []string{"blocked", "dns", "connect", "ssl", "send", "wait", "receive"} {
				if v, ok := e.Timings[k]; ok && v >= 0 {
					parts = append(parts, fmt.Sprintf("%s=%gms", k, v))
				}
			}
			out = append(out, fmt.Sprintf("* timings: total=%gms %s", e.Time, strings.Join(parts, " ")))
		}
	}
	return out, true
}

// sentryEvent is the part of an event of Sentry's API read (the events
// list of an issue, or one event).
type sentryEvent struct {
	EventID     string        `json:"eventID"`
	ID          string        `json:"id"`
	DateCreated string        `json:"dateCreated"`
	Title       string        `json:"title"`
	Message     string        `json:"message"`
	Culprit     string        `json:"culprit"`
	Platform    string        `json:"platform"`
	Tags        []harPairKV   `json:"tags"`
	Entries     []sentryEntry `json:"entries"`
}

type harPairKV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type sentryEntry struct {
	Type string `json:"type"`
	Data struct {
		Values []struct {
			Type       string `json:"type"`
			Value      string `json:"value"`
			Category   string `json:"category"`
			Message    string `json:"message"`
			Timestamp  any    `json:"timestamp"`
			Stacktrace *struct {
				Frames []struct {
					Filename string `json:"filename"`
					AbsPath  string `json:"absPath"`
					Function string `json:"function"`
					LineNo   int    `json:"lineNo"`
					ColNo    int    `json:"colNo"`
					InApp    bool   `json:"inApp"`
				} `json:"frames"`
			} `json:"stacktrace"`
		} `json:"values"`
	} `json:"data"`
}

// sentryEventLines renders Sentry events, one header line each and its
// details indented under it.
func sentryEventLines(data []byte) ([]string, bool) {
	var evs []json.RawMessage
	if err := json.Unmarshal(data, &evs); err != nil {
		var one json.RawMessage
		if json.Unmarshal(data, &one) != nil {
			return nil, false
		}
		evs = []json.RawMessage{one}
	}
	var out []string
	for _, raw := range evs {
		var e sentryEvent
		if json.Unmarshal(raw, &e) != nil || e.EventID == "" && e.ID == "" || e.Title == "" && e.Message == "" {
			return nil, false
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s", e.DateCreated, cmpOr(e.Title, e.Message))))
		if e.Culprit != "" {
			out = append(out, "  culprit: "+e.Culprit)
		}
		if len(e.Tags) > 0 {
			var tags []string
			for _, t := range e.Tags {
				tags = append(tags, t.Key+"="+t.Value)
			}
			out = append(out, "  tags: "+strings.Join(tags, " "))
		}
		for _, en := range e.Entries {
			for _, v := range en.Data.Values {
				switch en.Type {
				case "exception":
					out = append(out, "  "+strings.TrimSpace(fmt.Sprintf("exception: %s: %s", v.Type, v.Value)))
					if v.Stacktrace != nil {
						// Sentry lists frames oldest first; print as a stack.
						fr := v.Stacktrace.Frames
						for i := len(fr) - 1; i >= 0; i-- {
							out = append(out, fmt.Sprintf("    at %s (%s:%d:%d)", cmpOr(fr[i].Function, "?"), cmpOr(fr[i].AbsPath, fr[i].Filename), fr[i].LineNo, fr[i].ColNo))
						}
					}
				case "breadcrumbs":
					out = append(out, "  "+strings.Join(strings.Fields(fmt.Sprintf("breadcrumb %v %s %s", orEmpty(v.Timestamp), v.Category, v.Message)), " "))
				}
			}
		}
		// Other lists of strings an export adds (breadcrumb tails).
		var rest map[string]json.RawMessage
		if json.Unmarshal(raw, &rest) == nil {
			keys := make([]string, 0, len(rest))
			for k := range rest {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				var ss []string
				if json.Unmarshal(rest[k], &ss) == nil {
					for _, s := range ss {
						out = append(out, fmt.Sprintf("  %s: %s", k, s))
					}
				}
			}
		}
	}
	return out, len(out) > 0
}

// orEmpty is a JSON value as text, "" for null.
func orEmpty(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}
