package cloudwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/secretref"
)

const miscBundle = "../../bundle/testdata/misc"

// fakeAWS serves CloudWatch Logs (awsJson1_1, X-Amz-Target
// Logs_20140328.*) and CloudWatch (rpcv2Cbor, /service/
// GraniteServiceVersion20100801/operation/*) from a bundle's recorded
// data, paging FilterLogEvents two events at a time.
type fakeAWS struct {
	t       *testing.T
	mu      sync.Mutex
	calls   []string
	auth    []string
	events  map[string][]map[string]any // group → events
	metrics []map[string]any
	polls   int
}

func newFakeAWS(t *testing.T) *fakeAWS {
	f := &fakeAWS{t: t, events: map[string][]map[string]any{}}
	root := filepath.Join(miscBundle, "cloudwatch", "logs")
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		name := strings.TrimSuffix(filepath.ToSlash(rel), ".jsonl")
		if strings.Contains(name, "/") {
			name = "/" + name
		}
		data, _ := os.ReadFile(p)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatal(err)
			}
			f.events[name] = append(f.events[name], ev)
		}
		return nil
	})
	data, err := os.ReadFile(filepath.Join(miscBundle, "cloudwatch", "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mf struct{ MetricDataResults []map[string]any }
	json.Unmarshal(data, &mf)
	f.metrics = mf.MetricDataResults
	return f
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		op := strings.TrimPrefix(target, "Logs_20140328.")
		f.record(op)
		if r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
			http.Error(w, "bad content type", 400)
			return
		}
		var in map[string]any
		json.Unmarshal(body, &in)
		out, status := f.logs(op, in)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(out)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/service/GraniteServiceVersion20100801/operation/") {
		op := strings.TrimPrefix(r.URL.Path, "/service/GraniteServiceVersion20100801/operation/")
		f.record(op)
		if r.Header.Get("Smithy-Protocol") != "rpc-v2-cbor" {
			http.Error(w, "missing smithy-protocol", 400)
			return
		}
		in, err := cbor.Decode(body)
		if err != nil {
			f.t.Errorf("decoding %s request: %v", op, err)
			http.Error(w, err.Error(), 400)
			return
		}
		out := f.metricsOp(op, in.(cbor.Map))
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
		w.Header().Set("Content-Type", "application/cbor")
		w.Write(cbor.Encode(out))
		return
	}
	http.Error(w, "unknown request "+r.URL.Path, 404)
}

func (f *fakeAWS) record(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op)
}

func num(v any) int64 {
	if x, ok := v.(float64); ok {
		return int64(x)
	}
	return 0
}

func (f *fakeAWS) logs(op string, in map[string]any) (any, int) {
	switch op {
	case "DescribeLogGroups":
		prefix, _ := in["logGroupNamePrefix"].(string)
		var groups []map[string]any
		for g := range f.events {
			if strings.HasPrefix(g, prefix) {
				groups = append(groups, map[string]any{"logGroupName": g, "arn": "arn:aws:logs:eu-west-1:1:log-group:" + g})
			}
		}
		slices.SortFunc(groups, func(a, b map[string]any) int {
			return strings.Compare(a["logGroupName"].(string), b["logGroupName"].(string))
		})
		// One group per page, to exercise pagination.
		i, _ := strconv.Atoi(fmt.Sprint(in["nextToken"]))
		out := map[string]any{"logGroups": groups[i : i+1]}
		if i+1 < len(groups) {
			out["nextToken"] = strconv.Itoa(i + 1)
		}
		return out, 200
	case "FilterLogEvents":
		group, _ := in["logGroupName"].(string)
		evs, ok := f.events[group]
		if !ok {
			return map[string]any{"__type": "ResourceNotFoundException", "message": "The specified log group does not exist."}, 400
		}
		fp, err := bundle.ParseFilterPattern(fmt.Sprint(in["filterPattern"]))
		if in["filterPattern"] == nil {
			fp, err = bundle.ParseFilterPattern("")
		}
		if err != nil {
			return map[string]any{"__type": "InvalidParameterException", "message": err.Error()}, 400
		}
		var matched []map[string]any
		for _, ev := range evs {
			ts := num(ev["timestamp"])
			if s, ok := in["startTime"]; ok && ts < num(s) {
				continue
			}
			if e, ok := in["endTime"]; ok && ts > num(e) {
				continue
			}
			if fp.Match(ev["message"].(string)) {
				matched = append(matched, ev)
			}
		}
		start, _ := strconv.Atoi(fmt.Sprint(in["nextToken"]))
		end := min(start+2, len(matched))
		out := map[string]any{"events": matched[start:end], "searchedLogStreams": []any{}}
		if end < len(matched) {
			out["nextToken"] = strconv.Itoa(end)
		}
		return out, 200
	case "StartQuery":
		if in["queryString"] == "" || len(in["logGroupNames"].([]any)) == 0 {
			return map[string]any{"__type": "InvalidParameterException", "message": "no query"}, 400
		}
		if strings.Contains(in["queryString"].(string), "bogus") {
			return map[string]any{"__type": "MalformedQueryException", "message": "unexpected symbol bogus"}, 400
		}
		return map[string]any{"queryId": "q-1"}, 200
	case "GetQueryResults":
		f.mu.Lock()
		f.polls++
		polls := f.polls
		f.mu.Unlock()
		if polls < 2 {
			return map[string]any{"status": "Running", "results": []any{}}, 200
		}
		return map[string]any{"status": "Complete", "results": [][]map[string]string{
			{{"field": "bin(5m)", "value": "2026-03-14 10:30:00.000"}, {"field": "n", "value": "3"}},
		}}, 200
	case "StopQuery":
		return map[string]any{"success": true}, 200
	}
	return map[string]any{"__type": "UnknownOperationException"}, 400
}

func str(v cbor.Value) string {
	if s, ok := v.(cbor.String); ok {
		return string(s)
	}
	return ""
}

func cborTime(v cbor.Value) time.Time {
	t, _ := cbor.AsTime(v)
	return t
}

func (f *fakeAWS) metricsOp(op string, in cbor.Map) cbor.Map {
	switch op {
	case "ListMetrics":
		ns := str(in["Namespace"])
		var list cbor.List
		for _, m := range f.metrics {
			if m["MetricName"] == nil || ns != "" && m["Namespace"] != ns {
				continue
			}
			dims := cbor.List{}
			for k, v := range dimsOf(m["Dimensions"]) {
				dims = append(dims, cbor.Map{"Name": cbor.String(k), "Value": cbor.String(v)})
			}
			list = append(list, cbor.Map{"Namespace": cbor.String(m["Namespace"].(string)), "MetricName": cbor.String(m["MetricName"].(string)), "Dimensions": dims})
		}
		return cbor.Map{"Metrics": list}
	case "GetMetricData":
		start, end := cborTime(in["StartTime"]), cborTime(in["EndTime"])
		var results cbor.List
		for _, qv := range in["MetricDataQueries"].(cbor.List) {
			q := qv.(cbor.Map)
			ms := q["MetricStat"].(cbor.Map)
			metric := ms["Metric"].(cbor.Map)
			want := map[string]string{}
			if dl, ok := metric["Dimensions"].(cbor.List); ok {
				for _, d := range dl {
					want[str(d.(cbor.Map)["Name"])] = str(d.(cbor.Map)["Value"])
				}
			}
			res := cbor.Map{"Id": q["Id"], "StatusCode": cbor.String("Complete"), "Timestamps": cbor.List{}, "Values": cbor.List{}}
			for _, m := range f.metrics {
				if m["Namespace"] != str(metric["Namespace"]) || m["MetricName"] != str(metric["MetricName"]) ||
					fmt.Sprint(dimsOf(m["Dimensions"])) != fmt.Sprint(want) || m["Stat"] != str(ms["Stat"]) {
					continue
				}
				res["Label"] = cbor.String(m["Label"].(string))
				var tsl, vals cbor.List
				for i, raw := range m["Timestamps"].([]any) {
					var t time.Time
					switch x := raw.(type) {
					case string:
						t, _ = time.Parse(time.RFC3339, x)
					case float64:
						t = time.Unix(int64(x), 0)
					}
					if t.Before(start) || t.After(end) {
						continue
					}
					tsl = append(tsl, &cbor.Tag{ID: 1, Value: cbor.Uint(t.Unix())})
					vals = append(vals, cbor.Float64(m["Values"].([]any)[i].(float64)))
				}
				res["Timestamps"], res["Values"] = tsl, vals
			}
			results = append(results, res)
		}
		return cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}}
	}
	return cbor.Map{}
}

func dimsOf(v any) map[string]string {
	out := map[string]string{}
	switch d := v.(type) {
	case []any:
		for _, x := range d {
			m := x.(map[string]any)
			out[m["Name"].(string)] = m["Value"].(string)
		}
	case map[string]any:
		for k, x := range d {
			out[k] = x.(string)
		}
	}
	return out
}

func newLive(t *testing.T, f *fakeAWS) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	env := map[string]string{"CW_ID": "AKIDTEST", "CW_SECRET": "s3cr3t"}
	res := secretref.NewResolver(secretref.ResolverOptions{LookupEnv: func(n string) (string, bool) { v, ok := env[n]; return v, ok }})
	cw, err := New(context.Background(), map[string]any{
		"region": "eu-west-1", "endpoint": srv.URL,
		"access_key_id": "env:CW_ID", "secret_access_key": "env:CW_SECRET",
	}, nil, res)
	if err != nil {
		t.Fatal(err)
	}
	c := cw.(*Client)
	c.PollInterval = 10 * time.Millisecond
	return c
}

func ts(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }

// conformance runs the same assertions on a CloudWatch backend.
func conformance(t *testing.T, cw evidence.CloudWatch) {
	ctx := context.Background()
	groups, err := cw.LogGroups(ctx, "/aws/")
	if err != nil || strings.Join(groups, ",") != "/aws/lambda/checkout" {
		t.Fatalf("LogGroups = %v, %v", groups, err)
	}
	all, _ := cw.LogGroups(ctx, "")
	if len(all) != 2 {
		t.Errorf("all groups = %v", all)
	}
	res, err := cw.FilterLogEvents(ctx, evidence.CloudWatchLogQuery{Group: "/aws/lambda/checkout", Pattern: "ERROR -refused",
		Start: ts("2026-03-14T10:00:00Z"), End: ts("2026-03-14T11:00:00Z"), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Matched != 2 || len(res.Lines) != 2 || res.Truncated ||
		res.Lines[1].Text != "ERROR Task timed out after 3.00 seconds" || !res.Lines[1].Time.Equal(ts("2026-03-14T10:31:40Z")) ||
		res.Lines[1].Source != "/aws/lambda/checkout/2026/03/14/[$LATEST]def" {
		t.Errorf("FilterLogEvents = %+v", res)
	}
	res, err = cw.FilterLogEvents(ctx, evidence.CloudWatchLogQuery{Group: "/aws/lambda/checkout", Limit: 3})
	if err != nil || res.Matched != 6 || len(res.Lines) != 3 || !res.Truncated || res.Lines[0].Text != "START RequestId: 1 Version: $LATEST" {
		t.Errorf("paged FilterLogEvents = %+v, %v", res, err)
	}
	if _, err := cw.FilterLogEvents(ctx, evidence.CloudWatchLogQuery{Group: "/aws/lambda/missing"}); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("missing group: %v", err)
	}
	ms, err := cw.ListMetrics(ctx, "AWS/Lambda")
	if err != nil || len(ms) != 2 || ms[0].Name != "Duration" || ms[1].Name != "Errors" || ms[1].Dimensions["FunctionName"] != "checkout" {
		t.Errorf("ListMetrics = %+v, %v", ms, err)
	}
	series, err := cw.GetMetricData(ctx, []evidence.MetricDataQuery{
		{ID: "errors", Metric: evidence.MetricID{Namespace: "AWS/Lambda", Name: "Errors", Dimensions: map[string]string{"FunctionName": "checkout"}}, Stat: "Sum", Period: 300},
		{ID: "dur", Metric: evidence.MetricID{Namespace: "AWS/Lambda", Name: "Duration", Dimensions: map[string]string{"FunctionName": "checkout"}}, Stat: "Average", Period: 300},
	}, ts("2026-03-14T10:20:00Z"), ts("2026-03-14T10:40:00Z"))
	if err != nil || len(series) != 2 {
		t.Fatalf("GetMetricData = %+v, %v", series, err)
	}
	e := series[0]
	if e.Labels["id"] != "errors" || e.Labels["label"] != "Errors" || e.Labels["FunctionName"] != "checkout" || e.Labels["stat"] != "Sum" || len(e.Points) != 5 ||
		e.Points[2].V != 7 || !e.Points[2].T.Equal(ts("2026-03-14T10:30:00Z")) {
		t.Errorf("errors series = %+v", e)
	}
	if d := series[1]; len(d.Points) != 5 || math.Abs(d.Points[4].V-2950) > 1e-9 {
		t.Errorf("duration series = %+v", d)
	}
}

func TestConformanceBundle(t *testing.T) {
	b, err := bundle.OpenDir(miscBundle)
	if err != nil {
		t.Fatal(err)
	}
	conformance(t, b.Sources(time.Time{}).CloudWatch)
}

func TestConformanceLive(t *testing.T) {
	f := newFakeAWS(t)
	c := newLive(t, f)
	conformance(t, c)
	for _, op := range []string{"DescribeLogGroups", "FilterLogEvents", "ListMetrics", "GetMetricData"} {
		if !slices.Contains(f.calls, op) {
			t.Errorf("%s was never called: %v", op, f.calls)
		}
	}
	for _, a := range f.auth {
		if !strings.Contains(a, "Credential=AKIDTEST/") || !strings.Contains(a, "/eu-west-1/") {
			t.Fatalf("request not signed with the static credentials in eu-west-1: %q", a)
		}
	}
}

func TestInsightsLive(t *testing.T) {
	f := newFakeAWS(t)
	c := newLive(t, f)
	rows, err := c.InsightsQuery(context.Background(), []string{"/aws/lambda/checkout"}, `filter @message like "ERROR" | stats count(*) as n by bin(5m)`, ts("2026-03-14T10:00:00Z"), ts("2026-03-14T11:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0]["n"] != "3" || rows[0]["bin(5m)"] != "2026-03-14 10:30:00.000" {
		t.Errorf("rows = %v", rows)
	}
	if f.polls < 2 {
		t.Errorf("did not poll until complete: %d", f.polls)
	}
	// The bundle subset gives the same rows for the same query.
	b, _ := bundle.OpenDir(miscBundle)
	brows, err := b.Sources(time.Time{}).CloudWatch.(interface {
		InsightsQuery(context.Context, []string, string, time.Time, time.Time) ([]map[string]string, error)
	}).InsightsQuery(context.Background(), []string{"/aws/lambda/checkout"}, `filter @message like "ERROR" | stats count(*) as n by bin(5m)`, ts("2026-03-14T10:00:00Z"), ts("2026-03-14T11:00:00Z"))
	if err != nil || fmt.Sprint(brows) != fmt.Sprint(rows) {
		t.Errorf("bundle rows %v != live rows %v (%v)", brows, rows, err)
	}
	_, err = c.InsightsQuery(context.Background(), []string{"/aws/lambda/checkout"}, "bogus", ts("2026-03-14T10:00:00Z"), ts("2026-03-14T11:00:00Z"))
	if evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("malformed query: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	c, err := New(context.Background(), map[string]any{"region": "eu-west-1", "endpoint": url, "access_key_id": "env:A", "secret_access_key": "env:B"}, nil,
		secretref.NewResolver(secretref.ResolverOptions{LookupEnv: func(string) (string, bool) { return "x", true }}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.LogGroups(context.Background(), "")
	if evidence.CodeOf(err) != evidence.CodeUnavailable || evidence.SourceOf(err) != "cloudwatch" {
		t.Errorf("err = %v", err)
	}
}

func TestSettings(t *testing.T) {
	res := secretref.NewResolver(secretref.ResolverOptions{LookupEnv: func(n string) (string, bool) {
		return map[string]string{"AWS_JSON": `{"access_key_id":"AK","secret_access_key":"SK"}`, "AWS_PAIR": "AK:SK", "BAD": "nocolon"}[n], true
	}})
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	tests := []struct {
		settings map[string]any
		tokens   map[string]string
		wantErr  string
	}{
		{nil, nil, ""},
		{map[string]any{"enabled": false, "region": "x"}, nil, ""},
		{map[string]any{}, nil, "region is required"},
		{map[string]any{"region": "eu-west-1", "access_key_id": "env:X"}, nil, "both access_key_id and secret_access_key"},
		{map[string]any{"region": "eu-west-1", "endpoint": "localhost:4566"}, nil, "must be an http(s) URL"},
		{map[string]any{"region": "eu-west-1"}, map[string]string{"aws": "env:AWS_JSON"}, ""},
		{map[string]any{"region": "eu-west-1"}, map[string]string{"aws": "env:AWS_PAIR"}, ""},
		{map[string]any{"region": "eu-west-1"}, map[string]string{"aws": "env:BAD"}, "tokens_vault_path.aws"},
	}
	for i, tt := range tests {
		_, err := New(context.Background(), tt.settings, tt.tokens, res)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%d: err = %v, want %q", i, err, tt.wantErr)
		}
	}
}
