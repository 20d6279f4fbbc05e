package knowledge

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/rootcause/rootcause/agent/evidence"
)

// RepoReader lists and reads files of a code repository (the GitHub
// client implements it). ListFiles returns the paths of the files under
// dir ("" for the whole repository).
type RepoReader interface {
	ListFiles(ctx context.Context, repo, dir string) ([]string, error)
	ReadFile(ctx context.Context, repo, path string) (string, error)
}

// Source kinds of a team's knowledge_source (spec 2.5).
const (
	KindRunbooks  = "runbooks"  // admin-set local folders of Markdown
	KindDirectory = "directory" // the same
	KindGitHub    = "github"    // "owner/repo" or "owner/repo/path/in/repo"
)

// New returns the Knowledge of a team's knowledge_source: kinds "runbooks"
// and "directory" list local folders (admin-only settings) read
// recursively for *.md; kind "github" lists "owner/repo[/dir]" locations
// read through gh (nil: such locations are an error). Other kinds are
// reported as errors so a typo does not silently drop runbooks. The index
// is built on the first search and then reused. It returns a nil interface
// when sources has no location.
func New(sources map[string][]string, gh RepoReader) (evidence.Knowledge, error) {
	if gh != nil {
		if rv := reflect.ValueOf(gh); rv.Kind() == reflect.Pointer && rv.IsNil() {
			gh = nil // a nil *github.Client: GitHub is not configured
		}
	}
	n := 0
	for kind, locs := range sources {
		switch kind {
		case KindRunbooks, KindDirectory:
			for _, l := range locs {
				if !filepath.IsAbs(l) {
					return nil, fmt.Errorf("knowledge_source.%s: %q must be an absolute path", kind, l)
				}
			}
		case KindGitHub:
			if gh == nil && len(locs) > 0 {
				return nil, fmt.Errorf("knowledge_source.github needs tools.github to be configured")
			}
			for _, l := range locs {
				if strings.Count(l, "/") < 1 {
					return nil, fmt.Errorf("knowledge_source.github: %q: want owner/repo or owner/repo/path", l)
				}
			}
		default:
			return nil, fmt.Errorf("knowledge_source: unknown kind %q (want runbooks, directory or github)", kind)
		}
		n += len(locs)
	}
	if n == 0 {
		return nil, nil
	}
	return &lazySource{sources: sources, gh: gh}, nil
}

type lazySource struct {
	sources map[string][]string
	gh      RepoReader

	mu  sync.Mutex
	ix  *Index
	err error
}

func (s *lazySource) Search(ctx context.Context, query string, limit int) ([]evidence.Passage, error) {
	s.mu.Lock()
	if s.ix == nil {
		s.ix, s.err = s.build(ctx)
		if s.err != nil {
			s.ix = nil
		}
	}
	ix, err := s.ix, s.err
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ix.Search(ctx, query, limit)
}

func (s *lazySource) build(ctx context.Context) (*Index, error) {
	ix := NewIndex()
	for kind, locs := range s.sources {
		for _, loc := range locs {
			switch kind {
			case KindRunbooks, KindDirectory:
				if _, err := ix.AddFS(os.DirFS(loc), ".", strings.TrimSuffix(loc, "/")+"/"); err != nil {
					return nil, &evidence.Error{Source: "knowledge", Code: evidence.CodeUnavailable, Err: err}
				}
			case KindGitHub:
				if err := s.addGitHub(ctx, ix, loc); err != nil {
					return nil, err
				}
			}
		}
	}
	return ix, nil
}

func (s *lazySource) addGitHub(ctx context.Context, ix *Index, loc string) error {
	parts := strings.SplitN(loc, "/", 3)
	repo, dir := parts[0]+"/"+parts[1], ""
	if len(parts) == 3 {
		dir = strings.Trim(parts[2], "/")
	}
	files, err := s.gh.ListFiles(ctx, repo, dir)
	if err != nil {
		return err
	}
	n := 0
	for _, f := range files {
		if !strings.EqualFold(path.Ext(f), ".md") {
			continue
		}
		if n >= MaxDocs {
			break
		}
		text, err := s.gh.ReadFile(ctx, repo, f)
		if err != nil {
			if evidence.CodeOf(err) == evidence.CodeUnavailable {
				return err
			}
			continue
		}
		ix.AddMarkdown("github:"+repo+"/"+f, text)
		n++
	}
	return nil
}
