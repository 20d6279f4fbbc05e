// Package prom is the live Prometheus backend of evidence.Metrics, over the
// Prometheus HTTP API with client_golang.
package prom

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/live/internal/apiclient"
	"github.com/rootcause/rootcause/outbound"
)

// DefaultTimeout bounds one request when Config.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// Config locates a Prometheus server.
type Config struct {
	URL string
	// Headers are sent with every request (for example Authorization), with
	// values already resolved from secret references by the caller.
	Headers map[string]string
	Timeout time.Duration
	// Guard is the outbound guard every connection goes through (a nil
	// guard exempts nothing: loopback and private addresses are refused).
	Guard *outbound.Guard
}

// Client implements evidence.Metrics against one Prometheus.
type Client struct {
	api     v1.API
	timeout time.Duration
	secrets []string // resolved header values, scrubbed from errors
}

var _ evidence.Metrics = (*Client)(nil)

// New returns a client; it does not contact the server.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "tools.prometheus.url %q is not an http(s) URL", cfg.URL)
	}
	rt := cfg.Guard.Transport()
	if len(cfg.Headers) > 0 {
		rt = headerRT{next: rt, headers: cfg.Headers}
	}
	c, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: rt})
	if err != nil {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "prometheus client: %v", err)
	}
	t := cfg.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	return &Client{api: v1.NewAPI(c), timeout: t, secrets: apiclient.HeaderSecrets(cfg.Headers)}, nil
}

// scrub returns err with every header secret in its text replaced.
func (c *Client) scrub(err error) error {
	if err == nil || len(c.secrets) == 0 {
		return err
	}
	msg := err.Error()
	if !slices.ContainsFunc(c.secrets, func(s string) bool { return strings.Contains(msg, s) }) {
		return err
	}
	clean := func(s string) string { return apiclient.Redact(s, c.secrets) }
	var ee *evidence.Error
	if errors.As(err, &ee) && ee.Err != nil {
		return &evidence.Error{Source: ee.Source, Code: ee.Code, File: ee.File, Line: ee.Line, Err: errors.New(clean(ee.Err.Error()))}
	}
	return errors.New(clean(msg))
}

type headerRT struct {
	next    http.RoundTripper
	headers map[string]string
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

// Query runs an instant query.
func (c *Client) Query(ctx context.Context, expr string, at time.Time) ([]evidence.Series, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, _, _, err := c.api.Query(ctx, expr, at, v1.WithTimeout(c.timeout))
	if err != nil {
		return nil, c.scrub(mapErr(err))
	}
	return toSeries(v)
}

// QueryRange runs a range query.
func (c *Client) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]evidence.Series, error) {
	if step <= 0 {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "step must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, _, _, err := c.api.QueryRange(ctx, expr, v1.Range{Start: start, End: end, Step: step}, v1.WithTimeout(c.timeout))
	if err != nil {
		return nil, c.scrub(mapErr(err))
	}
	return toSeries(v)
}

// SeriesSet lists matching series with samples between start and end.
func (c *Client) SeriesSet(ctx context.Context, match string, start, end time.Time) ([]evidence.Labels, error) {
	if strings.TrimSpace(match) == "" {
		match = `{__name__=~".+"}`
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	sets, _, _, err := c.api.Series(ctx, []string{match}, start, end)
	if err != nil {
		return nil, c.scrub(mapErr(err))
	}
	out := make([]evidence.Labels, 0, len(sets))
	for _, s := range sets {
		out = append(out, labelsOf(model.Metric(s)))
	}
	slices.SortFunc(out, func(a, b evidence.Labels) int {
		return strings.Compare(model.LabelSet(toLS(a)).String(), model.LabelSet(toLS(b)).String())
	})
	return out, nil
}

func toLS(l evidence.Labels) model.LabelSet {
	ls := model.LabelSet{}
	for k, v := range l {
		ls[model.LabelName(k)] = model.LabelValue(v)
	}
	return ls
}

func labelsOf(m model.Metric) evidence.Labels {
	l := make(evidence.Labels, len(m))
	for k, v := range m {
		l[string(k)] = string(v)
	}
	return l
}

func toSeries(v model.Value) ([]evidence.Series, error) {
	var out []evidence.Series
	switch v := v.(type) {
	case model.Vector:
		for _, s := range v {
			out = append(out, evidence.Series{Labels: labelsOf(s.Metric), Points: []evidence.Point{{T: s.Timestamp.Time().UTC(), V: float64(s.Value)}}})
		}
	case model.Matrix:
		for _, s := range v {
			ser := evidence.Series{Labels: labelsOf(s.Metric)}
			for _, p := range s.Values {
				ser.Points = append(ser.Points, evidence.Point{T: p.Timestamp.Time().UTC(), V: float64(p.Value)})
			}
			out = append(out, ser)
		}
	case *model.Scalar:
		out = append(out, evidence.Series{Labels: evidence.Labels{}, Points: []evidence.Point{{T: v.Timestamp.Time().UTC(), V: float64(v.Value)}}})
	case *model.String:
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "the query returned a string, not series")
	case nil:
	default:
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "unexpected result type %s", v.Type())
	}
	slices.SortFunc(out, func(a, b evidence.Series) int {
		return strings.Compare(toLS(a.Labels).String(), toLS(b.Labels).String())
	})
	return out, nil
}

// mapErr types client errors: bad queries are invalid, transport failures
// and server errors unavailable.
func mapErr(err error) error {
	var ae *v1.Error
	if errors.As(err, &ae) {
		switch ae.Type {
		case v1.ErrBadData, v1.ErrExec:
			return &evidence.Error{Source: "prometheus", Code: evidence.CodeInvalid, Err: fmt.Errorf("%s", ae.Msg)}
		case v1.ErrBadResponse, v1.ErrServer, v1.ErrClient:
			// The answer's bytes never reach the caller: an address a
			// team chose may be some other service, and quoting its
			// answer would tell the team what listens there.
			return &evidence.Error{Source: "prometheus", Code: evidence.CodeUnavailable, Err: fmt.Errorf("the server did not answer as the Prometheus HTTP API does (%s)", ae.Type)}
		case v1.ErrTimeout, v1.ErrCanceled:
			return &evidence.Error{Source: "prometheus", Code: evidence.CodeUnavailable, Err: err}
		}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return &evidence.Error{Source: "prometheus", Code: evidence.CodeUnavailable, Err: err}
	}
	return &evidence.Error{Source: "prometheus", Code: evidence.CodeUnavailable, Err: err}
}
