package bundle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// CheckItem is one file (or one part of a file) of a bundle check.
type CheckItem struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	// What was read ("3 Pod, 1 Service") or why it was skipped.
	What string `json:"what"`
}

// CheckReport is what `rootcause bundle check` prints: every file of the
// bundle, read or skipped, and the bad data found.
type CheckReport struct {
	Bundle  string      `json:"bundle"`
	Read    []CheckItem `json:"read"`
	Skipped []CheckItem `json:"skipped"`
	Errors  []CheckItem `json:"errors"`
}

// Empty reports whether nothing of the bundle could be read.
func (r *CheckReport) Empty() bool { return len(r.Read) == 0 }

// Forms lists what a bundle may hold, for messages about empty bundles.
const Forms = "kubernetes/ (a cluster-info dump or any kubectl get -o json|yaml output), *.txt kubectl terminal transcripts " +
	"(at the root or under kubernetes/; *.md, *.log, *.out at the root too), *.txt transcripts of commands on hosts at the root or under logs/, prometheus/*.om, logs/*.log, changes.json, alerts.json, cloudwatch/, traces/*.jsonl, repos/, runbooks/"

// ErrEmpty is returned (wrapped) by RequireEvidence for a bundle that holds
// nothing rootcause reads.
var ErrEmpty = errors.New("no evidence rootcause reads")

// RequireEvidence fails when the bundle holds no evidence at all, naming
// what was looked for: investigating it would report a false all-clear. It
// is cheap: files are listed, and only Kubernetes files not named after a
// kind are decoded.
func (b *Bundle) RequireEvidence(ctx context.Context) error {
	s := b.Sources(b.CapturedAt)
	if s.Metrics != nil || s.Logs != nil || s.Changes != nil || s.CloudWatch != nil || s.Code != nil || s.Knowledge != nil || s.Traces != nil || s.Alerts != nil {
		return nil
	}
	if s.Kubernetes != nil && b.kube().holdsAny(ctx) {
		return nil
	}
	return fmt.Errorf("bundle %s: %w: looked for %s; `rootcause bundle check %s` lists what it holds",
		b.Name, ErrEmpty, Forms, b.Name)
}

// Problems lists the files an investigation reads only up to their bad
// data, which no single question reports: a malformed alerts.json (its
// alerts are then missing from every question) and Kubernetes files not
// named after a kind (which may hold any kind). Files named after a kind
// fail the questions of their kind instead, as data gaps.
func (b *Bundle) Problems(ctx context.Context) []CheckItem {
	var out []CheckItem
	if exists(b.FS, alertsFile) {
		if data, err := fs.ReadFile(b.FS, alertsFile); err != nil {
			out = append(out, CheckItem{File: alertsFile, What: err.Error()})
		} else if _, err := ParseAlerts(data); err != nil {
			it := CheckItem{File: alertsFile, What: err.Error()}
			var e *evidence.Error
			if errors.As(err, &e) {
				it.Line, it.What = e.Line, e.Err.Error()
			}
			out = append(out, it)
		}
	}
	if !exists(b.FS, kubeDir) {
		return out
	}
	k := b.kube()
	for _, name := range k.index().generic {
		if err := ctx.Err(); err != nil {
			return out
		}
		f := k.load(name, "")
		if f.err == nil {
			continue
		}
		it := CheckItem{File: name, What: f.err.Error()}
		var e *evidence.Error
		if errors.As(f.err, &e) {
			it.Line, it.What = e.Line, e.Err.Error()
		}
		out = append(out, it)
	}
	return out
}

// holdsAny reports whether the Kubernetes part holds anything readable,
// cheapest questions first.
func (k *kubeBundle) holdsAny(ctx context.Context) bool {
	x := k.index()
	if len(x.hinted) > 0 || x.podLogs > 0 {
		return true
	}
	if t := k.texts(ctx); len(t.objs) > 0 || len(t.logs) > 0 || len(t.usage) > 0 || len(t.absent) > 0 || len(t.outputs) > 0 {
		return true
	}
	for _, objs := range k.generic(ctx) {
		if len(objs) > 0 {
			return true
		}
	}
	return false
}

// Check reads every file of the bundle and reports what was read, what was
// skipped and why, and bad data, with file and line.
func Check(ctx context.Context, b *Bundle) (*CheckReport, error) {
	r := &CheckReport{Bundle: b.Name, Read: []CheckItem{}, Skipped: []CheckItem{}, Errors: []CheckItem{}}
	read := func(f, what string) { r.Read = append(r.Read, CheckItem{File: f, What: what}) }
	skip := func(f string, line int, why string) {
		r.Skipped = append(r.Skipped, CheckItem{File: f, Line: line, What: why})
	}
	bad := func(f string, err error) {
		it := CheckItem{File: f, What: err.Error()}
		var e *evidence.Error
		if errors.As(err, &e) {
			it.Line = e.Line
			if e.File != "" {
				it.File = e.File
			}
			it.What = e.Err.Error()
		}
		r.Errors = append(r.Errors, it)
	}
	s := b.Sources(b.CapturedAt)
	err := fs.WalkDir(b.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			bad(p, err)
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == "." {
			return nil
		}
		top, _, _ := strings.Cut(p, "/")
		if d.IsDir() {
			switch {
			case top == "repos" && strings.Count(p, "/") == 1:
				read(p+"/", "source repository (code tools)")
				return fs.SkipDir
			case p == top && !slices.Contains([]string{kubeDir, "prometheus", "logs", "cloudwatch", "repos", "runbooks", "traces"}, top):
				skip(p+"/", 0, "not a bundle part (looked for "+Forms+")")
				return fs.SkipDir
			}
			return nil
		}
		name := d.Name()
		switch {
		case p == "bundle.json":
			if b.CapturedAt.IsZero() {
				read(p, "bundle metadata (no captured_at)")
			} else {
				read(p, "captured at "+b.CapturedAt.Format(time.RFC3339))
			}
		case p == "scenario.json":
			read(p, "scenario (eval)")
		case p == "changes.json":
			if _, err := s.Changes.List(ctx, time.Time{}, time.Time{}, ""); err != nil {
				bad(p, err)
			} else {
				read(p, "changes")
			}
		case p == alertsFile:
			if list, err := s.Alerts.List(ctx, time.Time{}, time.Time{}); err != nil {
				bad(p, err)
			} else {
				read(p, describeAlerts(list))
			}
		case top == kubeDir && isKubeData(name):
			checkKubeFile(b.FS, p, r)
		case top == kubeDir && isPodLog(name):
			read(p, "pod logs ("+strings.TrimSuffix(name, ".txt")+")")
		case strings.HasSuffix(name, ".txt") && (top == kubeDir || p == name) || p == name && rootTranscript(name) && transcriptFile(b.FS, p):
			checkTranscript(b, p, r)
		case top == "logs" && strings.HasSuffix(name, ".txt") && hostTranscriptFile(b.FS, p):
			checkTranscript(b, p, r)
		case top == "prometheus" && strings.HasSuffix(name, ".om"):
			read(p, "OpenMetrics samples")
		case top == "logs" && strings.HasSuffix(name, ".log"):
			read(p, "log source "+strings.TrimSuffix(strings.TrimPrefix(p, "logs/"), ".log"))
		case top == "cloudwatch" && (strings.HasPrefix(p, "cloudwatch/logs/") && strings.HasSuffix(name, ".jsonl") || p == "cloudwatch/metrics.json"):
			read(p, "CloudWatch data")
		case top == "repos" && (strings.HasSuffix(name, ".commits.json") || strings.HasSuffix(name, ".pulls.json")):
			read(p, "repository history")
		case top == "runbooks":
			read(p, "runbook")
		case top == "traces" && strings.HasSuffix(name, ".jsonl") && s.Traces != nil:
			read(p, "OTLP traces")
		case top == kubeDir:
			skip(p, 0, "not a form read under kubernetes/ (want .json, .yaml, .yml, or a .txt transcript)")
		default:
			skip(p, 0, "not a bundle part (looked for "+Forms+")")
		}
		return nil
	})
	return r, err
}

func checkKubeFile(fsys fs.FS, p string, r *CheckReport) {
	if dumpOnly[path.Base(p)] {
		r.Skipped = append(r.Skipped, CheckItem{File: p, What: "ReplicationController: a kind rootcause does not read"})
		return
	}
	data, err := fs.ReadFile(fsys, p)
	if err != nil {
		r.Errors = append(r.Errors, CheckItem{File: p, What: err.Error()})
		return
	}
	hint := ""
	base := path.Base(p)
	res := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, ".json"), ".yaml"), ".yml")
	if ki, ok := evidence.LookupKind(res); ok && ki.Resource == res {
		hint = ki.Kind
	}
	counts := map[string]int{}
	skipped := 0
	err = evidence.DecodeKubeFile(p, data, hint, func(it evidence.KubeItem) {
		if it.Object == nil {
			skipped++
			what := it.Skip
			if it.Name != "" {
				what = it.Name + ": " + what
			}
			r.Skipped = append(r.Skipped, CheckItem{File: p, Line: it.Line, What: what})
			return
		}
		counts[it.Kind]++
	})
	switch {
	case len(counts) > 0:
		r.Read = append(r.Read, CheckItem{File: p, What: countKinds(counts)})
	case err == nil && hint != "" && skipped == 0:
		r.Read = append(r.Read, CheckItem{File: p, What: "no " + hint + " (an empty list: the kind was captured)"})
	case err == nil:
		r.Skipped = append(r.Skipped, CheckItem{File: p, What: "no Kubernetes object read"})
	}
	if err != nil {
		var e *evidence.Error
		it := CheckItem{File: p, What: err.Error()}
		if errors.As(err, &e) {
			it.Line, it.What = e.Line, e.Err.Error()
		}
		r.Errors = append(r.Errors, it)
	}
}

func countKinds(counts map[string]int) string {
	var parts []string
	for _, k := range evidence.KindNames() {
		if n := counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ")
}

// transcriptFile reports whether a file holds a kubectl command line: a
// Markdown note or a terminal log at the root that holds none is no bundle
// part.
func transcriptFile(fsys fs.FS, p string) bool {
	data, err := fs.ReadFile(fsys, p)
	return err == nil && kubetext.IsTranscript(data)
}

// hostTranscriptFile reports whether a *.txt under logs/ is a terminal
// transcript (see logTexts).
func hostTranscriptFile(fsys fs.FS, p string) bool {
	data, err := fs.ReadFile(fsys, p)
	return err == nil && textTranscript(p, data)
}

func checkTranscript(b *Bundle, p string, r *CheckReport) {
	data, err := fs.ReadFile(b.FS, p)
	if err != nil {
		r.Errors = append(r.Errors, CheckItem{File: p, What: err.Error()})
		return
	}
	if !textTranscript(p, data) {
		r.Skipped = append(r.Skipped, CheckItem{File: p, What: "not a terminal transcript (no \"$ kubectl\" line, no shell prompt and command on its first line)"})
		return
	}
	res := kubetext.Parse(data, b.CapturedAt)
	counts := map[string]int{}
	for _, o := range res.Objects {
		if obj, ok := o.(evidence.KubeObject); ok && evidence.KindOf(obj) != "" {
			counts[evidence.KindOf(obj)]++
		}
	}
	counts["Event"] += len(res.Events)
	what := countKinds(counts)
	add := func(n int, format string) {
		if n > 0 {
			what = strings.TrimPrefix(what+", "+fmt.Sprintf(format, n), ", ")
		}
	}
	add(len(res.Logs), "%d kubectl logs outputs")
	pods, nodes := 0, 0
	for _, u := range res.Usage {
		if u.Kind == "Node" {
			nodes++
		} else {
			pods++
		}
	}
	add(pods, "%d kubectl top pod rows")
	add(nodes, "%d kubectl top node rows")
	add(len(res.Rollouts), "%d kubectl rollout status")
	add(len(res.Histories), "%d kubectl rollout history")
	add(len(res.Permissions), "%d kubectl auth can-i answers")
	add(len(res.Releases), "%d helm release revisions")
	execs := 0
	for _, o := range res.Outputs {
		if o.Exec {
			execs++
		}
	}
	add(execs, "%d kubectl exec outputs")
	add(len(res.Outputs)-execs, "%d other command outputs kept as text")
	add(len(seenPods(res, p)), "%d pods seen only in kubectl logs, exec or top (state unknown)")
	absent := map[string]int{}
	for _, a := range res.Absent {
		absent[a.Kind]++
	}
	if len(absent) > 0 {
		what = strings.TrimPrefix(what+", "+countKinds(absent)+" not found (kubectl's NotFound answers)", ", ")
	}
	if what != "" {
		r.Read = append(r.Read, CheckItem{File: p, What: "transcript: " + what})
	}
	for _, s := range res.Skipped {
		why := s.Reason
		if s.Command != "" {
			why = s.Command + ": " + why
		}
		r.Skipped = append(r.Skipped, CheckItem{File: p, Line: s.Line, What: why})
	}
	if what == "" && len(res.Skipped) == 0 {
		r.Skipped = append(r.Skipped, CheckItem{File: p, What: "no kubectl command read"})
	}
}

// seenPods are the pods a transcript shows only through commands run in
// them or about them (see textData.addSeenPods).
func seenPods(res *kubetext.Result, file string) []*corev1.Pod {
	have := map[string]bool{}
	for _, o := range res.Objects {
		if p, ok := o.(*corev1.Pod); ok {
			have[p.Namespace+"/"+p.Name] = true
		}
	}
	for _, a := range res.Absent {
		if a.Kind == "Pod" {
			have[a.Namespace+"/"+a.Name] = true
		}
	}
	return kubetext.SeenPods(res.Sightings(file), func(ns, name string) bool { return have[ns+"/"+name] })
}

// describeAlerts summarises alerts for bundle check: "Alertmanager alerts
// (1 firing: NodeFilesystemSpaceFillingUp; 1 resolved: KubePodCrashLooping)".
func describeAlerts(list []evidence.Alert) string {
	if len(list) == 0 {
		return "Alertmanager alerts: none (an empty list)"
	}
	var firing, resolved []string
	for _, a := range list {
		name := cmpOr(a.Name, "(no alertname)")
		if a.Status == "resolved" {
			resolved = append(resolved, name)
		} else {
			firing = append(firing, name)
		}
	}
	var parts []string
	if len(firing) > 0 {
		parts = append(parts, fmt.Sprintf("%d firing: %s", len(firing), strings.Join(slices.Compact(slices.Sorted(slices.Values(firing))), ", ")))
	}
	if len(resolved) > 0 {
		parts = append(parts, fmt.Sprintf("%d resolved: %s", len(resolved), strings.Join(slices.Compact(slices.Sorted(slices.Values(resolved))), ", ")))
	}
	return "Alertmanager alerts (" + strings.Join(parts, "; ") + ")"
}
