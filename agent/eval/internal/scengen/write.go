package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ---- writing the bundle ----

func jsonIndent(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "    ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func (w *World) writeKubernetes() {
	if len(w.Nodes) == 0 && len(w.NS) == 0 {
		return
	}
	w.finalize()
	nodes := corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: w.nextRV()}}
	for _, n := range w.Nodes {
		nodes.Items = append(nodes.Items, *n)
	}
	if nodes.Items == nil {
		nodes.Items = []corev1.Node{}
	}
	w.Files["kubernetes/nodes.json"] = jsonIndent(nodes)
	sort.Slice(w.NS, func(i, j int) bool { return w.NS[i].Name < w.NS[j].Name })
	for _, ns := range w.NS {
		dir := "kubernetes/" + ns.Name + "/"
		sortEvents(ns.Events)
		if ns.NewEvents {
			// As `kubectl get events,events.v1.events.k8s.io -o json` writes: a
			// "kind: List" whose items carry their own apiVersion. Events of
			// the kubelet stay core/v1; those of controllers and the scheduler
			// are events.k8s.io/v1 (eventTime, series, regarding, note).
			items := []any{}
			for _, e := range ns.Events {
				if e.Source.Component == "kubelet" {
					ce := *e
					ce.TypeMeta = metav1.TypeMeta{Kind: "Event", APIVersion: "v1"}
					items = append(items, ce)
					continue
				}
				ne := toNewEvent(e)
				ne.TypeMeta = metav1.TypeMeta{Kind: "Event", APIVersion: "events.k8s.io/v1"}
				items = append(items, ne)
			}
			w.Files[dir+"events.json"] = jsonIndent(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]string{"resourceVersion": ""}, "items": items})
		} else {
			l := corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: w.nextRV()}, Items: []corev1.Event{}}
			for _, e := range ns.Events {
				l.Items = append(l.Items, *e)
			}
			w.Files[dir+"events.json"] = jsonIndent(l)
		}
		sort.SliceStable(ns.Pods, func(i, j int) bool { return ns.Pods[i].Name < ns.Pods[j].Name })
		pl := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: w.nextRV()}, Items: []corev1.Pod{}}
		for _, p := range ns.Pods {
			pl.Items = append(pl.Items, *p)
		}
		w.Files[dir+"pods.json"] = jsonIndent(pl)
		dl := appsv1.DeploymentList{TypeMeta: metav1.TypeMeta{Kind: "DeploymentList", APIVersion: "apps/v1"}, ListMeta: metav1.ListMeta{ResourceVersion: w.nextRV()}, Items: []appsv1.Deployment{}}
		sort.SliceStable(ns.Deps, func(i, j int) bool { return ns.Deps[i].Name < ns.Deps[j].Name })
		for _, d := range ns.Deps {
			dl.Items = append(dl.Items, *d)
		}
		w.Files[dir+"deployments.json"] = jsonIndent(dl)
		rl := appsv1.ReplicaSetList{TypeMeta: metav1.TypeMeta{Kind: "ReplicaSetList", APIVersion: "apps/v1"}, ListMeta: metav1.ListMeta{ResourceVersion: w.nextRV()}, Items: []appsv1.ReplicaSet{}}
		sort.SliceStable(ns.RSs, func(i, j int) bool { return ns.RSs[i].Name < ns.RSs[j].Name })
		for _, r := range ns.RSs {
			rl.Items = append(rl.Items, *r)
		}
		w.Files[dir+"replicasets.json"] = jsonIndent(rl)
		sl := corev1.ServiceList{TypeMeta: metav1.TypeMeta{Kind: "ServiceList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: w.nextRV()}, Items: []corev1.Service{}}
		sort.SliceStable(ns.Svcs, func(i, j int) bool { return ns.Svcs[i].Name < ns.Svcs[j].Name })
		for _, s := range ns.Svcs {
			sl.Items = append(sl.Items, *s)
		}
		w.Files[dir+"services.json"] = jsonIndent(sl)
		dsl := appsv1.DaemonSetList{TypeMeta: metav1.TypeMeta{Kind: "DaemonSetList", APIVersion: "apps/v1"}, ListMeta: metav1.ListMeta{ResourceVersion: w.nextRV()}, Items: []appsv1.DaemonSet{}}
		for _, d := range ns.DSs {
			dsl.Items = append(dsl.Items, *d)
		}
		w.Files[dir+"daemonsets.json"] = jsonIndent(dsl)
		rcl := corev1.ReplicationControllerList{TypeMeta: metav1.TypeMeta{Kind: "ReplicationControllerList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: w.nextRV()}, Items: []corev1.ReplicationController{}}
		w.Files[dir+"replication-controllers.json"] = jsonIndent(rcl)
		for _, p := range ns.Pods {
			var sb strings.Builder
			secs := ns.Logs[p.Name]
			for _, c := range p.Spec.Containers {
				fmt.Fprintf(&sb, "==== START logs for container %s of pod %s/%s ====\n", c.Name, p.Namespace, p.Name)
				for _, s := range secs {
					if s.container == c.Name {
						sb.WriteString(s.text)
						if s.text != "" && !strings.HasSuffix(s.text, "\n") {
							sb.WriteByte('\n')
						}
					}
				}
				fmt.Fprintf(&sb, "==== END logs for container %s of pod %s/%s ====\n", c.Name, p.Namespace, p.Name)
			}
			w.Files[dir+p.Name+"/logs.txt"] = []byte(sb.String())
			for c, text := range ns.Prev[p.Name] {
				w.Files[dir+p.Name+"/logs-"+c+"-previous.txt"] = []byte(text)
			}
		}
	}
}

// Scenario is scenario.json.
type Scenario struct {
	Title   string            `json:"title"`
	Now     string            `json:"now"`
	Request ScenarioRequest   `json:"request"`
	Expect  *ScenarioExpect   `json:"expect,omitempty"`
	Extra   map[string]string `json:"-"`
}

// ScenarioRequest is the request of a scenario.
type ScenarioRequest struct {
	AgentName string            `json:"agent_name"`
	Message   string            `json:"message"`
	Context   map[string]string `json:"context,omitempty"`
}

// ScenarioExpect is the expectation of a scenario.
type ScenarioExpect struct {
	RootCauseAny       [][]string `json:"root_cause_any,omitempty"`
	AffectedSystemsAll []string   `json:"affected_systems_all,omitempty"`
	MinEvidence        int        `json:"min_evidence,omitempty"`
	MinTimeline        int        `json:"min_timeline,omitempty"`
	ToolsUsedAny       []string   `json:"tools_used_any,omitempty"`
}

func (w *World) write(root, description string, sc *Scenario) error {
	w.writeKubernetes()
	w.Files["bundle.json"] = jsonIndent(map[string]string{"captured_at": w.Now.Format(time.RFC3339), "description": description})
	if sc != nil {
		sc.Now = w.Now.Format(time.RFC3339)
		w.Files["scenario.json"] = jsonIndent(sc)
	}
	dir := filepath.Join(root, w.Name)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	names := make([]string, 0, len(w.Files))
	for n := range w.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, w.Files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ---- OpenMetrics ----

// OM builds one OpenMetrics file over a window.
type OM struct {
	w           *World
	sb          strings.Builder
	Start, End  time.Time
	Step        time.Duration
	family      string
	familyCount int
}

func (w *World) om(window, step time.Duration) *OM {
	end := w.Now.Truncate(step)
	return &OM{w: w, Start: end.Add(-window), End: end, Step: step}
}

func (o *OM) times() []time.Time {
	var ts []time.Time
	for t := o.Start; !t.After(o.End); t = t.Add(o.Step) {
		ts = append(ts, t)
	}
	return ts
}

// Family starts a metric family.
func (o *OM) Family(name, typ, help string) {
	fmt.Fprintf(&o.sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	o.family = name
}

func fmtVal(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// noise returns a multiplicative jitter factor around 1.
func (o *OM) noise(frac float64) float64 { return 1 + o.w.R.NormFloat64()*frac }

// Gauge writes one gauge series; f gives the value at t (before jitter).
func (o *OM) Gauge(labels string, jitter float64, f func(t time.Time) float64) {
	for _, t := range o.times() {
		base := f(t)
		if math.IsNaN(base) {
			continue
		}
		v := base * o.noise(jitter)
		if math.Abs(v) >= 1000 {
			v = math.Round(v)
		}
		fmt.Fprintf(&o.sb, "%s{%s} %s %d\n", o.family, labels, fmtVal(round(v, 4)), t.Unix())
	}
}

// GaugeExact writes one gauge series without jitter (for states and limits).
func (o *OM) GaugeExact(labels string, f func(t time.Time) float64) {
	for _, t := range o.times() {
		v := f(t)
		if math.IsNaN(v) {
			continue
		}
		fmt.Fprintf(&o.sb, "%s{%s} %s %d\n", o.family, labels, fmtVal(v), t.Unix())
	}
}

// Counter writes one counter series (sample name <family>_total) that grows
// at rate(t) per second with jitter; base is the value at the start.
func (o *OM) Counter(labels string, base float64, rate func(t time.Time) float64) {
	v := base
	for i, t := range o.times() {
		r := rate(t)
		if math.IsNaN(r) {
			continue
		}
		if i > 0 {
			inc := r * o.Step.Seconds() * o.noise(0.08)
			if inc < 0 {
				inc = 0
			}
			v += math.Round(inc)
		}
		fmt.Fprintf(&o.sb, "%s_total{%s} %s %d\n", o.family, labels, fmtVal(v), t.Unix())
	}
}

// CounterSteps writes a counter that increases by whole steps at given times
// (restarts and the like).
func (o *OM) CounterSteps(labels string, base float64, at []time.Time) {
	for _, t := range o.times() {
		v := base
		for _, a := range at {
			if !a.After(t) {
				v++
			}
		}
		fmt.Fprintf(&o.sb, "%s_total{%s} %s %d\n", o.family, labels, fmtVal(v), t.Unix())
	}
}

var latencyBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// Histogram writes one histogram series: rate(t) observations per second with
// a log-normal latency of median p50(t) seconds.
func (o *OM) Histogram(labels string, rate, p50 func(t time.Time) float64) {
	counts := make([]float64, len(latencyBuckets))
	var total, sum float64
	sep := ""
	if labels != "" {
		sep = ","
	}
	for i, t := range o.times() {
		if i > 0 {
			n := math.Round(rate(t) * o.Step.Seconds() * o.noise(0.08))
			if n < 0 {
				n = 0
			}
			med := p50(t) * o.noise(0.06)
			const sigma = 0.7
			for b, le := range latencyBuckets {
				z := (math.Log(le) - math.Log(med)) / sigma
				counts[b] += math.Round(n * 0.5 * math.Erfc(-z/math.Sqrt2))
			}
			total += n
			sum += n * med * math.Exp(sigma*sigma/2)
		}
		for b, le := range latencyBuckets {
			c := math.Min(counts[b], total)
			if b > 0 {
				c = math.Max(c, math.Min(counts[b-1], total))
				counts[b] = c
			}
			fmt.Fprintf(&o.sb, "%s_bucket{%s%sle=\"%s\"} %s %d\n", o.family, labels, sep, strconv.FormatFloat(le, 'f', -1, 64), fmtVal(c), t.Unix())
		}
		fmt.Fprintf(&o.sb, "%s_bucket{%s%sle=\"+Inf\"} %s %d\n", o.family, labels, sep, fmtVal(total), t.Unix())
		fmt.Fprintf(&o.sb, "%s_count{%s} %s %d\n", o.family, labels, fmtVal(total), t.Unix())
		fmt.Fprintf(&o.sb, "%s_sum{%s} %s %d\n", o.family, labels, fmtVal(round(sum, 3)), t.Unix())
	}
}

// Save writes the file as prometheus/<name>.om.
func (o *OM) Save(name string) {
	o.sb.WriteString("# EOF\n")
	o.w.Files["prometheus/"+name+".om"] = []byte(o.sb.String())
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// ---- shapes over time ----

// step is a before/after level switching at t0, ramping over ramp.
func step(t0 time.Time, before, after float64, ramp time.Duration) func(time.Time) float64 {
	return func(t time.Time) float64 {
		switch {
		case t.Before(t0):
			return before
		case ramp <= 0 || t.After(t0.Add(ramp)):
			return after
		default:
			f := float64(t.Sub(t0)) / float64(ramp)
			return before + (after-before)*f
		}
	}
}

// diurnal is a gentle daily wave around level.
func diurnal(level, amp float64) func(time.Time) float64 {
	return func(t time.Time) float64 {
		h := float64(t.Hour()) + float64(t.Minute())/60
		return level * (1 + amp*math.Sin((h-9)/24*2*math.Pi))
	}
}

func constant(v float64) func(time.Time) float64 { return func(time.Time) float64 { return v } }

// ---- log text ----

// Lines collects timestamped log lines.
type Lines struct {
	w     *World
	lines []tl
}

type tl struct {
	t    time.Time
	text string
}

func (w *World) lines() *Lines { return &Lines{w: w} }

// Add adds one line at t; format receives the time.
func (l *Lines) Add(t time.Time, text string) { l.lines = append(l.lines, tl{t, text}) }

// Every adds lines from start to end with a mean gap, jittered; fn returns
// the text ("" to skip).
func (l *Lines) Every(start, end time.Time, gap time.Duration, fn func(t time.Time, i int) string) {
	i := 0
	for t := start.Add(time.Duration(l.w.R.Float64() * float64(gap))); t.Before(end); t = t.Add(time.Duration(float64(gap) * (0.3 + 1.4*l.w.R.Float64()))) {
		t := t.Add(time.Duration(l.w.R.IntN(1000)) * time.Millisecond)
		if !t.Before(end) {
			break
		}
		if s := fn(t, i); s != "" {
			l.lines = append(l.lines, tl{t, s})
		}
		i++
	}
}

// String renders the lines in time order.
func (l *Lines) String() string {
	sort.SliceStable(l.lines, func(i, j int) bool { return l.lines[i].t.Before(l.lines[j].t) })
	var sb strings.Builder
	for _, x := range l.lines {
		sb.WriteString(x.text)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// ts formats a log timestamp with milliseconds (RFC 3339).
func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// pick returns one of xs.
func (w *World) pick(xs ...string) string { return xs[w.R.IntN(len(xs))] }

// reqID returns a request id.
func (w *World) reqID() string {
	return w.hex(8) + "-" + w.hex(4) + "-" + w.hex(4) + "-" + w.hex(4) + "-" + w.hex(12)
}

// ---- changes and cloudwatch ----

// Change is one entry of changes.json.
type Change struct {
	Timestamp   string `json:"timestamp"`
	Service     string `json:"service"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
	Revision    string `json:"revision,omitempty"`
	Author      string `json:"author,omitempty"`
}

func (w *World) changes(cs ...Change) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Timestamp < cs[j].Timestamp })
	w.Files["changes.json"] = jsonIndent(cs)
}

func chg(t time.Time, service, kind, desc, rev, author string) Change {
	return Change{Timestamp: t.UTC().Format(time.RFC3339), Service: service, Kind: kind, Description: desc, Revision: rev, Author: author}
}

// cwLogs writes cloudwatch/logs/<group>.jsonl from lines.
func (w *World) cwLogs(group string, l *Lines) {
	sort.SliceStable(l.lines, func(i, j int) bool { return l.lines[i].t.Before(l.lines[j].t) })
	var sb strings.Builder
	for _, x := range l.lines {
		b, _ := json.Marshal(struct {
			Timestamp int64  `json:"timestamp"`
			Message   string `json:"message"`
		}{x.t.UnixMilli(), x.text})
		sb.Write(b)
		sb.WriteByte('\n')
	}
	w.Files["cloudwatch/logs/"+strings.TrimPrefix(group, "/")+".jsonl"] = []byte(sb.String())
}

// CWMetric is one metric of metrics.json.
type CWMetric struct {
	ID, Namespace, Name, Stat string
	Dims                      [][2]string
	Period                    time.Duration
	Start, End                time.Time
	F                         func(t time.Time) float64
	Jitter                    float64
	Integer                   bool
}

func (w *World) cwMetrics(ms ...CWMetric) {
	type dim struct{ Name, Value string }
	type result struct {
		Id         string
		Label      string
		Timestamps []string
		Values     []float64
		StatusCode string
		// What the result measures (the query's MetricStat), kept with it.
		Namespace  string
		MetricName string
		Dimensions []dim
		Stat       string
		Period     int
	}
	var rs []result
	for _, m := range ms {
		ds := []dim{}
		for _, d := range m.Dims {
			ds = append(ds, dim{d[0], d[1]})
		}
		r := result{Id: m.ID, Label: m.Name, StatusCode: "Complete", Timestamps: []string{}, Values: []float64{},
			Namespace: m.Namespace, MetricName: m.Name, Dimensions: ds, Stat: m.Stat, Period: int(m.Period.Seconds())}
		// GetMetricData returns newest first by default (TimestampDescending).
		for t := m.End.Truncate(m.Period); !t.Before(m.Start); t = t.Add(-m.Period) {
			v := m.F(t) * (1 + w.R.NormFloat64()*m.Jitter)
			if v < 0 {
				v = 0
			}
			if m.Integer {
				v = math.Round(v)
			} else {
				v = round(v, 2)
			}
			r.Timestamps = append(r.Timestamps, t.UTC().Format("2006-01-02T15:04:05Z"))
			r.Values = append(r.Values, v)
		}
		rs = append(rs, r)
	}
	w.Files["cloudwatch/metrics.json"] = jsonIndent(map[string]any{"MetricDataResults": rs, "Messages": []any{}})
}
