package bundle

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// ChangeKinds are the kinds a change may have.
var ChangeKinds = []string{"deploy", "config", "feature_flag", "infra"}

// changes returns the bundle's Changes source: changes.json, and the Helm
// release revisions transcripts show (helm history, helm list, helm
// status); nil when the bundle has neither. The file is read and
// validated on first use, so a malformed file fails list_changes with a
// clear error and the rest of the bundle still serves.
func (b *Bundle) changes(k *kubeBundle) evidence.Changes {
	file := exists(b.FS, "changes.json")
	if !file && (k == nil || len(k.helmChanges(context.Background())) == 0) {
		return nil
	}
	return &bundleChanges{fsys: b.FS, file: file, kube: k}
}

type bundleChanges struct {
	fsys fs.FS
	file bool        // changes.json exists
	kube *kubeBundle // transcripts, for Helm releases; may be nil
	once sync.Once
	list []evidence.Change
	err  error
}

type rawChange struct {
	Timestamp   string `json:"timestamp"`
	Service     string `json:"service"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
	Revision    string `json:"revision"`
	Author      string `json:"author"`
}

func (c *bundleChanges) load() {
	if c.file {
		data, err := fs.ReadFile(c.fsys, "changes.json")
		if err != nil {
			c.err = &evidence.Error{Source: "changes", Code: evidence.CodeMalformed, File: "changes.json", Err: err}
			return
		}
		if c.list, c.err = ParseChanges(data); c.err != nil {
			return
		}
	}
	if c.kube != nil {
		c.list = append(c.list, c.kube.helmChanges(context.Background())...)
		sort.SliceStable(c.list, func(i, j int) bool { return c.list[i].Timestamp.Before(c.list[j].Timestamp) })
	}
}

// ParseChanges parses and validates a changes.json document and returns the
// changes sorted by time. Errors name the index and field:
// "changes.json: [3].timestamp: ...".
func ParseChanges(data []byte) ([]evidence.Change, error) {
	bad := func(format string, args ...any) error {
		return &evidence.Error{Source: "changes", Code: evidence.CodeMalformed, File: "changes.json", Err: fmt.Errorf(format, args...)}
	}
	var raws []rawChange
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, bad("want a JSON array of changes: %v", err)
	}
	out := make([]evidence.Change, 0, len(raws))
	for i, r := range raws {
		t, err := time.Parse(time.RFC3339, r.Timestamp)
		if err != nil {
			return nil, bad("[%d].timestamp: %q is not an RFC 3339 time", i, r.Timestamp)
		}
		if !slices.Contains(ChangeKinds, r.Kind) {
			return nil, bad("[%d].kind: %q is not one of deploy, config, feature_flag, infra", i, r.Kind)
		}
		if r.Service == "" {
			return nil, bad("[%d].service: missing", i)
		}
		out = append(out, evidence.Change{
			Timestamp: t.UTC(), Service: r.Service, Kind: r.Kind, Description: r.Description,
			Revision: r.Revision, Author: r.Author, Source: "changes.json",
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.Before(out[j].Timestamp) })
	return out, nil
}

func (c *bundleChanges) List(ctx context.Context, since, until time.Time, service string) ([]evidence.Change, error) {
	c.once.Do(c.load)
	if c.err != nil {
		return nil, c.err
	}
	return FilterChanges(c.list, since, until, service), nil
}

// FilterChanges returns the changes of service (empty: all) within
// [since, until] (zero bounds are open).
func FilterChanges(list []evidence.Change, since, until time.Time, service string) []evidence.Change {
	out := []evidence.Change{}
	for _, ch := range list {
		if service != "" && ch.Service != service {
			continue
		}
		if !since.IsZero() && ch.Timestamp.Before(since) {
			continue
		}
		if !until.IsZero() && ch.Timestamp.After(until) {
			continue
		}
		out = append(out, ch)
	}
	return out
}
