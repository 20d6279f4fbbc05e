package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/rootcause/rootcause/server"
)

// APIError is an error answer of the API, reversed from its JSON body.
// Error returns the message alone, which is what the CLI prints.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string { return e.Message }

// socketClient talks to a running server over its unix socket, where the
// server grants local trust, so no token is needed.
type socketClient struct {
	http    *http.Client
	version string
	// base and token are set for a remote server (ROOTCAUSE_URL,
	// ROOTCAUSE_TOKEN); empty base means the local socket.
	base  string
	token string
}

// socketAnswers reports whether a server answers on the socket at path.
// A missing file or a refused connection (a stale file left by a crash)
// means no server; any other dial error is returned.
func socketAnswers(path string) (bool, error) {
	conn, err := net.DialTimeout("unix", path, 2*time.Second)
	if err == nil {
		conn.Close()
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
		return false, nil
	}
	return false, fmt.Errorf("checking the server's socket %s: %w", path, err)
}

// localClient returns a client for the server answering on dataDir's
// socket, or nil when no server runs there.
func localClient(dataDir, version string) (*socketClient, error) {
	path := socketPath(dataDir)
	ok, err := socketAnswers(path)
	if err != nil || !ok {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		},
		MaxIdleConns:      2,
		IdleConnTimeout:   30 * time.Second,
		DisableKeepAlives: false,
	}
	return &socketClient{http: &http.Client{Transport: tr}, version: version}, nil
}

// do sends a JSON request and decodes a 2xx JSON answer into out (when not
// nil). Error answers become *APIError.
func (c *socketClient) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding the server's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns a 2xx response for the caller to read
// and close; any other status is turned into an *APIError.
func (c *socketClient) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding request: %w", err)
		}
		rd = bytes.NewReader(buf)
	}
	target := "http://" + server.LocalHost + path
	if c.base != "" {
		target = strings.TrimRight(c.base, "/") + path
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	if c.base == "" {
		req.Host = server.LocalHost
	} else if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("User-Agent", "rootcause-cli/"+c.version)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if c.base != "" {
			return nil, fmt.Errorf("calling %s: %w", c.base, err)
		}
		return nil, fmt.Errorf("calling the server through its socket: %w", err)
	}
	if resp.Header.Get(server.HeaderVersion) == "" {
		resp.Body.Close()
		return nil, fmt.Errorf("the program answering is not a rootcause server (no %s header)", server.HeaderVersion)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, decodeAPIError(resp)
}

// decodeAPIError reverses an error answer to its code and message.
func decodeAPIError(resp *http.Response) error {
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err := json.Unmarshal(raw, &body); err != nil || body.Error.Message == "" {
		return &APIError{Status: resp.StatusCode, Code: "", Message: fmt.Sprintf("server answered %s", resp.Status)}
	}
	return &APIError{Status: resp.StatusCode, Code: body.Error.Code, Message: body.Error.Message}
}

// apiClient returns a client for the server the CLI talks to: the one at
// ROOTCAUSE_URL (with ROOTCAUSE_TOKEN as the bearer token) when set, else
// the local server answering on dataDir's socket.
func apiClient(baseURL, token, dataDir, version string) (*socketClient, error) {
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("ROOTCAUSE_URL %q: want http(s)://host[:port]", baseURL)
		}
		if token == "" {
			return nil, fmt.Errorf("ROOTCAUSE_TOKEN is not set: a remote server needs a token (rootcause token issue)")
		}
		return &socketClient{
			http:    &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConns: 2}},
			version: version, base: baseURL, token: token,
		}, nil
	}
	c, err := localClient(dataDir, version)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("no server to talk to: set ROOTCAUSE_URL and ROOTCAUSE_TOKEN, or start `rootcause serve --data-dir %s`", dataDir)
	}
	return c, nil
}
