// Package changes is the live Changes backend: deployments and commits of
// the team's GitHub repositories, merged in time order. (Kubernetes rollout
// history is merged by the list_changes tool from the kubernetes source,
// so a team with only Kubernetes still sees its rollouts.)
package changes

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

// GitHub is what the backend needs of the GitHub client.
type GitHub interface {
	Repos(ctx context.Context) ([]string, error)
	Commits(ctx context.Context, repo string, since time.Time) ([]evidence.Commit, error)
	Deployments(ctx context.Context, repo string, since time.Time) ([]evidence.Change, error)
}

// Source merges GitHub deployments (kind deploy) and, when Commits is true,
// default-branch commits (kind "commit": a code change not known to be
// deployed) of Repos (empty: every repository the client lists). The
// service of a change is the repository's name.
type Source struct {
	GitHub  GitHub
	Repos   []string
	Commits bool
}

// New returns the Changes of tools.changes settings {enabled, repositories,
// include_commits (default false)} over gh, or a nil interface when gh is nil or changes
// are disabled.
func New(settings map[string]any, gh GitHub) (evidence.Changes, error) {
	if isNil(gh) {
		return nil, nil
	}
	if en, ok := settings["enabled"].(bool); ok && !en {
		return nil, nil
	}
	s := &Source{GitHub: gh}
	if v, ok := settings["include_commits"].(bool); ok {
		s.Commits = v
	}
	if list, ok := settings["repositories"].([]any); ok {
		for i, r := range list {
			str, ok := r.(string)
			if !ok || strings.Count(str, "/") != 1 {
				return nil, fmt.Errorf("tools.changes.repositories[%d]: want \"owner/name\"", i)
			}
			s.Repos = append(s.Repos, str)
		}
	}
	return s, nil
}

// isNil reports whether v is nil or a typed nil pointer (a nil
// *github.Client passed as GitHub).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// List implements evidence.Changes.
func (s *Source) List(ctx context.Context, since, until time.Time, service string) ([]evidence.Change, error) {
	repos := s.Repos
	if len(repos) == 0 {
		var err error
		if repos, err = s.GitHub.Repos(ctx); err != nil {
			return nil, err
		}
	}
	var all []evidence.Change
	for _, r := range repos {
		_, name, _ := strings.Cut(r, "/")
		if service != "" && !strings.EqualFold(name, service) {
			continue
		}
		ds, err := s.GitHub.Deployments(ctx, r, since)
		if err != nil && evidence.CodeOf(err) != evidence.CodeNotFound {
			return nil, err
		}
		all = append(all, ds...)
		if !s.Commits {
			continue
		}
		cs, err := s.GitHub.Commits(ctx, r, since)
		if err != nil && evidence.CodeOf(err) != evidence.CodeNotFound {
			return nil, err
		}
		for _, c := range cs {
			msg, _, _ := strings.Cut(c.Message, "\n")
			all = append(all, evidence.Change{Timestamp: c.Time, Service: name, Kind: "commit",
				Description: "commit " + c.SHA[:min(7, len(c.SHA))] + " to " + r + ": " + msg,
				Revision:    c.SHA, Author: c.Author, Source: "github"})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Timestamp.Before(all[j].Timestamp) })
	return bundle.FilterChanges(all, since, until, ""), nil
}
