package bundle

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// This file serves terminal transcripts (contract 6.1): *.txt files at the
// bundle root or under kubernetes/ holding "$ kubectl ..." commands and
// their output, read by package kubetext. Their objects and events come
// after the structured files', so a structured copy of the same object
// wins; their `kubectl logs` outputs serve PodLogs for pods whose logs the
// bundle holds no file of.

// textData is what the transcripts of a bundle hold.
type textData struct {
	objs map[string][]evidence.KubeObject // by kind
	// generic are the objects of kinds without a typed reader.
	generic []evidence.GenericObject
	logs    []textLog
	skipped []textSkip
	// absent are kubectl's NotFound answers: the kind was asked about and
	// the object did not exist (no object is made of them).
	absent []textAbsence
	usage  []textUsage
	// outputs are kubectl exec outputs and other commands' outputs, kept
	// as text.
	outputs []textOutput
	// seen are the pods the commands run in them or about them show
	// (kubectl logs, exec, top pod rows), of every transcript.
	seen []kubetext.Sighting
	// releases are the Helm release revisions of helm history, helm list
	// and helm status outputs.
	releases []textRelease
}

type textRelease struct {
	file string
	kubetext.Release
}

type textOutput struct {
	file string
	kubetext.Output
}

type textAbsence struct {
	file string
	kubetext.Absence
}

type textUsage struct {
	file string
	kubetext.Usage
}

type textLog struct {
	file string
	kubetext.Log
}

type textSkip struct {
	file string
	kubetext.Skip
}

// rootTexts lists the files at the bundle root that may be terminal
// transcripts (see rootTranscript).
func rootTexts(fsys fs.FS) []string {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && rootTranscript(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// logTexts lists the *.txt files under logs/ that are terminal
// transcripts (commands typed on hosts, or kubectl): logs/ holds *.log
// files as logs, and a *.txt there is read only as a transcript.
func logTexts(fsys fs.FS) []string {
	var out []string
	_ = fs.WalkDir(fsys, "logs", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || path.Ext(p) != ".txt" || len(out) >= maxLogTexts {
			return nil
		}
		if data, err := fs.ReadFile(fsys, p); err == nil && textTranscript(p, data) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// maxLogTexts is the most transcripts read under logs/.
const maxLogTexts = 1000

// rootTranscript reports whether a file at the bundle root may hold a
// terminal transcript: *.txt, notes in Markdown (*.md), a terminal log
// (*.log, *.out) or what script(1) writes (typescript).
func rootTranscript(name string) bool {
	switch path.Ext(name) {
	case ".txt", ".md", ".log", ".out", ".typescript":
		return true
	}
	return name == "typescript"
}

// textTranscript reports whether a text file is a terminal transcript: it
// holds a kubectl command after a prompt, or, for a *.txt, it is a
// transcript of commands on hosts (systemctl status, dig, cat of a config)
// whose first line is a shell prompt and a command.
func textTranscript(name string, data []byte) bool {
	return kubetext.IsTranscript(data) || path.Ext(name) == ".txt" && kubetext.IsHostTranscript(data)
}

func (k *kubeBundle) texts(ctx context.Context) *textData {
	k.textOnce.Do(func() {
		t := &textData{objs: map[string][]evidence.KubeObject{}}
		k.text = t
		files := append(append(rootTexts(k.fsys), logTexts(k.fsys)...), k.index().text...)
		for _, name := range files {
			if ctx.Err() != nil {
				return
			}
			data, err := fs.ReadFile(k.fsys, name)
			if err != nil {
				t.skipped = append(t.skipped, textSkip{file: name, Skip: kubetext.Skip{Reason: err.Error()}})
				continue
			}
			if !textTranscript(name, data) {
				continue // not a transcript
			}
			res := kubetext.Parse(data, k.ref)
			for _, o := range res.Objects {
				obj, ok := o.(evidence.KubeObject)
				if !ok {
					continue
				}
				kind := evidence.KindOf(obj)
				if kind == "" {
					// A built-in kind without a typed reader (RuntimeClass):
					// read generically.
					if raw, err := json.Marshal(obj); err == nil {
						if g, ok := evidence.ReadGenericObject(raw); ok {
							g.Source = name
							t.generic = append(t.generic, g)
							continue
						}
					}
					t.skipped = append(t.skipped, textSkip{file: name, Skip: kubetext.Skip{Reason: fmt.Sprintf("%T %s is not a kind read", o, obj.GetName())}})
					continue
				}
				obj.SetManagedFields(nil)
				if s, ok := obj.(*corev1.Secret); ok {
					evidence.RedactSecret(s)
				}
				t.objs[kind] = append(t.objs[kind], obj)
			}
			for _, g := range res.Generic {
				g.Source = name + ":" + strings.TrimPrefix(g.Source, "line ")
				t.generic = append(t.generic, g)
			}
			for i := range res.Events {
				e := res.Events[i]
				if e.Name == "" {
					// text forms show no event names: name them by what they say
					h := fnv.New64a()
					fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\x00%s", name, i, e.InvolvedObject.Name, e.Reason, e.Message)
					e.Name = fmt.Sprintf("%s.%x", cmpOr(e.InvolvedObject.Name, "event"), h.Sum64())
				}
				if e.Namespace == "" {
					e.Namespace = e.InvolvedObject.Namespace
				}
				evidence.NormalizeEvent(&e)
				t.objs["Event"] = append(t.objs["Event"], &e)
			}
			for _, l := range res.Logs {
				t.logs = append(t.logs, textLog{file: name, Log: l})
			}
			for _, s := range res.Skipped {
				t.skipped = append(t.skipped, textSkip{file: name, Skip: s})
			}
			for _, a := range res.Absent {
				t.absent = append(t.absent, textAbsence{file: name, Absence: a})
			}
			for _, u := range res.Usage {
				t.usage = append(t.usage, textUsage{file: name, Usage: u})
			}
			for _, o := range res.Outputs {
				t.outputs = append(t.outputs, textOutput{file: name, Output: o})
			}
			t.seen = append(t.seen, res.Sightings(name)...)
			for _, r := range res.Releases {
				t.releases = append(t.releases, textRelease{file: name, Release: r})
			}
		}
		t.addSeenPods()
	})
	if k.text == nil {
		return &textData{}
	}
	return k.text
}

// addSeenPods serves the pods that transcripts show only through
// commands run in them or about them (kubectl logs POD, kubectl exec POD,
// kubectl top pod rows) as pods whose state is unknown (kubetext.SeenPods):
// the pod listing then reaches them, and their logs with it. They come
// after every other transcript object, and structured files come first,
// so any fuller form of the same pod wins.
func (t *textData) addSeenPods() {
	if len(t.seen) == 0 {
		return
	}
	have := map[string]bool{}
	for _, o := range t.objs["Pod"] {
		have[o.GetNamespace()+"/"+o.GetName()] = true
	}
	for _, a := range t.absent {
		if a.Kind == "Pod" {
			have[a.Namespace+"/"+a.Name] = true
		}
	}
	known := func(ns, name string) bool { return have[ns+"/"+name] }
	for _, p := range kubetext.SeenPods(t.seen, known) {
		t.objs["Pod"] = append(t.objs["Pod"], p)
	}
}

// helmChanges turns the Helm release revisions of transcripts into deploy
// changes of the release, one per revision (the copy whose time helm printed
// with its zone wins over the history table's wall clock), skipping those
// without a time.
func (k *kubeBundle) helmChanges(ctx context.Context) []evidence.Change {
	type key struct {
		ns, name string
		rev      int64
	}
	best := map[key]textRelease{}
	var order []key
	for _, r := range k.texts(ctx).releases {
		if r.Updated.IsZero() {
			continue
		}
		kk := key{r.Namespace, r.Name, r.Revision}
		old, seen := best[kk]
		if !seen {
			order = append(order, kk)
		}
		if !seen || r.ZoneShown && !old.ZoneShown || r.ZoneShown == old.ZoneShown && len(r.Description) > len(old.Description) {
			if seen && r.Description == "" {
				r.Description = old.Description
			}
			best[kk] = r
		}
	}
	out := make([]evidence.Change, 0, len(order))
	for _, kk := range order {
		r := best[kk]
		desc := fmt.Sprintf("helm release %s revision %d", r.Name, r.Revision)
		if r.Namespace != "" {
			desc = fmt.Sprintf("helm release %s/%s revision %d", r.Namespace, r.Name, r.Revision)
		}
		if r.Chart != "" {
			desc += " (chart " + r.Chart
			if r.AppVersion != "" {
				desc += ", app version " + r.AppVersion
			}
			desc += ")"
		}
		if r.Status != "" {
			desc += " " + r.Status
		}
		if r.Description != "" {
			desc += ": " + r.Description
		}
		if !r.ZoneShown {
			desc += " (helm printed the time without its zone: read as UTC)"
		}
		out = append(out, evidence.Change{Timestamp: r.Updated, Service: r.Name, Kind: "deploy", Description: desc,
			Revision: fmt.Sprint(r.Revision), Source: fmt.Sprintf("%s:%d", r.file, r.Line)})
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// textObjects are the objects of terminal transcripts.
func (k *kubeBundle) textObjects(ctx context.Context, kind string) []evidence.KubeObject {
	return k.texts(ctx).objs[kind]
}

// textAbsent reports whether a transcript holds kubectl's NotFound answer
// for an object of kind.
func (k *kubeBundle) textAbsent(ctx context.Context, kind string) bool {
	for _, a := range k.texts(ctx).absent {
		if a.Kind == kind {
			return true
		}
	}
	return false
}

// textLogs returns the transcript logs of a pod (a command without -n
// matches the pod in any namespace), for one container or all.
func (k *kubeBundle) textLogs(ctx context.Context, ns, pod, container string, previous bool) []textLog {
	var out []textLog
	for _, l := range k.texts(ctx).logs {
		if l.Pod != pod || l.Previous != previous || l.Namespace != "" && l.Namespace != ns ||
			container != "" && l.Container != "" && l.Container != container {
			continue
		}
		out = append(out, l)
	}
	return out
}

// textExecs returns the kubectl exec outputs of a pod (a command without -n
// matches the pod in any namespace) for one container or all;
// defaultContainer is the container an exec that named none ran in.
func (k *kubeBundle) textExecs(ctx context.Context, ns, pod, container, defaultContainer string) []textOutput {
	var out []textOutput
	for _, o := range k.texts(ctx).outputs {
		if !o.Exec || o.Pod != pod || o.Namespace != "" && o.Namespace != ns {
			continue
		}
		if c := cmpOr(o.Container, defaultContainer); container != "" && c != "" && c != container {
			continue
		}
		out = append(out, o)
	}
	return out
}

// scanTextExecs feeds the kubectl exec outputs of q's pod to col, each as
// a stream that starts with the command run ("$ curl ..."), and returns
// how many it read.
func (k *kubeBundle) scanTextExecs(ctx context.Context, q evidence.PodLogQuery, defaultContainer string, col *evidence.PodLogCollector) int {
	execs := k.textExecs(ctx, q.Namespace, q.Pod, q.Container, defaultContainer)
	for _, o := range execs {
		if o.Debug {
			// A kubectl debug container's shell is no log of the pod: it
			// stays a command output.
			continue
		}
		c := cmpOr(o.Container, cmpOr(q.Container, defaultContainer))
		src := q.Pod
		if c != "" {
			src += "/" + c
		}
		// What kubectl or the container runtime answered when the
		// command could not run (container not found, executable not
		// found, the connection not upgraded) is the tool's result, not
		// a line the container printed: it stays in CommandOutputs only.
		var lines []string
		for _, line := range o.Lines {
			if !kubetext.ExecFailure(line, o.ExitCode) {
				lines = append(lines, line)
			}
		}
		if len(lines) == 0 && len(o.Lines) > 0 {
			continue
		}
		col.StartStream()
		col.Add(src, "$ "+o.Run)
		for _, line := range lines {
			col.Add(src, line)
		}
	}
	return len(execs)
}

var _ evidence.CommandOutputReader = (*kubeBundle)(nil)

// CommandOutputs serves the command outputs of transcripts: kubectl exec
// outputs of namespace (empty: all; an exec without -n matches any), and
// every command that ran outside a pod.
func (k *kubeBundle) CommandOutputs(ctx context.Context, namespace string) ([]evidence.CommandOutput, error) {
	out := []evidence.CommandOutput{}
	for _, o := range k.texts(ctx).outputs {
		if namespace != "" && o.Namespace != "" && o.Namespace != namespace {
			continue
		}
		out = append(out, evidence.CommandOutput{Command: o.Command, Exec: o.Exec, Namespace: o.Namespace, Pod: o.Pod, Target: o.Target,
			Container: o.Container, Run: o.Run, ExitCode: o.ExitCode, Host: o.Host, Debug: o.Debug, Lines: o.Lines, Source: fmt.Sprintf("%s:%d", o.file, o.Line)})
	}
	// What users' browsers and apps reported (clientreports.go), outside
	// any namespace.
	return append(out, clientReports(k.fsys)...), nil
}

// hasPodLogFiles reports whether the bundle holds log files of a pod.
func (k *kubeBundle) hasPodLogFiles(ns, pod string) bool {
	return exists(k.fsys, path.Join(kubeDir, ns, pod))
}

var _ evidence.UsageReader = (*kubeBundle)(nil)

// Usage serves the rows of `kubectl top pod|node` in transcripts. A pod row
// of a command without -n matches any namespace asked; a reading seen twice
// (the same pod, container or node) keeps the later one.
func (k *kubeBundle) Usage(ctx context.Context, kind, namespace string) ([]evidence.Usage, error) {
	if kind != "" && kind != "Pod" && kind != "Node" {
		return nil, evidence.Errorf("kubernetes", evidence.CodeInvalid, "usage is read of pods and nodes, not %q", kind)
	}
	out := []evidence.Usage{}
	seen := map[string]int{}
	for _, u := range k.texts(ctx).usage {
		if kind != "" && u.Kind != kind || namespace != "" && u.Kind == "Pod" && u.Namespace != "" && u.Namespace != namespace {
			continue
		}
		key := u.Kind + "/" + u.Namespace + "/" + u.Name + "/" + u.Container
		e := evidence.Usage{Kind: u.Kind, Namespace: u.Namespace, Name: u.Name, Container: u.Container, CPU: u.CPU, Memory: u.Memory,
			CPUPercent: u.CPUPercent, MemoryPercent: u.MemoryPercent, Time: u.Time, Source: fmt.Sprintf("%s:%d", u.file, u.Line)}
		if i, ok := seen[key]; ok {
			out[i] = e
			continue
		}
		seen[key] = len(out)
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b evidence.Usage) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Container, b.Container))
	})
	return out, nil
}

var _ evidence.GenericObjectReader = (*kubeBundle)(nil)

// GenericObjects serves the objects of kinds without a typed reader: those
// of the -o yaml|json files (first), then those of transcripts. An object
// found twice is served once, the first copy.
func (k *kubeBundle) GenericObjects(ctx context.Context, namespace string) ([]evidence.GenericObject, error) {
	var all []evidence.GenericObject
	for _, name := range k.index().generic {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		all = append(all, k.load(name, "").generic...)
	}
	all = append(all, k.texts(ctx).generic...)
	out := []evidence.GenericObject{}
	seen := map[string]bool{}
	for _, o := range all {
		if namespace != "" && o.Namespace != "" && o.Namespace != namespace {
			continue
		}
		key := o.Kind + "/" + o.Namespace + "/" + o.Name
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, o)
	}
	slices.SortStableFunc(out, func(a, b evidence.GenericObject) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}
