package oidcauth

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/secretref"
	"github.com/rootcause/rootcause/server"
)

// Config is the org root's `oidc` object (mergeconf/schema.json).
type Config struct {
	Issuer       string            `json:"issuer"`
	ClientID     string            `json:"client_id"`
	ClientSecret string            `json:"client_secret"` // a secret reference
	EmailClaim   string            `json:"email_claim"`
	GroupsClaim  string            `json:"groups_claim"`
	AdminGroups  []string          `json:"admin_groups"`
	TeamGroups   map[string]string `json:"team_groups"`
	WriteGroups  []string          `json:"write_groups"`
	AllowedAlgs  []string          `json:"allowed_algs"`
}

// ParseConfig reads the `oidc` object of an org root's own config document.
// ok is false when OIDC is not configured (no object, or no issuer or
// client id).
func ParseConfig(orgConfig map[string]any) (c Config, ok bool, err error) {
	raw, present := orgConfig["oidc"]
	if !present || raw == nil {
		return Config{}, false, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return Config{}, false, fmt.Errorf("oidc: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, false, fmt.Errorf("oidc: %w", err)
	}
	return c, c.Issuer != "" && c.ClientID != "", nil
}

// DynamicOptions configure NewDynamic.
type DynamicOptions struct {
	// Load returns the org root's own config document; required. It is
	// called on every verification, so it should be a cheap local read.
	Load func(ctx context.Context) (map[string]any, error)
	// Resolver resolves oidc.client_secret, only for the code exchange.
	Resolver secretref.Resolver
	// Base supplies everything the config does not: HTTP client, clock,
	// logger, clock skew, JWKS refetch floor.
	Base Settings
}

// Dynamic is a server.JWTVerifier and server.OIDCLogin that follows the
// org root's `oidc` object: each call reads the current config, and a
// changed object replaces the underlying Verifier (new discovery, new key
// cache) so an admin's change takes effect on the next request. Without an
// oidc object (or without issuer and client_id) every JWT is refused as
// unauthorized and the login routes answer 404.
type Dynamic struct {
	opts DynamicOptions

	mu     sync.Mutex
	fp     string // canonical JSON of the oidc object in use
	cur    *Verifier
	curErr error
}

// NewDynamic returns a Dynamic verifier.
func NewDynamic(o DynamicOptions) *Dynamic {
	if o.Load == nil {
		panic("oidcauth: DynamicOptions.Load is required")
	}
	return &Dynamic{opts: o}
}

var errNotConfigured = db.Errorf(db.EUNAUTHORIZED, "OIDC sign-in is not configured")

// Current returns the Verifier for the current config, or (nil, nil) when
// OIDC is not configured.
func (d *Dynamic) Current(ctx context.Context) (*Verifier, error) {
	doc, err := d.opts.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the org's oidc config: %w", err)
	}
	c, ok, err := ParseConfig(doc)
	if err != nil {
		return nil, err
	}
	fp := ""
	if ok {
		b, _ := json.Marshal(c)
		fp = string(b)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if fp == d.fp && (d.cur != nil || d.curErr != nil || fp == "") {
		return d.cur, d.curErr
	}
	log := d.opts.Base.Logger
	if log == nil {
		log = defaultLogger()
	}
	d.fp, d.cur, d.curErr = fp, nil, nil
	if !ok {
		log.Info("OIDC sign-in disabled: the org config has no oidc issuer and client_id")
		return nil, nil
	}
	s := d.opts.Base
	s.Issuer, s.ClientID = c.Issuer, c.ClientID
	s.EmailClaim, s.GroupsClaim = c.EmailClaim, c.GroupsClaim
	s.AdminGroups, s.TeamGroups, s.WriteGroups = c.AdminGroups, c.TeamGroups, c.WriteGroups
	s.AllowedAlgs = c.AllowedAlgs
	s.ClientSecret = nil
	if ref, res := c.ClientSecret, d.opts.Resolver; ref != "" {
		s.ClientSecret = func(ctx context.Context) (string, error) {
			if res == nil {
				return "", fmt.Errorf("no secret resolver for oidc.client_secret")
			}
			return res.Resolve(ctx, ref)
		}
	}
	v, err := NewVerifier(ctx, s)
	if err != nil {
		log.Error("OIDC configuration unusable; OIDC sign-in refused", "issuer", c.Issuer, "error", err.Error())
		d.curErr = &db.Error{Code: db.EUNAVAILABLE, Message: "the OIDC configuration is unusable: " + err.Error(), Err: err}
		return nil, d.curErr
	}
	log.Info("OIDC sign-in configured", "issuer", c.Issuer, "client_id", c.ClientID,
		"admin_groups", len(c.AdminGroups), "team_groups", len(c.TeamGroups))
	d.cur = v
	return v, nil
}

// Verify implements server.JWTVerifier.
func (d *Dynamic) Verify(ctx context.Context, raw string) (*server.Principal, error) {
	v, err := d.Current(ctx)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errNotConfigured
	}
	return v.Verify(ctx, raw)
}

func (d *Dynamic) login(ctx context.Context) (*Verifier, error) {
	v, err := d.Current(ctx)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, db.Errorf(db.ENOTFOUND, "OIDC sign-in is not configured: set issuer and client_id in the org's oidc config")
	}
	return v, nil
}

// AuthCodeURL implements server.OIDCLogin.
func (d *Dynamic) AuthCodeURL(ctx context.Context, redirectURL, state, nonce, pkceVerifier string) (string, error) {
	v, err := d.login(ctx)
	if err != nil {
		return "", err
	}
	return v.AuthCodeURL(ctx, redirectURL, state, nonce, pkceVerifier)
}

// Exchange implements server.OIDCLogin.
func (d *Dynamic) Exchange(ctx context.Context, redirectURL, code, pkceVerifier, nonce string) (*server.LoginResult, error) {
	v, err := d.login(ctx)
	if err != nil {
		return nil, err
	}
	return v.Exchange(ctx, redirectURL, code, pkceVerifier, nonce)
}

// Warm loads the config and runs discovery once, so that a misconfigured
// or unreachable provider is reported in the log at startup rather than at
// the first sign-in. Failures are only logged: the server runs without
// OIDC until the provider answers.
func (d *Dynamic) Warm(ctx context.Context) {
	log := d.opts.Base.Logger
	if log == nil {
		log = defaultLogger()
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := d.Current(ctx)
	if err != nil {
		log.Warn("OIDC configuration not loaded", "error", err.Error())
		return
	}
	if v == nil {
		return
	}
	if err := v.Discover(ctx); err == nil {
		log.Info("OIDC provider discovered", "issuer", v.Issuer())
	} // a failure was logged by discover
}
