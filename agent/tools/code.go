package tools

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Bounds of the code tools.
const (
	MaxReadLines    = 500
	MaxReadBytes    = 64 << 10
	MaxCodeMatches  = 100
	MaxCommitsShown = 100
)

// FileContent is the result of read_file: lines StartLine..EndLine (1-based,
// inclusive) of a file of TotalLines lines.
type FileContent struct {
	Repo       string `json:"repo"`
	Path       string `json:"path"`
	StartLine  int    `json:"start_line"`
	EndLine    int    `json:"end_line"`
	TotalLines int    `json:"total_lines"`
	Content    string `json:"content"`
	Truncated  bool   `json:"truncated"` // the requested range was cut to the bounds
}

func codeTools() []Tool {
	coding := []string{AgentCoding, AgentInvestigation}
	return []Tool{
		{
			Spec: Spec{
				Name:        "list_repositories",
				Description: "List the source repositories the code tools can read (owner/name on GitHub; directory names in incident bundles).",
				Parameters:  evSchema(`{}`),
				Integration: IntegrationGitHub, ReadOnly: true, Agents: coding,
			},
			Run: runListRepositories,
		},
		{
			Spec: Spec{
				Name: "search_github_code",
				Description: "Search source code for a string (case-insensitive literal; in incident bundles /regex/ is also accepted), " +
					"e.g. an error message from the logs, to find where it is raised. Returns repo, path, line (0 when GitHub does not say) and the matching text.",
				Parameters: evSchema(`{
					"query": {"type": "string", "description": "text to find, e.g. \"connection pool exhausted\""},
					"repo": {"type": "string", "description": "restrict to one repository from list_repositories; empty searches all"},
					"limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "max matches (default 30)"}
				}`, "query"),
				Integration: IntegrationGitHub, ReadOnly: true, Agents: coding,
			},
			Run: runSearchCode,
		},
		{
			Spec: Spec{
				Name:        "read_file",
				Description: "Read lines of a source file (at most 500 lines / 64 KiB per call; page with start_line). Paths are relative to the repository root.",
				Parameters: evSchema(`{
					"repo": {"type": "string", "description": "repository from list_repositories"},
					"path": {"type": "string", "description": "file path relative to the repository root"},
					"start_line": {"type": "integer", "minimum": 1, "description": "first line (default 1)"},
					"end_line": {"type": "integer", "minimum": 1, "description": "last line, inclusive (default start_line + 499)"}
				}`, "repo", "path"),
				Integration: IntegrationGitHub, ReadOnly: true, Agents: coding,
			},
			Run: runReadFile,
		},
		{
			Spec: Spec{
				Name:        "list_recent_commits",
				Description: "List recent commits of a repository's default branch, newest first (sha, time, author, message).",
				Parameters: evSchema(`{
					"repo": {"type": "string", "description": "repository from list_repositories"},
					"since": {"type": "string", "description": "RFC 3339 time or a duration back from now such as 3d (default 7d)"}
				}`, "repo"),
				Integration: IntegrationGitHub, ReadOnly: true, Agents: coding,
			},
			Run: runListCommits,
		},
		{
			Spec: Spec{
				Name:        "list_pull_requests",
				Description: "List pull requests of a repository updated or merged since a time, newest first (number, title, state, merged_at, author).",
				Parameters: evSchema(`{
					"repo": {"type": "string", "description": "repository from list_repositories"},
					"since": {"type": "string", "description": "RFC 3339 time or a duration back from now (default 7d)"}
				}`, "repo"),
				Integration: IntegrationGitHub, ReadOnly: true, Agents: coding,
			},
			Run: runListPulls,
		},
	}
}

func codeSource(env *Env) (evidence.Code, error) {
	if env == nil || env.Sources == nil || env.Sources.Code == nil {
		return nil, evNotConfigured("github", "github")
	}
	return env.Sources.Code, nil
}

func runListRepositories(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	if err := decodeArgs("list_repositories", raw, &struct{}{}); err != nil {
		return nil, err
	}
	c, err := codeSource(env)
	if err != nil {
		return nil, err
	}
	return c.Repos(ctx)
}

func runSearchCode(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Query, Repo string
		Limit       int
	}
	if err := decodeArgs("search_github_code", raw, &a); err != nil {
		return nil, err
	}
	c, err := codeSource(env)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, evidence.Errorf("search_github_code", evidence.CodeInvalid, "query is required")
	}
	return c.Search(ctx, a.Query, a.Repo, evLimit(a.Limit, 30, MaxCodeMatches))
}

func runReadFile(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Repo, Path string
		StartLine  int `json:"start_line"`
		EndLine    int `json:"end_line"`
	}
	if err := decodeArgs("read_file", raw, &a); err != nil {
		return nil, err
	}
	c, err := codeSource(env)
	if err != nil {
		return nil, err
	}
	if a.Repo == "" || a.Path == "" {
		return nil, evidence.Errorf("read_file", evidence.CodeInvalid, "repo and path are required")
	}
	text, err := c.ReadFile(ctx, a.Repo, a.Path)
	if err != nil {
		return nil, err
	}
	return SliceFile(a.Repo, a.Path, text, a.StartLine, a.EndLine), nil
}

// SliceFile cuts lines start..end (1-based, inclusive) of text within the
// read_file bounds.
func SliceFile(repo, path, text string, start, end int) *FileContent {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	fc := &FileContent{Repo: repo, Path: path, TotalLines: len(lines)}
	if start <= 0 {
		start = 1
	}
	if end <= 0 {
		end = start + MaxReadLines - 1
	} else if end < start {
		end = start
	} else if end-start+1 > MaxReadLines {
		end, fc.Truncated = start+MaxReadLines-1, true
	}
	if end > len(lines) {
		end = len(lines)
	}
	fc.StartLine = start
	if start > len(lines) {
		fc.EndLine = start - 1
		return fc
	}
	var b strings.Builder
	for i := start; i <= end; i++ {
		if b.Len()+len(lines[i-1]) > MaxReadBytes {
			end, fc.Truncated = i-1, true
			break
		}
		b.WriteString(lines[i-1])
	}
	fc.EndLine = end
	fc.Content = b.String()
	return fc
}

func runListCommits(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{ Repo, Since string }
	if err := decodeArgs("list_recent_commits", raw, &a); err != nil {
		return nil, err
	}
	c, err := codeSource(env)
	if err != nil {
		return nil, err
	}
	since, err := sinceDefault(env, a.Since, 7*24*time.Hour)
	if err != nil {
		return nil, err
	}
	if a.Repo == "" {
		return nil, evidence.Errorf("list_recent_commits", evidence.CodeInvalid, "repo is required")
	}
	list, err := c.Commits(ctx, a.Repo, since)
	if err != nil {
		return nil, err
	}
	return list[:min(len(list), MaxCommitsShown)], nil
}

func runListPulls(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{ Repo, Since string }
	if err := decodeArgs("list_pull_requests", raw, &a); err != nil {
		return nil, err
	}
	c, err := codeSource(env)
	if err != nil {
		return nil, err
	}
	since, err := sinceDefault(env, a.Since, 7*24*time.Hour)
	if err != nil {
		return nil, err
	}
	if a.Repo == "" {
		return nil, evidence.Errorf("list_pull_requests", evidence.CodeInvalid, "repo is required")
	}
	list, err := c.PullRequests(ctx, a.Repo, since)
	if err != nil {
		return nil, err
	}
	return list[:min(len(list), MaxCommitsShown)], nil
}

func sinceDefault(env *Env, s string, def time.Duration) (time.Time, error) {
	if s == "" {
		return env.Sources.Clock().Add(-def), nil
	}
	return evTime(env, s)
}
