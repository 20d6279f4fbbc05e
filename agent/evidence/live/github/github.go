// Package github is the live Code backend: a small GitHub REST v3 client
// over net/http (no third-party SDK) for code search, file contents,
// commits, pull requests and deployments, on github.com or GitHub
// Enterprise Server.
//
// Settings (tools.github): domain ("" or "github.com" for
// https://api.github.com; "ghe.example.com" for
// https://ghe.example.com/api/v3; a full URL is used as the API base, for
// tests and proxies), api_key (a secret reference; else
// tokens_vault_path.github), repositories (["owner/name", ...], the
// repositories the team's agents may read; searches are restricted to
// them), org (when repositories is empty: the organisation's
// repositories), timeout_seconds (per request, default 20).
package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/outbound"
	"github.com/rootcause/rootcause/secretref"
)

// Limits.
const (
	MaxFileSize = 1 << 20
	maxBody     = 8 << 20
	maxPages    = 5
)

// Client is a GitHub REST client. It implements evidence.Code.
type Client struct {
	Base  string // API base URL without trailing slash
	Token string
	HTTP  *http.Client
	// Repositories restricts the client to these "owner/name" repositories;
	// empty with Org set lists the organisation's.
	Repositories []string
	Org          string
}

var _ evidence.Code = (*Client)(nil)

// New returns a Client for tools.github settings, resolving the token from
// api_key or tokens["github"]. It returns (nil, nil) when settings is nil
// or enabled is false: use c.Code() for Sources.Code, never c itself, so
// an absent client is a nil interface.
//
// Every request goes through guard (nil exempts nothing): the domain is a
// setting a team may choose.
func New(ctx context.Context, settings map[string]any, tokens map[string]string, res secretref.Resolver, guard *outbound.Guard) (*Client, error) {
	if settings == nil {
		return nil, nil
	}
	if en, ok := settings["enabled"].(bool); ok && !en {
		return nil, nil
	}
	c := &Client{Base: "https://api.github.com"}
	if d, _ := settings["domain"].(string); d != "" && d != "github.com" && d != "api.github.com" {
		if strings.Contains(d, "://") {
			u, err := url.Parse(d)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("tools.github.domain: %q is not a URL", d)
			}
			c.Base = strings.TrimSuffix(d, "/")
		} else {
			if strings.ContainsAny(d, "/?#@ ") {
				return nil, fmt.Errorf("tools.github.domain: %q is not a host name", d)
			}
			c.Base = "https://" + d + "/api/v3"
		}
	}
	if err := guard.CheckURL(c.Base); err != nil {
		return nil, fmt.Errorf("tools.github.domain: %w", err)
	}
	ref, _ := settings["api_key"].(string)
	if ref == "" {
		ref = tokens["github"]
	}
	if ref != "" {
		if res == nil {
			return nil, errors.New("tools.github: no secret resolver to read api_key")
		}
		tok, err := res.Resolve(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("tools.github.api_key: %w", err)
		}
		c.Token = strings.TrimSpace(tok)
	}
	switch v := settings["repositories"].(type) {
	case nil:
	case []string:
		c.Repositories = v
	case []any:
		for i, r := range v {
			s, ok := r.(string)
			if !ok || strings.Count(s, "/") != 1 {
				return nil, fmt.Errorf("tools.github.repositories[%d]: want \"owner/name\"", i)
			}
			c.Repositories = append(c.Repositories, s)
		}
	default:
		return nil, errors.New("tools.github.repositories: want a list of \"owner/name\"")
	}
	c.Org, _ = settings["org"].(string)
	timeout := 20 * time.Second
	if t, ok := mergeconf.Number(settings["timeout_seconds"]); ok && t > 0 {
		timeout = time.Duration(t * float64(time.Second))
	}
	c.HTTP = guard.Client(timeout)
	return c, nil
}

// Code returns c as an evidence.Code, or a nil interface when c is nil
// (so that Sources.Code is never a typed nil).
func (c *Client) Code() evidence.Code {
	if c == nil {
		return nil
	}
	return c
}

// apiError is a GitHub error response.
type apiError struct {
	Message string `json:"message"`
}

// get fetches path (with query) and decodes JSON into v, or returns the raw
// body when v is a *[]byte.
func (c *Client) get(ctx context.Context, path string, accept string, v any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return nil, evidence.Errorf("github", evidence.CodeInvalid, "%v", err)
	}
	if accept == "" {
		accept = "application/vnd.github+json"
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "rootcause")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = (*outbound.Guard)(nil).Client(20 * time.Second)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, &evidence.Error{Source: "github", Code: evidence.CodeUnavailable, Err: fmt.Errorf("GitHub API unreachable: %v", err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, &evidence.Error{Source: "github", Code: evidence.CodeUnavailable, Err: fmt.Errorf("reading GitHub response: %v", err)}
	}
	if resp.StatusCode/100 != 2 {
		return nil, statusError(resp, body)
	}
	switch out := v.(type) {
	case nil:
	case *[]byte:
		*out = body
	default:
		if err := json.Unmarshal(body, v); err != nil {
			// Not the decoder's text: it quotes the answer's first bytes,
			// which would tell a team what listens at an address it chose.
			return nil, &evidence.Error{Source: "github", Code: evidence.CodeUnavailable, Err: fmt.Errorf("the answer to %s is not GitHub API JSON", path)}
		}
	}
	return resp.Header, nil
}

func statusError(resp *http.Response, body []byte) error {
	var ae apiError
	_ = json.Unmarshal(body, &ae)
	msg := ae.Message
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	code := evidence.CodeUnavailable
	switch {
	case resp.StatusCode == http.StatusTooManyRequests ||
		resp.StatusCode == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" || resp.Header.Get("Retry-After") != ""):
		retry := ""
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			retry = " retry after " + ra + "s"
		} else if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			retry = " retry after " + time.Unix(reset, 0).UTC().Format(time.RFC3339)
		}
		return evidence.Errorf("github", evidence.CodeUnavailable, "GitHub rate limit exceeded:%s (%s)", retry, msg)
	case resp.StatusCode == http.StatusNotFound:
		code = evidence.CodeNotFound
	case resp.StatusCode == http.StatusUnprocessableEntity || resp.StatusCode == http.StatusBadRequest:
		code = evidence.CodeInvalid
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		msg = "access denied (check tools.github.api_key): " + msg
	}
	return evidence.Errorf("github", code, "GitHub API %d: %s", resp.StatusCode, msg)
}

func splitRepo(repo string) (string, string, error) {
	o, r, ok := strings.Cut(repo, "/")
	if !ok || o == "" || r == "" || strings.ContainsAny(r, "/?#") || o == ".." || r == ".." {
		return "", "", evidence.Errorf("github", evidence.CodeInvalid, "repository %q: want \"owner/name\"", repo)
	}
	return o, r, nil
}

func (c *Client) allowed(repo string) error {
	if _, _, err := splitRepo(repo); err != nil {
		return err
	}
	if len(c.Repositories) == 0 {
		return nil
	}
	for _, r := range c.Repositories {
		if strings.EqualFold(r, repo) {
			return nil
		}
	}
	return evidence.Errorf("github", evidence.CodeNotFound, "repository %q is not among tools.github.repositories", repo)
}

func repoPath(repo string) string {
	o, r, _ := strings.Cut(repo, "/")
	return "/repos/" + url.PathEscape(o) + "/" + url.PathEscape(r)
}

// Repos lists the configured repositories, or the organisation's, or the
// token owner's.
func (c *Client) Repos(ctx context.Context) ([]string, error) {
	if len(c.Repositories) > 0 {
		out := append([]string(nil), c.Repositories...)
		sort.Strings(out)
		return out, nil
	}
	p := "/user/repos?per_page=100&sort=pushed"
	if c.Org != "" {
		p = "/orgs/" + url.PathEscape(c.Org) + "/repos?per_page=100&sort=pushed"
	}
	out := []string{}
	for page := 1; page <= maxPages; page++ {
		var list []struct {
			FullName string `json:"full_name"`
		}
		if _, err := c.get(ctx, p+"&page="+strconv.Itoa(page), "", &list); err != nil {
			return nil, err
		}
		for _, r := range list {
			out = append(out, r.FullName)
		}
		if len(list) < 100 {
			break
		}
	}
	sort.Strings(out)
	return out, nil
}

// Search runs GitHub code search (GET /search/code) restricted to repo, or
// to the configured repositories or organisation. Text is the first
// matching fragment GitHub returns; GitHub does not report line numbers,
// so Line is 0.
func (c *Client) Search(ctx context.Context, query, repo string, limit int) ([]evidence.CodeMatch, error) {
	if strings.TrimSpace(query) == "" {
		return nil, evidence.Errorf("github", evidence.CodeInvalid, "empty search query")
	}
	if limit <= 0 {
		limit = bundle.DefaultSearchLimit
	}
	limit = min(limit, 100)
	q := query
	switch {
	case repo != "":
		if err := c.allowed(repo); err != nil {
			return nil, err
		}
		q += " repo:" + repo
	case len(c.Repositories) > 0:
		for _, r := range c.Repositories {
			q += " repo:" + r
		}
	case c.Org != "":
		q += " org:" + c.Org
	}
	var resp struct {
		Items []struct {
			Path       string `json:"path"`
			Repository struct {
				FullName string `json:"full_name"`
			} `json:"repository"`
			TextMatches []struct {
				Fragment string `json:"fragment"`
			} `json:"text_matches"`
		} `json:"items"`
	}
	v := url.Values{"q": {q}, "per_page": {strconv.Itoa(limit)}}
	if _, err := c.get(ctx, "/search/code?"+v.Encode(), "application/vnd.github.text-match+json", &resp); err != nil {
		return nil, err
	}
	out := []evidence.CodeMatch{}
	for _, it := range resp.Items {
		m := evidence.CodeMatch{Repo: it.Repository.FullName, Path: it.Path}
		if len(it.TextMatches) > 0 {
			m.Text = it.TextMatches[0].Fragment
		}
		out = append(out, m)
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

// ReadFile reads a file through the contents API (raw media type).
func (c *Client) ReadFile(ctx context.Context, repo, p string) (string, error) {
	if err := c.allowed(repo); err != nil {
		return "", err
	}
	clean, err := bundle.CleanRepoPath(p)
	if err != nil {
		return "", evidence.Errorf("github", evidence.CodeInvalid, "%v", err)
	}
	segs := strings.Split(clean, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	var body []byte
	if _, err := c.get(ctx, repoPath(repo)+"/contents/"+strings.Join(segs, "/"), "application/vnd.github.raw+json", &body); err != nil {
		return "", err
	}
	if len(body) > MaxFileSize {
		return "", evidence.Errorf("github", evidence.CodeInvalid, "%s: %q is larger than 1 MiB", repo, clean)
	}
	if strings.IndexByte(string(body[:min(len(body), 8000)]), 0) >= 0 {
		return "", evidence.Errorf("github", evidence.CodeInvalid, "%s: %q is a binary file", repo, clean)
	}
	return string(body), nil
}

// ListFiles lists the file paths of repo under dir (the default branch's
// tree, recursively).
func (c *Client) ListFiles(ctx context.Context, repo, dir string) ([]string, error) {
	if err := c.allowed(repo); err != nil {
		return nil, err
	}
	var tree struct {
		Tree []struct {
			Path string `json:"path"`
			Type string `json:"type"`
			Size int    `json:"size"`
		} `json:"tree"`
		Truncated bool `json:"truncated"`
	}
	if _, err := c.get(ctx, repoPath(repo)+"/git/trees/HEAD?recursive=1", "", &tree); err != nil {
		return nil, err
	}
	dir = strings.Trim(dir, "/")
	out := []string{}
	for _, e := range tree.Tree {
		if e.Type != "blob" || e.Size > MaxFileSize {
			continue
		}
		if dir == "" || strings.HasPrefix(e.Path, dir+"/") {
			out = append(out, e.Path)
		}
	}
	sort.Strings(out)
	return out, nil
}

type ghCommit struct {
	SHA    string `json:"sha"`
	Commit struct {
		Message string `json:"message"`
		Author  struct {
			Name string    `json:"name"`
			Date time.Time `json:"date"`
		} `json:"author"`
		Committer struct {
			Date time.Time `json:"date"`
		} `json:"committer"`
	} `json:"commit"`
	Author *struct {
		Login string `json:"login"`
	} `json:"author"`
}

// Commits lists commits of the default branch since since, newest first.
func (c *Client) Commits(ctx context.Context, repo string, since time.Time) ([]evidence.Commit, error) {
	if err := c.allowed(repo); err != nil {
		return nil, err
	}
	v := url.Values{"per_page": {"100"}}
	if !since.IsZero() {
		v.Set("since", since.UTC().Format(time.RFC3339))
	}
	var list []ghCommit
	if _, err := c.get(ctx, repoPath(repo)+"/commits?"+v.Encode(), "", &list); err != nil {
		return nil, err
	}
	out := []evidence.Commit{}
	for _, gc := range list {
		cm := evidence.Commit{SHA: gc.SHA, Time: gc.Commit.Committer.Date.UTC(), Author: gc.Commit.Author.Name, Message: gc.Commit.Message}
		if cm.Time.IsZero() {
			cm.Time = gc.Commit.Author.Date.UTC()
		}
		if gc.Author != nil && gc.Author.Login != "" {
			cm.Author = gc.Author.Login
		}
		out = append(out, cm)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out, nil
}

// PullRequests lists pull requests updated since since (all states),
// newest first.
func (c *Client) PullRequests(ctx context.Context, repo string, since time.Time) ([]evidence.PullRequest, error) {
	if err := c.allowed(repo); err != nil {
		return nil, err
	}
	var list []struct {
		Number    int        `json:"number"`
		Title     string     `json:"title"`
		State     string     `json:"state"`
		MergedAt  *time.Time `json:"merged_at"`
		UpdatedAt time.Time  `json:"updated_at"`
		HTMLURL   string     `json:"html_url"`
		User      struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	if _, err := c.get(ctx, repoPath(repo)+"/pulls?state=all&sort=updated&direction=desc&per_page=100", "", &list); err != nil {
		return nil, err
	}
	out := []evidence.PullRequest{}
	for _, p := range list {
		if !since.IsZero() && p.UpdatedAt.Before(since) {
			continue
		}
		pr := evidence.PullRequest{Number: p.Number, Title: p.Title, State: p.State, Author: p.User.Login, URL: p.HTMLURL}
		if p.MergedAt != nil {
			pr.MergedAt = p.MergedAt.UTC()
			pr.State = "merged"
		}
		out = append(out, pr)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	return out, nil
}

// Deployments lists deployments of repo created since since, as changes
// of kind deploy (service: the repository's name, revision: the SHA).
func (c *Client) Deployments(ctx context.Context, repo string, since time.Time) ([]evidence.Change, error) {
	if err := c.allowed(repo); err != nil {
		return nil, err
	}
	var list []struct {
		SHA         string    `json:"sha"`
		Ref         string    `json:"ref"`
		Environment string    `json:"environment"`
		Description string    `json:"description"`
		CreatedAt   time.Time `json:"created_at"`
		Creator     struct {
			Login string `json:"login"`
		} `json:"creator"`
	}
	if _, err := c.get(ctx, repoPath(repo)+"/deployments?per_page=100", "", &list); err != nil {
		return nil, err
	}
	_, name, _ := strings.Cut(repo, "/")
	out := []evidence.Change{}
	for _, d := range list {
		if !since.IsZero() && d.CreatedAt.Before(since) {
			continue
		}
		desc := fmt.Sprintf("deployment of %s (%s) to %s", d.Ref, shortSHA(d.SHA), d.Environment)
		if d.Description != "" {
			desc += ": " + d.Description
		}
		out = append(out, evidence.Change{Timestamp: d.CreatedAt.UTC(), Service: name, Kind: "deploy",
			Description: desc, Revision: d.SHA, Author: d.Creator.Login, Source: "github"})
	}
	return out, nil
}

func shortSHA(s string) string { return s[:min(7, len(s))] }
