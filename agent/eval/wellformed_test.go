package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// scenarioDirs lists the public scenarios.
func scenarioDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	if len(out) < 13 {
		t.Fatalf("found %d scenarios under testdata/scenarios, want at least 13", len(out))
	}
	return out
}

// strictJSON decodes data into v rejecting unknown fields, so a misspelt
// Kubernetes field is an error rather than silently dropped.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// checker collects problems of one scenario.
type checker struct {
	t    *testing.T
	dir  string
	now  time.Time
	errs []string
}

func (c *checker) errf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *checker) notAfterNow(what string, t time.Time) {
	if !t.IsZero() && t.After(c.now) {
		c.errf("%s: %s is after now %s", what, t.Format(time.RFC3339), c.now.Format(time.RFC3339))
	}
}

func (c *checker) read(rel string) []byte {
	data, err := os.ReadFile(filepath.Join(c.dir, rel))
	if err != nil {
		c.errf("%v", err)
	}
	return data
}

// typedList checks a typed kubectl List: kind, apiVersion, resourceVersion.
func (c *checker) typedList(rel string, data []byte, kind, apiVersion string, v any) bool {
	var tm struct {
		metav1.TypeMeta
		Metadata metav1.ListMeta `json:"metadata"`
	}
	if err := json.Unmarshal(data, &tm); err != nil {
		c.errf("%s: %v", rel, err)
		return false
	}
	if tm.Kind != kind || tm.APIVersion != apiVersion || tm.Metadata.ResourceVersion == "" {
		c.errf("%s: kind/apiVersion/resourceVersion = %q/%q/%q, want %s/%s with a resourceVersion", rel, tm.Kind, tm.APIVersion, tm.Metadata.ResourceVersion, kind, apiVersion)
	}
	if err := strictJSON(data, v); err != nil {
		c.errf("%s: decoding as %s: %v", rel, kind, err)
		return false
	}
	return true
}

func (c *checker) events(rel string, data []byte) {
	var head struct {
		Kind       string            `json:"kind"`
		APIVersion string            `json:"apiVersion"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		c.errf("%s: %v", rel, err)
		return
	}
	switch {
	case head.Kind == "EventList" && head.APIVersion == "v1":
		var l corev1.EventList
		if c.typedList(rel, data, "EventList", "v1", &l) {
			for _, e := range l.Items {
				c.coreEvent(rel, &e)
			}
		}
	case head.Kind == "List":
		for i, raw := range head.Items {
			var tm metav1.TypeMeta
			_ = json.Unmarshal(raw, &tm)
			switch tm.APIVersion {
			case "v1":
				var e corev1.Event
				if err := strictJSON(raw, &e); err != nil {
					c.errf("%s: items[%d]: %v", rel, i, err)
					continue
				}
				c.coreEvent(rel, &e)
			case "events.k8s.io/v1":
				var e eventsv1.Event
				if err := strictJSON(raw, &e); err != nil {
					c.errf("%s: items[%d]: %v", rel, i, err)
					continue
				}
				if e.EventTime.IsZero() || e.Regarding.Name == "" || e.Note == "" || e.ReportingController == "" {
					c.errf("%s: items[%d]: events.k8s.io event lacks eventTime, regarding, note or reportingController", rel, i)
				}
				c.notAfterNow(rel+": "+e.Name+" eventTime", e.EventTime.Time)
				if e.Series != nil {
					c.notAfterNow(rel+": "+e.Name+" series.lastObservedTime", e.Series.LastObservedTime.Time)
					if e.Series.LastObservedTime.Before(&e.EventTime) {
						c.errf("%s: %s: series.lastObservedTime before eventTime", rel, e.Name)
					}
				}
			default:
				c.errf("%s: items[%d]: apiVersion %q is neither v1 nor events.k8s.io/v1", rel, i, tm.APIVersion)
			}
		}
	default:
		c.errf("%s: kind %q apiVersion %q, want EventList v1 or List", rel, head.Kind, head.APIVersion)
	}
}

func (c *checker) coreEvent(rel string, e *corev1.Event) {
	what := rel + ": event " + e.Name
	if e.InvolvedObject.Kind == "" || e.InvolvedObject.Name == "" || e.Reason == "" || e.Message == "" || e.Source.Component == "" || e.Count < 1 {
		c.errf("%s: lacks involvedObject, reason, message, source.component or count", what)
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		c.errf("%s: type %q", what, e.Type)
	}
	c.notAfterNow(what+" lastTimestamp", e.LastTimestamp.Time)
	if e.LastTimestamp.Before(&e.FirstTimestamp) {
		c.errf("%s: lastTimestamp before firstTimestamp", what)
	}
	if c.now.Sub(e.LastTimestamp.Time) > 75*time.Minute {
		c.errf("%s: last seen %s before now; the API server keeps events about an hour", what, c.now.Sub(e.LastTimestamp.Time))
	}
}

func (c *checker) pod(rel string, p *corev1.Pod, rss map[string]*appsv1.ReplicaSet, dss map[string]*appsv1.DaemonSet) {
	what := rel + ": pod " + p.Name
	c.notAfterNow(what+" creationTimestamp", p.CreationTimestamp.Time)
	if p.Status.StartTime != nil {
		c.notAfterNow(what+" startTime", p.Status.StartTime.Time)
	}
	if len(p.OwnerReferences) != 1 {
		c.errf("%s: %d ownerReferences, want 1", what, len(p.OwnerReferences))
		return
	}
	o := p.OwnerReferences[0]
	switch o.Kind {
	case "ReplicaSet":
		rs := rss[o.Name]
		if rs == nil || rs.UID != o.UID {
			c.errf("%s: owner ReplicaSet %s (uid %s) is not in replicasets.json", what, o.Name, o.UID)
			break
		}
		if h := p.Labels["pod-template-hash"]; h == "" || rs.Labels["pod-template-hash"] != h || !strings.HasSuffix(rs.Name, "-"+h) {
			c.errf("%s: pod-template-hash %q does not match ReplicaSet %s", what, h, rs.Name)
		}
	case "DaemonSet":
		if ds := dss[o.Name]; ds == nil || ds.UID != o.UID {
			c.errf("%s: owner DaemonSet %s is not in daemonsets.json", what, o.Name)
		}
	case "Job":
		// cluster-info dump does not write Jobs.
	default:
		c.errf("%s: unexpected owner kind %s", what, o.Kind)
	}
	if p.Spec.NodeName != "" && len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		c.errf("%s: %d container statuses for %d containers", what, len(p.Status.ContainerStatuses), len(p.Spec.Containers))
	}
	for _, cs := range p.Status.ContainerStatuses {
		for _, st := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
			if term := st.Terminated; term != nil {
				c.notAfterNow(what+" terminated.finishedAt", term.FinishedAt.Time)
				if term.FinishedAt.Before(&term.StartedAt) {
					c.errf("%s: container %s finished before it started", what, cs.Name)
				}
				if term.Reason == "" {
					c.errf("%s: container %s terminated without a reason", what, cs.Name)
				}
			}
			if r := st.Running; r != nil {
				c.notAfterNow(what+" running.startedAt", r.StartedAt.Time)
			}
		}
		if lt := cs.LastTerminationState.Terminated; lt != nil && cs.State.Running != nil && cs.State.Running.StartedAt.Before(&lt.FinishedAt) {
			c.errf("%s: container %s running since before its last termination ended", what, cs.Name)
		}
		if cs.RestartCount > 0 && cs.LastTerminationState.Terminated == nil {
			c.errf("%s: container %s restarted %d times but has no lastState.terminated", what, cs.Name, cs.RestartCount)
		}
	}
}

var logSection = regexp.MustCompile(`^==== (START|END) logs for container (\S+) of pod (\S+)/(\S+) ====$`)

func (c *checker) podLogs(ns string, p *corev1.Pod) {
	rel := filepath.Join("kubernetes", ns, p.Name, "logs.txt")
	data, err := os.ReadFile(filepath.Join(c.dir, rel))
	if err != nil {
		c.errf("%s: cluster-info dump writes one per pod: %v", rel, err)
		return
	}
	var order []string
	open := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := logSection.FindStringSubmatch(line)
		if m == nil {
			if open == "" {
				c.errf("%s:%d: text outside a container section", rel, n)
			}
			c.logTime(rel, n, line)
			continue
		}
		if m[3] != ns || m[4] != p.Name {
			c.errf("%s:%d: section names pod %s/%s", rel, n, m[3], m[4])
		}
		switch {
		case m[1] == "START" && open == "":
			open = m[2]
			order = append(order, m[2])
		case m[1] == "END" && open == m[2]:
			open = ""
		default:
			c.errf("%s:%d: unbalanced section marker", rel, n)
		}
	}
	if open != "" {
		c.errf("%s: section of %s not closed", rel, open)
	}
	var want []string
	for _, ctr := range p.Spec.Containers {
		want = append(want, ctr.Name)
	}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		c.errf("%s: sections %v, want one per container %v", rel, order, want)
	}
}

var leadingTime = regexp.MustCompile(`^(?:\{"ts":"|time=|\[)?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))`)

// logTime checks that a timestamped log line is not after now.
func (c *checker) logTime(rel string, n int, line string) {
	m := leadingTime.FindStringSubmatch(line)
	if m == nil {
		return
	}
	t, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		c.errf("%s:%d: bad timestamp %q", rel, n, m[1])
		return
	}
	c.notAfterNow(fmt.Sprintf("%s:%d", rel, n), t)
}

func (c *checker) kubernetes() {
	root := filepath.Join(c.dir, "kubernetes")
	if _, err := os.Stat(root); err != nil {
		return
	}
	var nodes corev1.NodeList
	c.typedList("kubernetes/nodes.json", c.read("kubernetes/nodes.json"), "NodeList", "v1", &nodes)
	for _, n := range nodes.Items {
		if len(n.Status.Conditions) < 4 || n.Status.NodeInfo.KubeletVersion == "" || len(n.Status.Addresses) == 0 {
			c.errf("kubernetes/nodes.json: node %s lacks conditions, nodeInfo or addresses", n.Name)
		}
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		c.errf("%v", err)
		return
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		ns := e.Name()
		p := func(f string) string { return filepath.Join("kubernetes", ns, f) }
		var pods corev1.PodList
		var deps appsv1.DeploymentList
		var rsl appsv1.ReplicaSetList
		var svcs corev1.ServiceList
		var dsl appsv1.DaemonSetList
		var rcs corev1.ReplicationControllerList
		c.typedList(p("pods.json"), c.read(p("pods.json")), "PodList", "v1", &pods)
		c.typedList(p("deployments.json"), c.read(p("deployments.json")), "DeploymentList", "apps/v1", &deps)
		c.typedList(p("replicasets.json"), c.read(p("replicasets.json")), "ReplicaSetList", "apps/v1", &rsl)
		c.typedList(p("services.json"), c.read(p("services.json")), "ServiceList", "v1", &svcs)
		c.typedList(p("daemonsets.json"), c.read(p("daemonsets.json")), "DaemonSetList", "apps/v1", &dsl)
		c.typedList(p("replication-controllers.json"), c.read(p("replication-controllers.json")), "ReplicationControllerList", "v1", &rcs)
		c.events(p("events.json"), c.read(p("events.json")))

		depUID := map[types.UID]*appsv1.Deployment{}
		for i := range deps.Items {
			d := &deps.Items[i]
			depUID[d.UID] = d
			if d.Annotations["deployment.kubernetes.io/revision"] == "" || d.Spec.Replicas == nil || len(d.Status.Conditions) == 0 {
				c.errf("%s: deployment %s lacks its revision annotation, replicas or conditions", p("deployments.json"), d.Name)
			}
		}
		rss := map[string]*appsv1.ReplicaSet{}
		for i := range rsl.Items {
			rs := &rsl.Items[i]
			rss[rs.Name] = rs
			if len(rs.OwnerReferences) != 1 || rs.OwnerReferences[0].Kind != "Deployment" || depUID[rs.OwnerReferences[0].UID] == nil {
				c.errf("%s: replicaset %s: owner Deployment does not resolve", p("replicasets.json"), rs.Name)
			}
			if rs.Annotations["deployment.kubernetes.io/revision"] == "" {
				c.errf("%s: replicaset %s lacks deployment.kubernetes.io/revision", p("replicasets.json"), rs.Name)
			}
			c.notAfterNow(p("replicasets.json")+": "+rs.Name, rs.CreationTimestamp.Time)
		}
		dss := map[string]*appsv1.DaemonSet{}
		for i := range dsl.Items {
			dss[dsl.Items[i].Name] = &dsl.Items[i]
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			c.pod(p("pods.json"), pod, rss, dss)
			c.podLogs(ns, pod)
		}
		// every pod folder is a pod of the list
		sub, _ := os.ReadDir(filepath.Join(root, ns))
		for _, s := range sub {
			if !s.IsDir() {
				continue
			}
			found := false
			for _, pod := range pods.Items {
				found = found || pod.Name == s.Name()
			}
			if !found {
				c.errf("kubernetes/%s/%s: folder of a pod that is not in pods.json", ns, s.Name())
			}
		}
	}
}

var omSample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+) (\d+(?:\.\d+)?)$`)

func (c *checker) prometheus() {
	files, _ := filepath.Glob(filepath.Join(c.dir, "prometheus", "*.om"))
	for _, f := range files {
		rel, _ := filepath.Rel(c.dir, f)
		data := c.read(rel)
		if !bytes.HasSuffix(data, []byte("# EOF\n")) {
			c.errf("%s: does not end with # EOF", rel)
		}
		typed := map[string]bool{}
		current := ""
		series := map[string]bool{}
		lastTS := map[string]float64{}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		for i, line := range lines {
			n := i + 1
			if strings.HasPrefix(line, "# TYPE ") {
				f := strings.Fields(line)
				if len(f) != 4 || typed[f[2]] {
					c.errf("%s:%d: bad or repeated TYPE line (families must be contiguous)", rel, n)
				}
				typed[f[2]], current = true, f[2]
				continue
			}
			if strings.HasPrefix(line, "#") {
				continue
			}
			m := omSample.FindStringSubmatch(line)
			if m == nil {
				c.errf("%s:%d: not an OpenMetrics sample with a timestamp: %q", rel, n, line)
				continue
			}
			if !strings.HasPrefix(m[1], current) {
				c.errf("%s:%d: sample %s outside its family %s", rel, n, m[1], current)
			}
			if _, err := strconv.ParseFloat(m[3], 64); err != nil {
				c.errf("%s:%d: value %q", rel, n, m[3])
			}
			ts, _ := strconv.ParseFloat(m[4], 64)
			at := time.Unix(int64(ts), 0)
			c.notAfterNow(fmt.Sprintf("%s:%d", rel, n), at)
			if c.now.Sub(at) > 3*time.Hour+time.Minute {
				c.errf("%s:%d: sample more than 3h before now", rel, n)
			}
			key := m[1] + m[2]
			if prev, ok := lastTS[key]; ok && ts < prev {
				c.errf("%s:%d: timestamps of %s go backwards", rel, n, key)
			}
			lastTS[key] = ts
			series[m[1]+m[2]] = true
		}
		if len(series) < 5 {
			c.errf("%s: only %d series", rel, len(series))
		}
	}
}

func (c *checker) plainLogs() {
	files, _ := filepath.Glob(filepath.Join(c.dir, "logs", "*.log"))
	for _, f := range files {
		rel, _ := filepath.Rel(c.dir, f)
		for i, line := range strings.Split(strings.TrimSuffix(string(c.read(rel)), "\n"), "\n") {
			ts, _, _ := strings.Cut(line, " ")
			t, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				c.errf("%s:%d: line does not start with an RFC 3339 time", rel, i+1)
				continue
			}
			c.notAfterNow(fmt.Sprintf("%s:%d", rel, i+1), t)
		}
	}
}

func (c *checker) changesAndCloud() {
	if data, err := os.ReadFile(filepath.Join(c.dir, "changes.json")); err == nil {
		var cs []struct {
			Timestamp   time.Time `json:"timestamp"`
			Service     string    `json:"service"`
			Kind        string    `json:"kind"`
			Description string    `json:"description"`
			Revision    string    `json:"revision"`
			Author      string    `json:"author"`
		}
		if err := strictJSON(data, &cs); err != nil {
			c.errf("changes.json: %v", err)
		}
		for i, ch := range cs {
			switch ch.Kind {
			case "deploy", "config", "feature_flag", "infra":
			default:
				c.errf("changes.json[%d]: kind %q", i, ch.Kind)
			}
			if ch.Service == "" || ch.Description == "" {
				c.errf("changes.json[%d]: service and description are required", i)
			}
			c.notAfterNow(fmt.Sprintf("changes.json[%d]", i), ch.Timestamp)
		}
	}
	_ = filepath.WalkDir(filepath.Join(c.dir, "cloudwatch", "logs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(c.dir, p)
		for i, line := range strings.Split(strings.TrimSuffix(string(c.read(rel)), "\n"), "\n") {
			var ev struct {
				Timestamp int64  `json:"timestamp"`
				Message   string `json:"message"`
			}
			if err := strictJSON([]byte(line), &ev); err != nil || ev.Timestamp == 0 || ev.Message == "" {
				c.errf("%s:%d: want {\"timestamp\": <ms>, \"message\": ...}: %v", rel, i+1, err)
				continue
			}
			c.notAfterNow(fmt.Sprintf("%s:%d", rel, i+1), time.UnixMilli(ev.Timestamp))
		}
		return nil
	})
	if data, err := os.ReadFile(filepath.Join(c.dir, "cloudwatch", "metrics.json")); err == nil {
		var mf struct {
			MetricDataResults []struct {
				ID         string      `json:"Id"`
				Label      string      `json:"Label"`
				Timestamps []time.Time `json:"Timestamps"`
				Values     []float64   `json:"Values"`
				StatusCode string      `json:"StatusCode"`
				Namespace  string      `json:"Namespace"`
				MetricName string      `json:"MetricName"`
				Dimensions []struct{ Name, Value string }
				Stat       string `json:"Stat"`
				Period     int    `json:"Period"`
			} `json:"MetricDataResults"`
			Messages []any `json:"Messages"`
		}
		if err := strictJSON(data, &mf); err != nil {
			c.errf("cloudwatch/metrics.json: %v", err)
		}
		for _, r := range mf.MetricDataResults {
			if r.ID == "" || r.StatusCode != "Complete" || len(r.Timestamps) != len(r.Values) || len(r.Values) == 0 {
				c.errf("cloudwatch/metrics.json: result %q: Id, StatusCode Complete and matching Timestamps/Values required", r.ID)
			}
			for _, t := range r.Timestamps {
				c.notAfterNow("cloudwatch/metrics.json "+r.ID, t)
			}
		}
	}
}

// viaReaders reads the bundle through the evidence sources, as tools will.
func (c *checker) viaReaders(s *Scenario) {
	ctx := context.Background()
	src := s.Bundle.Sources(s.Now)
	if !src.Clock().Equal(s.Now) {
		c.errf("bundle clock %s, want scenario now %s", src.Clock(), s.Now)
	}
	if k := src.Kubernetes; k != nil {
		if _, err := k.Nodes(ctx); err != nil {
			c.errf("reading nodes: %v", err)
		}
		pods, err := k.Pods(ctx, "", "")
		if err != nil {
			c.errf("reading pods: %v", err)
		}
		if _, err := k.Events(ctx, ""); err != nil {
			c.errf("reading events: %v", err)
		}
		for _, p := range pods {
			if _, err := k.PodLogs(ctx, podLogQuery(p)); err != nil {
				c.errf("reading logs of %s/%s: %v", p.Namespace, p.Name, err)
			}
		}
	}
	if m := src.Metrics; m != nil {
		ls, err := m.SeriesSet(ctx, "", s.Now.Add(-3*time.Hour), s.Now)
		if err != nil {
			c.errf("listing series: %v", err)
		} else if len(ls) == 0 {
			c.errf("the metrics reader finds no series")
		}
	}
	if l := src.Changes; l != nil {
		if _, err := l.List(ctx, s.Now.Add(-30*24*time.Hour), s.Now, ""); err != nil {
			c.errf("listing changes: %v", err)
		}
	}
	if cw := src.CloudWatch; cw != nil {
		if _, err := cw.ListMetrics(ctx, ""); err != nil {
			c.errf("listing CloudWatch metrics: %v", err)
		}
	}
}

func TestScenariosWellFormed(t *testing.T) {
	titles := map[string]string{}
	// the demo incident embedded by agent/demo is a scenario too
	for _, dir := range append(scenarioDirs(t), filepath.Join("..", "demo", "_incident")) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			s, err := LoadScenario(dir)
			if err != nil {
				t.Fatal(err)
			}
			if s.Expect == nil || s.Title == "" {
				t.Fatalf("public scenarios need a title and expect")
			}
			if other, dup := titles[s.Title]; dup {
				t.Fatalf("title %q repeats scenario %s", s.Title, other)
			}
			titles[s.Title] = s.Name
			if !s.Bundle.CapturedAt.Equal(s.Now) {
				t.Errorf("bundle.json captured_at %s differs from now %s", s.Bundle.CapturedAt, s.Now)
			}
			c := &checker{t: t, dir: dir, now: s.Now}
			c.kubernetes()
			c.prometheus()
			c.plainLogs()
			c.changesAndCloud()
			c.viaReaders(s)
			for i, e := range c.errs {
				if i == 30 {
					t.Errorf("... and %d more", len(c.errs)-30)
					break
				}
				t.Error(e)
			}
		})
	}
}

func podLogQuery(p corev1.Pod) evidence.PodLogQuery {
	return evidence.PodLogQuery{Namespace: p.Namespace, Pod: p.Name, Limit: 10}
}

// TestCheckerCatchesProblems makes sure the well-formedness checks can fail:
// a copy of a scenario with broken parts must be reported.
func TestCheckerCatchesProblems(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "scenarios", "oom-after-deploy")
	dst := filepath.Join(t.TempDir(), "broken")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	edit := func(rel, old, new string) {
		t.Helper()
		p := filepath.Join(dst, rel)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("%s has no %q", rel, old)
		}
		if err := os.WriteFile(p, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("kubernetes/catalog/pods.json", `"kind": "ReplicaSet",`, `"kind": "ReplicaSet", "bogusField": 1,`)
	edit("kubernetes/catalog/replicasets.json", `"kind": "Deployment",`, `"kind": "Deployment", "uid2": "x",`)
	edit("prometheus/kubernetes.om", "# EOF\n", "")
	edit("changes.json", `"kind": "deploy"`, `"kind": "rollback"`)
	s, err := LoadScenario(dst)
	if err != nil {
		t.Fatal(err)
	}
	c := &checker{t: t, dir: dst, now: s.Now.Add(-time.Hour)}
	c.kubernetes()
	c.prometheus()
	c.changesAndCloud()
	all := strings.Join(c.errs, "\n")
	for _, want := range []string{"bogusField", "uid2", "# EOF", "rollback", "is after now"} {
		if !strings.Contains(all, want) {
			t.Errorf("checker did not report %q; it reported:\n%.2000s", want, all)
		}
	}
}
