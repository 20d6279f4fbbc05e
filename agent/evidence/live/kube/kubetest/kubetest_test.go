package kubetest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/live/kube/kubetest"
)

// start serves testdata/small; page caps list pages when positive.
func start(t *testing.T, served map[string]bool, page int) *kubetest.Server {
	t.Helper()
	s, err := kubetest.Load("testdata/small", 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Served, s.PageSize = served, page
	s.Serve(t)
	return s
}

// call makes one request and returns the status code and body.
func call(t *testing.T, s *kubetest.Server, method, path string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type list struct {
	Kind       string
	APIVersion string
	Metadata   struct{ Continue string }
	Items      []struct {
		APIVersion string
		Metadata   struct{ Name, Namespace string }
		Reason     string
		Message    string
		Count      int
		Regarding  *struct{ Name string }
		Subsets    []struct{ Addresses, NotReadyAddresses []struct{ IP string } }
	}
}

func getList(t *testing.T, s *kubetest.Server, path string) list {
	t.Helper()
	code, body := call(t, s, http.MethodGet, path)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var l list
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return l
}

func names(l list) []string {
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Metadata.Name)
	}
	return out
}

func TestLists(t *testing.T) {
	s := start(t, nil, 0)
	for _, c := range []struct {
		name, path, apiVersion string
		want                   []string
	}{
		{"pods of a namespace", "/api/v1/namespaces/shop/pods", "v1", []string{"web-1", "web-2"}},
		{"label selector", "/api/v1/pods?labelSelector=" + url.QueryEscape("app=web,tier=front"), "v1", []string{"web-1"}},
		{"field selector", "/api/v1/namespaces/shop/events?fieldSelector=" + url.QueryEscape("involvedObject.name=web-2"), "v1", []string{"web-2.1"}},
		{"both event APIs as core events", "/api/v1/events", "v1", []string{"web-1.1", "web-2.1"}},
		{"events.k8s.io holds its own", "/apis/events.k8s.io/v1/events", "events.k8s.io/v1", []string{"web-1.1"}},
		{"written at batch/v1, served at the same schema's v1beta1", "/apis/batch/v1beta1/namespaces/batch/cronjobs", "batch/v1beta1", []string{"report"}},
		{"written at autoscaling/v1", "/apis/autoscaling/v1/horizontalpodautoscalers", "autoscaling/v1", []string{"web"}},
		{"not served at autoscaling/v2, another schema", "/apis/autoscaling/v2/horizontalpodautoscalers", "autoscaling/v2", nil},
		{"namespaces of objects and dump folders", "/api/v1/namespaces", "v1", []string{"batch", "idle", "shop"}},
		{"endpoints held and derived", "/api/v1/namespaces/shop/endpoints", "v1", []string{"db", "web"}},
		{"slices only for derived endpoints", "/apis/discovery.k8s.io/v1/endpointslices", "discovery.k8s.io/v1", []string{"web-a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := getList(t, s, c.path)
			if got := names(l); !slices.Equal(got, c.want) {
				t.Errorf("items %v, want %v", got, c.want)
			}
			for _, it := range l.Items {
				if it.APIVersion != c.apiVersion {
					t.Errorf("%s served as %q, want %q", it.Metadata.Name, it.APIVersion, c.apiVersion)
				}
			}
		})
	}
}

func TestConvertedEventsAndDerivedEndpoints(t *testing.T) {
	s := start(t, nil, 0)
	l := getList(t, s, "/api/v1/namespaces/shop/events?fieldSelector="+url.QueryEscape("involvedObject.name=web-1"))
	if len(l.Items) != 1 || l.Items[0].Reason != "BackOff" || l.Items[0].Message != "Back-off restarting failed container" || l.Items[0].Count != 4 || l.Items[0].Regarding != nil {
		t.Errorf("events.k8s.io event as a core event: %+v", l.Items)
	}
	for _, it := range getList(t, s, "/api/v1/namespaces/shop/endpoints").Items {
		var ips []string
		for _, ss := range it.Subsets {
			for _, a := range ss.Addresses {
				ips = append(ips, a.IP)
			}
			for _, a := range ss.NotReadyAddresses {
				ips = append(ips, a.IP+" (not ready)")
			}
		}
		slices.Sort(ips)
		want := map[string][]string{"db": {"10.0.9.9"}, "web": {"10.0.0.11", "10.0.0.12 (not ready)"}}[it.Metadata.Name]
		if !slices.Equal(ips, want) {
			t.Errorf("endpoints %s: %v, want %v", it.Metadata.Name, ips, want)
		}
	}
}

func TestPagination(t *testing.T) {
	for _, c := range []struct {
		name     string
		pageSize int
		limit    string
		pages    []int
	}{
		{"no limit", 0, "", []int{3}},
		{"client limit", 0, "2", []int{2, 1}},
		{"server page size under the limit", 1, "500", []int{1, 1, 1}},
		{"server page size without a limit", 2, "", []int{2, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := start(t, nil, c.pageSize)
			var pages []int
			cont := ""
			for range 10 {
				l := getList(t, s, "/api/v1/namespaces?limit="+c.limit+"&continue="+cont)
				pages = append(pages, len(l.Items))
				if cont = l.Metadata.Continue; cont == "" {
					break
				}
			}
			if !slices.Equal(pages, c.pages) {
				t.Errorf("pages %v, want %v", pages, c.pages)
			}
		})
	}
}

func TestServedVersions(t *testing.T) {
	s := start(t, map[string]bool{"v1": true, "autoscaling/v1": true}, 0)
	for path, want := range map[string]int{
		"/api/v1/pods": 200,
		"/apis/autoscaling/v1/horizontalpodautoscalers": 200,
		"/apis/autoscaling/v2/horizontalpodautoscalers": 404,
		"/apis/apps/v1":          404,
		"/apis/autoscaling/v1":   200,
		"/apis/nosuch/v1/things": 404,
		"/api/v1/nosuch":         404,
	} {
		if code, body := call(t, s, http.MethodGet, path); code != want {
			t.Errorf("GET %s: %d, want %d (%s)", path, code, want, body)
		}
	}
	_, body := call(t, s, http.MethodGet, "/apis")
	var groups struct{ Groups []struct{ Name string } }
	if err := json.Unmarshal([]byte(body), &groups); err != nil || len(groups.Groups) != 1 || groups.Groups[0].Name != "autoscaling" {
		t.Errorf("discovery of served groups: %s", body)
	}
}

func TestGetAndTables(t *testing.T) {
	s := start(t, nil, 0)
	if code, body := call(t, s, http.MethodGet, "/api/v1/namespaces/shop/pods/web-1"); code != 200 || !strings.Contains(body, `"podIP":"10.0.0.11"`) {
		t.Errorf("get pod: %d %s", code, body)
	}
	if code, body := call(t, s, http.MethodGet, "/api/v1/namespaces/shop/pods/nope"); code != 404 || !strings.Contains(body, `"reason":"NotFound"`) {
		t.Errorf("get missing pod: %d %s", code, body)
	}
	if code, body := call(t, s, http.MethodGet, "/api/v1/namespaces/shop/pods", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"); code != 200 || !strings.Contains(body, `"kind":"Table"`) || !strings.Contains(body, `"web-2"`) {
		t.Errorf("table: %d %s", code, body)
	}
}

func TestLogs(t *testing.T) {
	s := start(t, nil, 0)
	for _, c := range []struct {
		name  string
		query string
		code  int
		want  string
	}{
		{"first container by default", "", 200, "2026-03-14T10:00:01Z starting\n2026-03-14T10:04:00Z ready\n"},
		{"named container", "container=sidecar", 200, "proxy up\n"},
		{"previous instance", "container=app&previous=true", 200, "2026-03-14T09:59:00Z panic: no DATABASE_URL\n"},
		{"no previous instance", "container=sidecar&previous=true", 400, ""},
		{"since a time", "sinceTime=2026-03-14T10:02:00Z", 200, "2026-03-14T10:04:00Z ready\n"},
		{"bad since time", "sinceTime=yesterday", 400, ""},
		{"limited bytes", "limitBytes=8", 200, "2026-03-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := call(t, s, http.MethodGet, "/api/v1/namespaces/shop/pods/web-1/log?"+c.query)
			if code != c.code || c.code == 200 && body != c.want {
				t.Errorf("%d %q, want %d %q", code, body, c.code, c.want)
			}
		})
	}
	if code, _ := call(t, s, http.MethodGet, "/api/v1/namespaces/shop/pods/web-2/log"); code != 200 {
		t.Errorf("logs of a pod without a log file: %d, want an empty 200", code)
	}
	if code, _ := call(t, s, http.MethodGet, "/api/v1/namespaces/shop/pods/nope/log"); code != 404 {
		t.Errorf("logs of a missing pod: %d, want 404", code)
	}
}

func TestWrites(t *testing.T) {
	s := start(t, nil, 0)
	if code, _ := call(t, s, http.MethodPost, "/api/v1/namespaces/shop/pods"); code != 405 {
		t.Errorf("create a pod: %d, want 405", code)
	}
	if code, _ := call(t, s, http.MethodDelete, "/api/v1/namespaces/shop/pods/web-1"); code != 405 {
		t.Errorf("delete a pod: %d, want 405", code)
	}
	if code, _ := call(t, s, http.MethodPatch, "/apis/apps/v1/namespaces/shop/deployments/nope", "Content-Type", "application/merge-patch+json"); code != 404 {
		t.Errorf("patch a missing deployment: %d, want 404", code)
	}
	if code, _ := call(t, s, http.MethodPatch, "/apis/apps/v1/namespaces/shop/deployments/web", "Content-Type", "application/merge-patch+json"); code != 200 ||
		len(s.Patches) != 1 || s.Patches[0] != "application/merge-patch+json {}" {
		t.Errorf("patch a deployment: %d %q", code, s.Patches)
	}
	if s.Requests() != 4 {
		t.Errorf("%d requests counted, want 4", s.Requests())
	}
}

func TestLoadShiftsTimes(t *testing.T) {
	s, err := kubetest.Load("testdata/small", 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pods := s.Objects("Pod")
	if len(pods) != 2 {
		t.Fatalf("%d pods", len(pods))
	}
	if ts := pods[0]["metadata"].(map[string]any)["creationTimestamp"]; ts != "2026-03-16T10:00:00Z" {
		t.Errorf("creation time %v, want moved by two days", ts)
	}
	evs := s.Objects("Event")
	if len(evs) != 2 || evs[0]["eventTime"] != "2026-03-16T10:05:00.000000Z" {
		t.Errorf("events: %v", evs)
	}
	if _, err := s.Kubeconfig(t.TempDir()); err == nil {
		t.Error("kubeconfig of a server not serving: no error")
	}
	if _, err := kubetest.Load(t.TempDir(), 0); err == nil {
		t.Error("a folder without kubernetes/: no error")
	}
}
