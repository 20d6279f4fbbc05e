package demo

import (
	"encoding/json"
	"io/fs"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

func TestBundle(t *testing.T) {
	b, err := bundle.Open(Bundle(), Name)
	if err != nil {
		t.Fatal(err)
	}
	if !b.CapturedAt.Equal(Now()) {
		t.Fatalf("captured_at %s, Now() %s: they must agree", b.CapturedAt, Now())
	}
	for _, f := range []string{"kubernetes/nodes.json", "kubernetes/shop/pods.json", "kubernetes/shop/events.json", "prometheus/shop.om",
		"changes.json", "runbooks/checkout.md", "repos/checkout/internal/receipts/cache.go"} {
		if _, err := fs.Stat(Bundle(), f); err != nil {
			t.Errorf("demo bundle lacks %s: %v", f, err)
		}
	}
	src := b.Sources(Now())
	if got := src.Clock(); !got.Equal(Now()) {
		t.Fatalf("clock %s", got)
	}
}

func TestRequestMatchesScenario(t *testing.T) {
	data, err := fs.ReadFile(Bundle(), "scenario.json")
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Now     time.Time `json:"now"`
		Request struct {
			AgentName string            `json:"agent_name"`
			Message   string            `json:"message"`
			Context   map[string]string `json:"context"`
		} `json:"request"`
	}
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatal(err)
	}
	r := Request()
	if r.AgentName != sc.Request.AgentName || r.Message != sc.Request.Message || r.Context["service"] != "checkout" || r.Context["namespace"] != "shop" || !sc.Now.Equal(Now()) {
		t.Fatalf("Request() %+v and Now() %s disagree with scenario.json %+v", r, Now(), sc)
	}
	r.Context["service"] = "x"
	if Request().Context["service"] != "checkout" {
		t.Fatal("Request() shares its context map")
	}
}
