package changes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

type fakeGH struct{ fail error }

func at(m int) time.Time { return time.Date(2026, 3, 14, 10, m, 0, 0, time.UTC) }

func (f fakeGH) Repos(ctx context.Context) ([]string, error) {
	return []string{"shop/checkout", "shop/payments"}, f.fail
}
func (f fakeGH) Commits(ctx context.Context, repo string, since time.Time) ([]evidence.Commit, error) {
	return []evidence.Commit{{SHA: "abcdef123", Time: at(10), Author: "alice", Message: "Lower pool\n\nbody"}}, f.fail
}
func (f fakeGH) Deployments(ctx context.Context, repo string, since time.Time) ([]evidence.Change, error) {
	if repo == "shop/payments" {
		return nil, evidence.Errorf("github", evidence.CodeNotFound, "no deployments")
	}
	return []evidence.Change{{Timestamp: at(20), Service: "checkout", Kind: "deploy", Source: "github"}, {Timestamp: at(50), Service: "checkout", Kind: "deploy"}}, f.fail
}

func TestList(t *testing.T) {
	c, err := New(map[string]any{"include_commits": true}, fakeGH{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.List(context.Background(), at(0), at(45), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Kind != "commit" || got[0].Description != "commit abcdef1 to shop/checkout: Lower pool" || got[1].Service != "payments" || got[2].Kind != "deploy" || got[2].Service != "checkout" {
		t.Fatalf("got %+v", got)
	}
	got, _ = c.List(context.Background(), at(0), at(45), "payments")
	if len(got) != 1 || got[0].Service != "payments" {
		t.Errorf("service filter: %+v", got)
	}
	noCommits, _ := New(nil, fakeGH{})
	if got, _ := noCommits.List(context.Background(), at(0), at(45), ""); len(got) != 1 {
		t.Errorf("without commits: %+v", got)
	}
	boom := evidence.Errorf("github", evidence.CodeUnavailable, "down")
	failing, _ := New(nil, fakeGH{fail: boom})
	if _, err := failing.List(context.Background(), at(0), at(45), ""); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	if c, _ := New(nil, nil); c != nil {
		t.Error("nil github gives a source")
	}
}

type nilPtrGH struct{ fakeGH }

func TestTypedNil(t *testing.T) {
	var gh *nilPtrGH
	if c, err := New(nil, gh); c != nil || err != nil {
		t.Errorf("typed nil github gives %v, %v", c, err)
	}
}
