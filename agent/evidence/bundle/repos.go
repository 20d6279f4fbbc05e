package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Limits of the bundle code backend.
const (
	MaxCodeFileSize    = 1 << 20 // larger files are neither searched nor read
	DefaultSearchLimit = 50
	MaxSearchLimit     = 500
)

// skippedDirs are never searched.
var skippedDirs = map[string]bool{".git": true, "vendor": true, "node_modules": true, ".hg": true, ".svn": true}

// code returns the bundle's Code source, or nil when the bundle has no
// repos/ directory. Each directory repos/<name>/ is a repository; optional
// repos/<name>.commits.json and repos/<name>.pulls.json hold its commits
// and pull requests (arrays of evidence.Commit and evidence.PullRequest
// JSON).
func (b *Bundle) code() evidence.Code {
	entries, err := fs.ReadDir(b.FS, "repos")
	if err != nil {
		return nil
	}
	var repos []string
	for _, e := range entries {
		if e.IsDir() {
			repos = append(repos, e.Name())
		}
	}
	if len(repos) == 0 {
		return nil
	}
	sort.Strings(repos)
	return &bundleCode{fsys: b.FS, repos: repos}
}

type bundleCode struct {
	fsys  fs.FS
	repos []string
}

func (c *bundleCode) Repos(ctx context.Context) ([]string, error) {
	return append([]string(nil), c.repos...), nil
}

func (c *bundleCode) repo(name string) error {
	for _, r := range c.repos {
		if r == name {
			return nil
		}
	}
	return evidence.Errorf("github", evidence.CodeNotFound, "repository %q is not in the bundle (list_repositories lists them)", name)
}

// Search finds query in the text files of repo (empty: every repository):
// a case-insensitive literal, or a regular expression when written /re/.
// Binary files, files over 1 MiB and .git, vendor and node_modules
// directories are skipped; symbolic links are not followed.
func (c *bundleCode) Search(ctx context.Context, query, repo string, limit int) ([]evidence.CodeMatch, error) {
	if strings.TrimSpace(query) == "" {
		return nil, evidence.Errorf("github", evidence.CodeInvalid, "empty search query")
	}
	var re *regexp.Regexp
	var err error
	if len(query) > 2 && strings.HasPrefix(query, "/") && strings.HasSuffix(query, "/") {
		re, err = regexp.Compile(query[1 : len(query)-1])
	} else {
		re, err = regexp.Compile("(?i)" + regexp.QuoteMeta(query))
	}
	if err != nil {
		return nil, evidence.Errorf("github", evidence.CodeInvalid, "query %q: %v", query, err)
	}
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	repos := c.repos
	if repo != "" {
		if err := c.repo(repo); err != nil {
			return nil, err
		}
		repos = []string{repo}
	}
	out := []evidence.CodeMatch{}
	for _, r := range repos {
		root := "repos/" + r
		err := fs.WalkDir(c.fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if d.IsDir() {
				if p != root && skippedDirs[d.Name()] {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil // symlinks and devices
			}
			info, err := d.Info()
			if err != nil || info.Size() > MaxCodeFileSize {
				return nil
			}
			data, err := fs.ReadFile(c.fsys, p)
			if err != nil || isBinary(data) {
				return nil
			}
			rel := strings.TrimPrefix(p, root+"/")
			for i, line := range strings.Split(string(data), "\n") {
				if re.MatchString(line) {
					text := strings.TrimRight(line, "\r")
					if len(text) > 400 {
						text = text[:400]
					}
					out = append(out, evidence.CodeMatch{Repo: r, Path: rel, Line: i + 1, Text: strings.ToValidUTF8(text, "\uFFFD")})
					if len(out) >= limit {
						return errSearchFull
					}
				}
			}
			return nil
		})
		if errors.Is(err, errSearchFull) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

var errSearchFull = errors.New("search full")

// isBinary reports whether data looks binary: a NUL byte in its first
// 8000 bytes (the test git uses).
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// CleanRepoPath validates a path inside a repository: relative, no "..",
// no empty or "." elements after cleaning.
func CleanRepoPath(p string) (string, error) {
	p = strings.TrimPrefix(p, "./")
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.Contains(p, "\x00") {
		return "", fmt.Errorf("path %q must be relative to the repository root", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", fmt.Errorf("path %q must not contain ..", p)
		}
	}
	c := path.Clean(p)
	if !fs.ValidPath(c) || c == "." {
		return "", fmt.Errorf("path %q is not a valid file path", p)
	}
	return c, nil
}

// ReadFile returns a text file of repo. Paths with "..", absolute paths and
// paths through symbolic links are refused.
func (c *bundleCode) ReadFile(ctx context.Context, repo, p string) (string, error) {
	if err := c.repo(repo); err != nil {
		return "", err
	}
	clean, err := CleanRepoPath(p)
	if err != nil {
		return "", evidence.Errorf("github", evidence.CodeInvalid, "%v", err)
	}
	full := "repos/" + repo + "/" + clean
	// Refuse any symbolic link on the way: it could leave the bundle.
	parts := strings.Split(clean, "/")
	for i := range parts {
		sub := "repos/" + repo + "/" + strings.Join(parts[:i+1], "/")
		info, err := fs.Lstat(c.fsys, sub)
		if errors.Is(err, fs.ErrNotExist) {
			return "", evidence.Errorf("github", evidence.CodeNotFound, "%s: no file %q", repo, clean)
		}
		if err != nil {
			return "", evidence.Errorf("github", evidence.CodeInvalid, "%s: %q: %v", repo, clean, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return "", evidence.Errorf("github", evidence.CodeInvalid, "%s: %q goes through a symbolic link, which is not followed", repo, clean)
		}
		if i == len(parts)-1 && info.IsDir() {
			return "", evidence.Errorf("github", evidence.CodeInvalid, "%s: %q is a directory", repo, clean)
		}
	}
	f, err := c.fsys.Open(full)
	if err != nil {
		return "", evidence.Errorf("github", evidence.CodeNotFound, "%s: %q: %v", repo, clean, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxCodeFileSize+1))
	if err != nil {
		return "", evidence.Errorf("github", evidence.CodeUnavailable, "%s: %q: %v", repo, clean, err)
	}
	if len(data) > MaxCodeFileSize {
		return "", evidence.Errorf("github", evidence.CodeInvalid, "%s: %q is larger than 1 MiB", repo, clean)
	}
	if isBinary(data) {
		return "", evidence.Errorf("github", evidence.CodeInvalid, "%s: %q is a binary file", repo, clean)
	}
	return string(data), nil
}

func (c *bundleCode) Commits(ctx context.Context, repo string, since time.Time) ([]evidence.Commit, error) {
	if err := c.repo(repo); err != nil {
		return nil, err
	}
	var list []evidence.Commit
	if err := c.readJSON("repos/"+repo+".commits.json", &list); err != nil {
		return nil, err
	}
	out := []evidence.Commit{}
	for _, cm := range list {
		if since.IsZero() || !cm.Time.Before(since) {
			out = append(out, cm)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out, nil
}

func (c *bundleCode) PullRequests(ctx context.Context, repo string, since time.Time) ([]evidence.PullRequest, error) {
	if err := c.repo(repo); err != nil {
		return nil, err
	}
	var list []evidence.PullRequest
	if err := c.readJSON("repos/"+repo+".pulls.json", &list); err != nil {
		return nil, err
	}
	out := []evidence.PullRequest{}
	for _, pr := range list {
		// Open pull requests (no merge time) are always listed.
		if since.IsZero() || pr.MergedAt.IsZero() || !pr.MergedAt.Before(since) {
			out = append(out, pr)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	return out, nil
}

// readJSON decodes an optional file; absent leaves v unchanged.
func (c *bundleCode) readJSON(name string, v any) error {
	data, err := fs.ReadFile(c.fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		return &evidence.Error{Source: "github", Code: evidence.CodeMalformed, File: name, Err: err}
	}
	return nil
}
