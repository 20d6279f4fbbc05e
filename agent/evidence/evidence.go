// Package evidence defines the data sources an investigation reads
// (Kubernetes, metrics, logs, changes, CloudWatch, code, knowledge) as
// interfaces with two kinds of backend: live systems and incident bundles.
// The same tool code runs against either.
package evidence

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Sources is everything one investigation can reach. A nil field means the
// integration is not configured: tools that need it report a data gap.
type Sources struct {
	// Now is the investigation's clock: the bundle's captured_at (or a
	// scenario's now) for bundles, time.Now for live systems. Relative
	// windows ("last 1h") are measured back from it. Never nil after
	// Sources.Clock is called.
	Now func() time.Time

	Kubernetes Kubernetes
	Metrics    Metrics
	Logs       Logs
	Changes    Changes
	CloudWatch CloudWatch
	Code       Code
	Knowledge  Knowledge
	Traces     Traces
	Alerts     Alerts // a bundle's alerts.json; nil live (alerts arrive with the request)
}

// Clock returns the investigation's current time.
func (s *Sources) Clock() time.Time {
	if s == nil || s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

// Kubernetes reads cluster state. Lists are returned in a stable order
// (namespace, then name). An empty namespace means all namespaces.
type Kubernetes interface {
	Namespaces(ctx context.Context) ([]string, error)
	Pods(ctx context.Context, namespace, labelSelector string) ([]corev1.Pod, error)
	// Events are normalised to core/v1 (events.k8s.io events are mapped:
	// eventTime/series become FirstTimestamp/LastTimestamp/Count).
	Events(ctx context.Context, namespace string) ([]corev1.Event, error)
	PodLogs(ctx context.Context, q PodLogQuery) (*LogResult, error)
	Deployments(ctx context.Context, namespace string) ([]appsv1.Deployment, error)
	ReplicaSets(ctx context.Context, namespace string) ([]appsv1.ReplicaSet, error)
	DaemonSets(ctx context.Context, namespace string) ([]appsv1.DaemonSet, error)
	Services(ctx context.Context, namespace string) ([]corev1.Service, error)
	// Endpoints are read live; bundles derive them from service selectors
	// and pod readiness (cluster-info dump does not write endpoints).
	Endpoints(ctx context.Context, namespace string) ([]corev1.Endpoints, error)
	Nodes(ctx context.Context) ([]corev1.Node, error)
	// Objects lists the objects of kind (a KubeKinds name: "Job",
	// "PersistentVolumeClaim"...) in namespace (empty: all; ignored for
	// cluster-scoped kinds) that match labelSelector, in namespace/name
	// order. Each is a pointer to the kind's Go type (see KubeKinds); it is
	// shared, so callers must not modify it. Secrets carry key names only,
	// never values. List, Get and GetObject are typed helpers over it.
	Objects(ctx context.Context, kind, namespace, labelSelector string) ([]KubeObject, error)
}

// PodLogQuery selects log lines of one pod.
type PodLogQuery struct {
	Namespace string
	Pod       string
	Container string // empty: all containers
	Previous  bool   // the previous (crashed) container instance
	Since     time.Time
	Until     time.Time
	Pattern   string // regular expression; empty matches all
	Limit     int    // max lines returned (the last ones); 0 means a default
}

// LogLine is one log line. Time is zero when the line carries no timestamp.
type LogLine struct {
	Time   time.Time `json:"time,omitzero"`
	Source string    `json:"source"` // pod/container, file name, log group
	Text   string    `json:"text"`
}

// LogResult is a bounded set of log lines.
type LogResult struct {
	Lines     []LogLine `json:"lines"`
	Matched   int       `json:"matched"`   // lines that matched before the limit
	Scanned   int       `json:"scanned"`   // lines read
	Truncated bool      `json:"truncated"` // Matched > len(Lines)
}

// Metrics reads time series (Prometheus). Expressions are PromQL, all of it
// on live and bundle backends alike (bundles run Prometheus's engine, see
// docs/bundles.md).
type Metrics interface {
	Query(ctx context.Context, expr string, at time.Time) ([]Series, error)
	QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error)
	// SeriesSet lists the label sets of series that match (empty match: all)
	// and have samples between start and end.
	SeriesSet(ctx context.Context, match string, start, end time.Time) ([]Labels, error)
}

// Labels of a series; "__name__" holds the metric name.
type Labels map[string]string

// Series is a labelled sequence of points in time order.
type Series struct {
	Labels Labels  `json:"labels"`
	Points []Point `json:"points"`
}

// Point is one sample.
type Point struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// Logs reads plain-text logs of hosts and services outside Kubernetes.
type Logs interface {
	Sources(ctx context.Context) ([]string, error)
	// Scan streams matching lines in file order to fn, which may stop the
	// scan by returning ErrStop. Memory stays bounded whatever the size.
	Scan(ctx context.Context, q LogQuery, fn func(LogLine) error) error
}

// LogQuery selects lines of host logs.
type LogQuery struct {
	Source  string // empty: every source
	Pattern string // regular expression; empty matches all
	Since   time.Time
	Until   time.Time
}

// Change is a deploy, config change, feature flag or infrastructure change.
type Change struct {
	Timestamp   time.Time `json:"timestamp"`
	Service     string    `json:"service"`
	Kind        string    `json:"kind"` // deploy, config, feature_flag, infra
	Description string    `json:"description"`
	Revision    string    `json:"revision,omitempty"`
	Author      string    `json:"author,omitempty"`
	Source      string    `json:"source,omitempty"` // changes.json, github, kubernetes
}

// Changes lists changes in a window, oldest first. Empty service: all.
type Changes interface {
	List(ctx context.Context, since, until time.Time, service string) ([]Change, error)
}

// CloudWatch reads AWS CloudWatch logs and metrics.
type CloudWatch interface {
	LogGroups(ctx context.Context, prefix string) ([]string, error)
	FilterLogEvents(ctx context.Context, q CloudWatchLogQuery) (*LogResult, error)
	GetMetricData(ctx context.Context, q []MetricDataQuery, start, end time.Time) ([]Series, error)
	ListMetrics(ctx context.Context, namespace string) ([]MetricID, error)
}

// CloudWatchLogQuery selects events of one log group.
type CloudWatchLogQuery struct {
	Group   string
	Pattern string // CloudWatch filter pattern (plain terms) or empty
	Start   time.Time
	End     time.Time
	Limit   int
}

// MetricID names a CloudWatch metric.
type MetricID struct {
	Namespace  string            `json:"namespace"`
	Name       string            `json:"name"`
	Dimensions map[string]string `json:"dimensions,omitempty"`
}

// Key identifies the metric: namespace, name and dimensions in name order,
// NUL-separated; keys sort metrics by namespace, then name.
func (m MetricID) Key() string {
	var b strings.Builder
	b.WriteString(m.Namespace + "\x00" + m.Name)
	for _, k := range slices.Sorted(maps.Keys(m.Dimensions)) {
		b.WriteString("\x00" + k + "=" + m.Dimensions[k])
	}
	return b.String()
}

// MetricDataQuery is one GetMetricData query.
type MetricDataQuery struct {
	ID     string   `json:"id"`
	Metric MetricID `json:"metric"`
	Stat   string   `json:"stat"`   // Average, Sum, Maximum, p99...
	Period int      `json:"period"` // seconds
}

// Code reads source repositories (GitHub live, repos/ in bundles).
type Code interface {
	Repos(ctx context.Context) ([]string, error)
	Search(ctx context.Context, query, repo string, limit int) ([]CodeMatch, error)
	ReadFile(ctx context.Context, repo, path string) (string, error)
	Commits(ctx context.Context, repo string, since time.Time) ([]Commit, error)
	PullRequests(ctx context.Context, repo string, since time.Time) ([]PullRequest, error)
}

// CodeMatch is one search hit.
type CodeMatch struct {
	Repo string `json:"repo"`
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Commit is one commit.
type Commit struct {
	SHA     string    `json:"sha"`
	Time    time.Time `json:"time"`
	Author  string    `json:"author"`
	Message string    `json:"message"`
}

// PullRequest is one pull request.
type PullRequest struct {
	Number   int       `json:"number"`
	Title    string    `json:"title"`
	State    string    `json:"state"`
	MergedAt time.Time `json:"merged_at,omitzero"`
	Author   string    `json:"author"`
	URL      string    `json:"url,omitempty"`
}

// Knowledge searches runbooks and other documents of the team.
type Knowledge interface {
	Search(ctx context.Context, query string, limit int) ([]Passage, error)
}

// Passage is a ranked section of a document.
type Passage struct {
	Title    string  `json:"title"`
	Location string  `json:"location"` // file path or URL, with #section
	Text     string  `json:"text"`
	Score    float64 `json:"score"`
}
