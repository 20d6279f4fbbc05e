// Package capture writes an incident bundle (contract sections 5, 6.1 and
// 6.2) from live systems: every Kubernetes kind read, events, the current
// and previous logs of pods that are not ready or restarted (bounded per
// container; healthy pods' recent logs as room allows), the raw samples of
// the Prometheus series the analyst reads, traces when a trace writer is
// given, rollout history (the ReplicaSets), and bundle.json with captured_at
// and what was cut to fit the size cap. Investigating the bundle gives the
// answer a live investigation gave at capture time. Secret values are
// never read: the Kubernetes sources decode Secrets to key names only.
package capture

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/outbound"
)

// Defaults of Options.
const (
	DefaultSince    = 2 * time.Hour
	DefaultMaxBytes = 200 << 20
	// DefaultLogLines bounds the lines kept per container of a pod that is
	// not ready or restarted (the last ones, as kubectl logs --tail).
	DefaultLogLines = 5000
	// healthyLogLines bounds the lines per container of healthy pods.
	healthyLogLines = 1000
)

// TraceWriter writes the traces of [start, end] from tr to w as OTLP/JSON
// lines (traces/*.jsonl) and returns the bytes written.
type TraceWriter func(ctx context.Context, tr evidence.Traces, start, end time.Time, w io.Writer) (int64, error)

// Trace capture hooks, set by the trace backends' package when it is built
// in: OpenTraces opens the backend at a URL through the guard, and
// DefaultTraceWriter writes its traces of a window.
var (
	OpenTraces         func(url string, guard *outbound.Guard) (evidence.Traces, error)
	DefaultTraceWriter TraceWriter
)

// Options of a capture.
type Options struct {
	Out        string   // the bundle directory: must not exist or be empty
	Namespaces []string // empty: every namespace
	Since      time.Duration
	Now        time.Time // the capture time; zero: time.Now
	MaxBytes   int64     // size cap of the bundle; 0: DefaultMaxBytes
	LogLines   int       // lines per container of unhealthy pods; 0: DefaultLogLines

	Kube        evidence.Kubernetes // nil: no Kubernetes part
	Metrics     evidence.Metrics    // nil: no prometheus/
	Traces      evidence.Traces     // nil: no traces/
	TraceWriter TraceWriter         // writes traces/ when Traces is set

	Description string
	Progress    io.Writer // progress lines; nil: none
}

// Cut is one thing left out of the bundle.
type Cut struct {
	What   string `json:"what"`
	Reason string `json:"reason"`
}

// Info is bundle.json's "capture" object.
type Info struct {
	Namespaces []string `json:"namespaces,omitempty"`
	Since      string   `json:"since"`
	Sources    []string `json:"sources"`
	Files      int      `json:"files"`
	Bytes      int64    `json:"bytes"`
	MaxBytes   int64    `json:"max_bytes"`
	Cut        []Cut    `json:"cut"`
	// Errors are parts that could not be read (a kind the credentials may
	// not list, a log that failed); the rest of the bundle is complete.
	Errors []string `json:"errors,omitempty"`
}

// Manifest is bundle.json of a captured bundle.
type Manifest struct {
	CapturedAt  string `json:"captured_at"`
	Description string `json:"description"`
	Capture     Info   `json:"capture"`
}

type capturer struct {
	o     Options
	now   time.Time
	start time.Time
	info  *Info
}

// Run captures a bundle into o.Out.
func Run(ctx context.Context, o Options) (*Manifest, error) {
	if o.Out == "" {
		return nil, errors.New("capture: no output directory")
	}
	if ents, err := os.ReadDir(o.Out); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("capture: %s is not empty: capture writes a new bundle", o.Out)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("capture: %w", err)
	}
	if o.Kube == nil && o.Metrics == nil && o.Traces == nil {
		return nil, errors.New("capture: nothing to capture: no cluster, Prometheus or trace backend")
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	o.Since = cmp.Or(o.Since, DefaultSince)
	o.MaxBytes = cmp.Or(o.MaxBytes, DefaultMaxBytes)
	o.LogLines = cmp.Or(o.LogLines, DefaultLogLines)
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC().Truncate(time.Second)
	c := &capturer{o: o, now: now, start: now.Add(-o.Since),
		info: &Info{Namespaces: o.Namespaces, Since: o.Since.String(), MaxBytes: o.MaxBytes, Cut: []Cut{}, Sources: []string{}}}
	// The manifest's own bytes are reserved up front.
	c.info.Bytes = 4 << 10
	var unhealthy, healthy []corev1.Pod
	if o.Kube != nil {
		c.info.Sources = append(c.info.Sources, "kubernetes")
		var err error
		if unhealthy, healthy, err = c.kubernetes(ctx); err != nil {
			return nil, err
		}
		c.logs(ctx, unhealthy, o.LogLines, true, "pods not ready or restarted")
	}
	if o.Metrics != nil {
		c.info.Sources = append(c.info.Sources, "prometheus")
		if err := c.metrics(ctx); err != nil {
			return nil, err
		}
	}
	if o.Kube != nil {
		c.logs(ctx, healthy, healthyLogLines, false, "healthy pods")
	}
	if o.Traces != nil && o.TraceWriter != nil {
		c.info.Sources = append(c.info.Sources, "traces")
		c.traces(ctx)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := &Manifest{CapturedAt: now.Format(time.RFC3339), Description: cmp.Or(o.Description, "captured by rootcause capture"), Capture: *c.info}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	c.info.Files++
	m.Capture.Files = c.info.Files
	data, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(o.Out, "bundle.json"), append(data, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	c.progress("wrote %s: %d files, %s (cap %s), %d parts cut", o.Out, c.info.Files, size(c.info.Bytes), size(o.MaxBytes), len(c.info.Cut))
	return m, nil
}

func (c *capturer) progress(format string, args ...any) {
	if c.o.Progress != nil {
		fmt.Fprintf(c.o.Progress, "capture: "+format+"\n", args...)
	}
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// write writes one file if it fits the size cap; otherwise it records the cut.
func (c *capturer) write(rel string, data []byte, what string) bool {
	if c.info.Bytes+int64(len(data)) > c.o.MaxBytes {
		c.info.Cut = append(c.info.Cut, Cut{What: what + " (" + rel + ")", Reason: fmt.Sprintf("size cap %s reached", size(c.o.MaxBytes))})
		return false
	}
	p := filepath.Join(c.o.Out, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
		err = os.WriteFile(p, data, 0o644)
		if err == nil {
			c.info.Bytes += int64(len(data))
			c.info.Files++
			return true
		}
		c.info.Errors = append(c.info.Errors, err.Error())
	} else {
		c.info.Errors = append(c.info.Errors, err.Error())
	}
	return false
}

// listFile renders objects as a typed List, as kubectl and the API write it.
func listFile(ki evidence.KindInfo, objs []evidence.KubeObject) ([]byte, error) {
	items := make([]json.RawMessage, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok {
			s = s.DeepCopy()
			evidence.RedactSecret(s)
			o = s
		}
		b, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		items = append(items, b)
	}
	return json.MarshalIndent(map[string]any{"kind": ki.Kind + "List", "apiVersion": ki.APIVersion(), "metadata": map[string]any{}, "items": items}, "", " ")
}

// kubernetes writes every kind: kubernetes/<resource>.json for cluster
// kinds, kubernetes/<ns>/<resource>.json per namespace (empty lists too:
// they say the kind was captured), and changes.json from rollouts. It
// returns the pods whose logs to capture.
func (c *capturer) kubernetes(ctx context.Context) (unhealthy, healthy []corev1.Pod, err error) {
	k := c.o.Kube
	nss := c.o.Namespaces
	if len(nss) == 0 {
		if nss, err = k.Namespaces(ctx); err != nil {
			return nil, nil, fmt.Errorf("capture: listing namespaces: %w", err)
		}
	}
	objects := 0
	var rss []appsv1.ReplicaSet
	for _, ki := range evidence.KubeKinds {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		scopes := []string{""}
		if ki.Namespaced {
			scopes = nss
		}
		for _, ns := range scopes {
			objs, err := k.Objects(ctx, ki.Kind, ns, "")
			if err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return nil, nil, err
				}
				c.info.Errors = append(c.info.Errors, fmt.Sprintf("%s %s: %v", ki.Kind, ns, err))
				continue
			}
			if ki.Kind == "Namespace" && len(c.o.Namespaces) > 0 {
				objs = slices.DeleteFunc(slices.Clone(objs), func(o evidence.KubeObject) bool { return !slices.Contains(c.o.Namespaces, o.GetName()) })
			}
			data, err := listFile(ki, objs)
			if err != nil {
				return nil, nil, err
			}
			rel := "kubernetes/" + ki.Resource + ".json"
			if ns != "" {
				rel = "kubernetes/" + ns + "/" + ki.Resource + ".json"
			}
			if c.write(rel, data, fmt.Sprintf("%d %s objects", len(objs), ki.Kind)) {
				objects += len(objs)
			}
			for _, o := range objs {
				switch x := o.(type) {
				case *corev1.Pod:
					if podNeedsLogs(x) {
						unhealthy = append(unhealthy, *x)
					} else if x.Status.Phase == corev1.PodRunning || x.Status.Phase == corev1.PodSucceeded {
						healthy = append(healthy, *x) // completed Jobs' pods too
					}
				case *appsv1.ReplicaSet:
					rss = append(rss, *x)
				}
			}
		}
	}
	c.progress("kubernetes: %d objects of %d kinds in %d namespaces", objects, len(evidence.KubeKinds), len(nss))
	// Rollout history travels as the ReplicaSets themselves (their
	// deployment.kubernetes.io/revision and pod templates): list_changes
	// turns them into deploy changes on the bundle exactly as on the live
	// cluster. A changes.json of the same rollouts would be read as recorded
	// changes and change the investigation's wording, so none is written.
	if n := len(tools.RolloutChanges(rss, c.start, c.now, "")); n > 0 {
		c.progress("changes: %d rollouts since %s (in the ReplicaSets)", n, c.start.Format(time.RFC3339))
	}
	return unhealthy, healthy, nil
}

// podNeedsLogs reports a pod that is not ready or whose containers restarted.
func podNeedsLogs(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if !evidence.PodReady(p) {
		return true
	}
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if cs.RestartCount > 0 {
			return true
		}
	}
	return false
}

// logs writes logs.txt (kubectl's per-container sections) and, for
// unhealthy pods, logs-<container>-previous.txt, as cluster-info dump does.
func (c *capturer) logs(ctx context.Context, pods []corev1.Pod, lines int, previous bool, what string) {
	containers := 0
	for i := range pods {
		if ctx.Err() != nil {
			return
		}
		p := &pods[i]
		var names []string
		for _, ct := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			names = append(names, ct.Name)
		}
		var cur bytes.Buffer
		for _, ct := range names {
			q := evidence.PodLogQuery{Namespace: p.Namespace, Pod: p.Name, Container: ct, Limit: lines}
			if !previous {
				q.Since = c.start
			}
			res, err := c.o.Kube.PodLogs(ctx, q)
			if err != nil {
				if evidence.CodeOf(err) != evidence.CodeNotFound {
					c.info.Errors = append(c.info.Errors, fmt.Sprintf("logs of %s/%s/%s: %v", p.Namespace, p.Name, ct, err))
				}
				continue
			}
			if len(res.Lines) == 0 {
				continue
			}
			containers++
			fmt.Fprintf(&cur, "==== START logs for container %s of pod %s/%s ====\n", ct, p.Namespace, p.Name)
			for _, l := range res.Lines {
				cur.WriteString(l.Text)
				cur.WriteByte('\n')
			}
			fmt.Fprintf(&cur, "==== END logs for container %s of pod %s/%s ====\n", ct, p.Namespace, p.Name)
			if res.Truncated {
				c.info.Cut = append(c.info.Cut, Cut{What: fmt.Sprintf("logs of %s/%s container %s: the first %d of %d lines", p.Namespace, p.Name, ct, res.Matched-len(res.Lines), res.Matched),
					Reason: fmt.Sprintf("%d lines kept per container", lines)})
			}
		}
		dir := "kubernetes/" + p.Namespace + "/" + p.Name + "/"
		if cur.Len() > 0 {
			c.write(dir+"logs.txt", cur.Bytes(), "logs of "+p.Namespace+"/"+p.Name)
		}
		if !previous {
			continue
		}
		for _, ct := range names {
			res, err := c.o.Kube.PodLogs(ctx, evidence.PodLogQuery{Namespace: p.Namespace, Pod: p.Name, Container: ct, Previous: true, Limit: lines})
			if err != nil || len(res.Lines) == 0 {
				if err != nil && evidence.CodeOf(err) != evidence.CodeNotFound {
					c.info.Errors = append(c.info.Errors, fmt.Sprintf("previous logs of %s/%s/%s: %v", p.Namespace, p.Name, ct, err))
				}
				continue
			}
			var b bytes.Buffer
			for _, l := range res.Lines {
				b.WriteString(l.Text)
				b.WriteByte('\n')
			}
			if c.write(dir+"logs-"+ct+"-previous.txt", b.Bytes(), "previous logs of "+p.Namespace+"/"+p.Name+" container "+ct) {
				containers++
			}
		}
	}
	c.progress("logs: %d container logs of %d %s", containers, len(pods), what)
}

// metrics writes prometheus/capture.om: the raw samples of [start, now] of
// every series, the metrics the analyst reads first, until the size cap.
func (c *capturer) metrics(ctx context.Context) error {
	sets, err := c.o.Metrics.SeriesSet(ctx, "", c.start, c.now)
	if err != nil {
		c.info.Errors = append(c.info.Errors, "prometheus: "+err.Error())
		c.progress("prometheus: %v", err)
		return nil
	}
	counts := map[string]int{}
	for _, l := range sets {
		counts[l["__name__"]]++
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		if n != "" {
			names = append(names, n)
		}
	}
	// The analyst's health metrics first, then the rest, each by name.
	slices.SortFunc(names, func(a, b string) int {
		ca, _ := analyst.ClassifyMetric(a)
		cb, _ := analyst.ClassifyMetric(b)
		return cmp.Or(cmp.Compare(boolInt(ca == ""), boolInt(cb == "")), cmp.Compare(a, b))
	})
	var out bytes.Buffer
	written, samples := 0, 0
	budget := c.o.MaxBytes - c.info.Bytes
	secs := int64(math.Ceil(c.now.Sub(c.start).Seconds()))
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		ss, err := c.o.Metrics.Query(ctx, fmt.Sprintf("{__name__=%q}[%ds]", n, secs), c.now)
		if err != nil {
			c.info.Errors = append(c.info.Errors, fmt.Sprintf("prometheus %s: %v", n, err))
			continue
		}
		var fam bytes.Buffer
		k := writeFamily(&fam, n, ss)
		if int64(out.Len()+fam.Len()+len("# EOF\n")) > budget {
			c.info.Cut = append(c.info.Cut, Cut{What: fmt.Sprintf("metric %s (%d series)", n, len(ss)), Reason: fmt.Sprintf("size cap %s reached", size(c.o.MaxBytes))})
			continue
		}
		out.Write(fam.Bytes())
		written++
		samples += k
	}
	out.WriteString("# EOF\n")
	if written > 0 {
		c.write("prometheus/capture.om", out.Bytes(), "metrics")
	}
	c.progress("prometheus: %d of %d metrics, %d samples since %s", written, len(names), samples, c.start.Format(time.RFC3339))
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeFamily writes one metric's series as OpenMetrics lines with
// timestamps (the input of promtool tsdb create-blocks-from openmetrics)
// and returns the samples written.
func writeFamily(w *bytes.Buffer, name string, ss []evidence.Series) int {
	n := 0
	slices.SortFunc(ss, func(a, b evidence.Series) int { return cmp.Compare(labelString(a.Labels), labelString(b.Labels)) })
	for _, s := range ss {
		ls := labelString(s.Labels)
		var last time.Time
		for _, p := range s.Points {
			if !p.T.After(last) && !last.IsZero() {
				continue
			}
			last = p.T
			w.WriteString(name)
			w.WriteString(ls)
			w.WriteByte(' ')
			w.WriteString(formatValue(p.V))
			w.WriteByte(' ')
			ms := p.T.UnixMilli()
			w.WriteString(strconv.FormatInt(ms/1000, 10))
			if r := ms % 1000; r != 0 {
				fmt.Fprintf(w, ".%03d", r)
			}
			w.WriteByte('\n')
			n++
		}
	}
	return n
}

func labelString(l evidence.Labels) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(l[k]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// traces writes traces/capture.jsonl through the trace writer.
func (c *capturer) traces(ctx context.Context) {
	var b bytes.Buffer
	if _, err := c.o.TraceWriter(ctx, c.o.Traces, c.start, c.now, &b); err != nil {
		c.info.Errors = append(c.info.Errors, "traces: "+err.Error())
	}
	if b.Len() > 0 {
		c.write("traces/capture.jsonl", b.Bytes(), "traces")
	}
	c.progress("traces: %s", size(int64(b.Len())))
}
