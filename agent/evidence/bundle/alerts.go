package bundle

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// alertsFile is the bundle's alerts (contract 6.1): Alertmanager's webhook
// payload ({"version": "4", "alerts": [...]}) or its GET /api/v2/alerts
// answer (a JSON array of alerts with status.state).
const alertsFile = "alerts.json"

// alerts returns the bundle's Alerts source, or nil when the bundle has no
// alerts.json. The file is read and validated on first use: a malformed
// file fails the questions about alerts with an error naming it (and the
// line), and the rest of the bundle still serves.
func (b *Bundle) alerts() evidence.Alerts {
	if !exists(b.FS, alertsFile) {
		return nil
	}
	return &bundleAlerts{fsys: b.FS}
}

type bundleAlerts struct {
	fsys fs.FS
	once sync.Once
	list []evidence.Alert
	err  error
}

func (a *bundleAlerts) load() {
	data, err := fs.ReadFile(a.fsys, alertsFile)
	if err != nil {
		a.err = &evidence.Error{Source: "alerts", Code: evidence.CodeMalformed, File: alertsFile, Err: err}
		return
	}
	a.list, a.err = ParseAlerts(data)
}

// List returns the alerts active at some time within [since, until] (zero
// bounds are open): started by until, and not ended before since.
func (a *bundleAlerts) List(ctx context.Context, since, until time.Time) ([]evidence.Alert, error) {
	a.once.Do(a.load)
	if a.err != nil {
		return nil, a.err
	}
	out := []evidence.Alert{}
	for _, al := range a.list {
		if !until.IsZero() && !al.StartsAt.IsZero() && al.StartsAt.After(until) {
			continue
		}
		if !since.IsZero() && !al.EndsAt.IsZero() && al.EndsAt.Before(since) {
			continue
		}
		out = append(out, al)
	}
	return out, nil
}

// rawAlert is one alert of either form: the webhook's status is a string,
// the v2 API's an object {"state", "silencedBy", "inhibitedBy"}.
type rawAlert struct {
	Status       json.RawMessage   `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt"`
	EndsAt       string            `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// ParseAlerts parses and validates alerts.json: an Alertmanager webhook
// payload or a GET /api/v2/alerts answer. It returns the alerts by start
// time, then name. Errors are *evidence.Error naming the file, the line and
// the field: "alerts[1].startsAt: "soon" is not an RFC 3339 time".
func ParseAlerts(data []byte) ([]evidence.Alert, error) {
	bad := func(line int, format string, args ...any) error {
		return &evidence.Error{Source: "alerts", Code: evidence.CodeMalformed, File: alertsFile, Line: line, Err: fmt.Errorf(format, args...)}
	}
	var whole any
	if err := json.Unmarshal(data, &whole); err != nil {
		line := 0
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line = evidence.LineAt(data, se.Offset)
		}
		return nil, bad(line, "not JSON: %v", err)
	}
	var raws []json.RawMessage
	prefix := "alerts"
	switch w := whole.(type) {
	case []any:
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, bad(0, "%v", err)
		}
		prefix = ""
	case map[string]any:
		if _, ok := w["alerts"]; !ok {
			return nil, bad(1, "want Alertmanager's webhook payload (an object with \"alerts\") or its GET /api/v2/alerts answer (an array of alerts)")
		}
		var p struct {
			Alerts []json.RawMessage `json:"alerts"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, bad(1, "\"alerts\" is not an array of alerts: %v", err)
		}
		raws = p.Alerts
	default:
		return nil, bad(1, "want Alertmanager's webhook payload (an object with \"alerts\") or its GET /api/v2/alerts answer (an array of alerts)")
	}
	out := make([]evidence.Alert, 0, len(raws))
	off := 0
	for i, raw := range raws {
		line := 0
		if j := bytes.Index(data[off:], raw); j >= 0 {
			line = evidence.LineAt(data, int64(off+j))
			off += j + len(raw)
		}
		field := fmt.Sprintf("%s[%d]", prefix, i)
		var r rawAlert
		if err := json.Unmarshal(raw, &r); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, bad(line, "%s.%s: want a %s, found a JSON %s", field, te.Field, te.Type, te.Value)
			}
			return nil, bad(line, "%s: want an alert object: %v", field, err)
		}
		if len(r.Labels) == 0 {
			return nil, bad(line, "%s.labels: missing (an alert is identified by its labels)", field)
		}
		al := evidence.Alert{Name: r.Labels["alertname"], Labels: r.Labels, Annotations: r.Annotations,
			GeneratorURL: r.GeneratorURL, Fingerprint: r.Fingerprint}
		var err error
		if al.StartsAt, err = alertTime(r.StartsAt); err != nil {
			return nil, bad(line, "%s.startsAt: %q is not an RFC 3339 time", field, r.StartsAt)
		}
		if al.EndsAt, err = alertTime(r.EndsAt); err != nil {
			return nil, bad(line, "%s.endsAt: %q is not an RFC 3339 time", field, r.EndsAt)
		}
		if al.Status, al.State, err = alertStatus(r.Status); err != nil {
			return nil, bad(line, "%s.status: %v", field, err)
		}
		out = append(out, al)
	}
	slices.SortStableFunc(out, func(a, b evidence.Alert) int {
		return cmp.Or(a.StartsAt.Compare(b.StartsAt), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// alertTime parses an RFC 3339 time; empty and Go's zero time (which
// Alertmanager writes as endsAt of a firing alert) are the zero time.
func alertTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, err
	}
	if t.Year() <= 1 {
		return time.Time{}, nil
	}
	return t.UTC(), nil
}

// alertStatus reads a webhook alert's "firing"/"resolved" or a listed
// alert's {"state": "active|suppressed|unprocessed"} (listed alerts are not
// resolved: Alertmanager lists only those). A missing status is firing.
func alertStatus(raw json.RawMessage) (status, state string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "firing", "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "firing" && s != "resolved" {
			return "", "", fmt.Errorf("%q is neither firing nor resolved", s)
		}
		return s, "", nil
	}
	var st struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return "", "", fmt.Errorf("want \"firing\", \"resolved\" or {\"state\": ...}")
	}
	switch st.State {
	case "active", "suppressed", "unprocessed":
		return "firing", st.State, nil
	}
	return "", "", fmt.Errorf("state %q is not active, suppressed or unprocessed", st.State)
}
