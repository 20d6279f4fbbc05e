package secretref

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// VaultOptions configures vault: references (HashiCorp Vault KV version 2
// over its HTTP API).
type VaultOptions struct {
	// Address is Vault's base URL, for example https://vault.internal:8200.
	// Empty disables vault: references.
	Address string
	// Token is a reference (env: or file:) to the Vault token, never the
	// token itself; it is resolved on each request.
	Token string
	// Namespace is sent as X-Vault-Namespace when set (Vault Enterprise).
	Namespace string
	// HTTPClient is used for requests; nil means a client with a 10 s
	// overall timeout and 5 s dial and TLS handshake timeouts.
	HTTPClient *http.Client
}

// maxVaultResponse bounds the body read from Vault.
const maxVaultResponse = 1 << 20

type vaultClient struct {
	base      *url.URL
	namespace string
	hc        *http.Client
}

func newVaultClient(o VaultOptions) *vaultClient {
	if o.Address == "" {
		return nil
	}
	u, err := url.Parse(strings.TrimRight(o.Address, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Keep a client so that each use reports the bad address clearly.
		return &vaultClient{}
	}
	hc := o.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = 5 * time.Second
		tr.ResponseHeaderTimeout = 10 * time.Second
		hc = &http.Client{Timeout: 10 * time.Second, Transport: tr}
	}
	return &vaultClient{base: u, namespace: o.Namespace, hc: hc}
}

// kvResponse is the KV v2 read response: {"data": {"data": {...},
// "metadata": {...}}}.
type kvResponse struct {
	Data *struct {
		Data     map[string]any `json:"data"`
		Metadata map[string]any `json:"metadata"`
	} `json:"data"`
}

// read fetches GET {addr}/v1/{mount}/data/{path} and returns data.data.
func (c *vaultClient) read(ctx context.Context, token, mount, path string) (map[string]any, error) {
	if c.base == nil {
		return nil, fmt.Errorf("%w: vault address must be an http or https URL", ErrNotConfigured)
	}
	target := strings.TrimRight(c.base.String(), "/") + "/v1/" + escapePath(mount) + "/data/" + escapePath(path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("building vault request: %w", err)
	}
	req.Header.Set("X-Vault-Token", token)
	req.Header.Set("X-Vault-Request", "true")
	if c.namespace != "" {
		req.Header.Set("X-Vault-Namespace", c.namespace)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading from vault: %w", ctx.Err())
		}
		return nil, fmt.Errorf("%w: %s", ErrUnreachable, describeTransportError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxVaultResponse+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading response: %v", ErrUnreachable, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, ErrNotFound
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized:
		return nil, ErrPermissionDenied
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: status %d", ErrUnreachable, resp.StatusCode)
	}
	if len(body) > maxVaultResponse {
		return nil, fmt.Errorf("%w: response larger than %d bytes", ErrUnreachable, maxVaultResponse)
	}
	var kv kvResponse
	if err := json.Unmarshal(body, &kv); err != nil {
		// The decoder's message can quote the body, which holds secrets.
		return nil, fmt.Errorf("%w: response is not a KV v2 secret", ErrUnreachable)
	}
	if kv.Data == nil || (kv.Data.Data == nil && kv.Data.Metadata == nil) {
		return nil, fmt.Errorf("%w: response is not a KV v2 secret (is the mount KV version 2?)", ErrUnreachable)
	}
	if kv.Data.Data == nil {
		// A deleted or destroyed latest version reads as data: null.
		return nil, ErrNotFound
	}
	return kv.Data.Data, nil
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// describeTransportError keeps the cause of a failed request (refused,
// timeout, DNS) without the full URL noise.
func describeTransportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return err.Error()
}
