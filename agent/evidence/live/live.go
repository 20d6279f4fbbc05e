// Package live builds the evidence sources of a team from its effective
// `tools` configuration: the live backends (client-go, the Prometheus HTTP
// API, CloudWatch, GitHub, host log files, changes) behind the evidence
// interfaces. Integrations that are absent or disabled are plain nil
// interfaces, which tools report as data gaps.
package live

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/live/changes"
	"github.com/rootcause/rootcause/agent/evidence/live/cloudwatch"
	"github.com/rootcause/rootcause/agent/evidence/live/github"
	"github.com/rootcause/rootcause/agent/evidence/live/kube"
	"github.com/rootcause/rootcause/agent/evidence/live/logfiles"
	"github.com/rootcause/rootcause/agent/evidence/live/prom"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/outbound"
	"github.com/rootcause/rootcause/secretref"
)

// Config is what the factory needs for one team.
type Config struct {
	// Tools is the team's effective `tools` object: integration name →
	// settings object (JSON-decoded).
	Tools map[string]any
	// Resolver resolves secret references in settings (header values,
	// api_key...). Values are resolved here, at the moment of use.
	Resolver secretref.Resolver
	// Tokens are the references named in the team's tokens_vault_path, by
	// name ("github", "aws", ...), for integrations that use them when
	// their own settings give none. Integrations resolve them through
	// their scoped resolver, like their own settings.
	Tokens map[string]string
	// Outbound is the guard every integration whose address a team can set
	// connects through; nil exempts nothing.
	Outbound *outbound.Guard
	// Scope says for which node secrets are resolved (the team's granted
	// Vault prefixes and its own references); nil resolves as Resolver
	// does (offline commands run by the operator).
	Scope *secretref.Scope
	// OwnTools is the tools object of the team node's own config: an
	// integration whose address is written there is handed only secrets
	// within the team's scopes.
	OwnTools map[string]any
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AdminSettings: settings that point at the server's own files or
	// environment (kubeconfig, in_cluster, log paths, file:/env: refs) are
	// admin-only; config validation refuses them from team tokens before
	// they reach this factory, which trusts what it is given.
}

// New builds the sources. An integration whose settings are wrong is an
// error naming the setting; one that is absent or has enabled: false is nil.
func New(ctx context.Context, cfg Config) (*evidence.Sources, error) {
	s := &evidence.Sources{Now: cfg.Now}
	if s.Now == nil {
		s.Now = func() time.Time { return time.Now().UTC() }
	}
	var errs []error
	if k, err := Kubernetes(Settings(cfg.Tools, "kubernetes")); err != nil {
		errs = append(errs, err)
	} else if k != nil {
		s.Kubernetes = k
	}
	if m, err := Prometheus(ctx, Settings(cfg.Tools, "prometheus"), cfg.resolver("prometheus"), cfg.Outbound); err != nil {
		errs = append(errs, err)
	} else if m != nil {
		s.Metrics = m
	}
	if l, err := logfiles.New(ctx, Settings(cfg.Tools, "logs"), cfg.Tokens, cfg.resolver("logs")); err != nil {
		errs = append(errs, fmt.Errorf("tools.logs: %w", err))
	} else if l != nil {
		s.Logs = l
	}
	if c, err := cloudwatch.New(ctx, Settings(cfg.Tools, "cloudwatch"), cfg.Tokens, cfg.resolver("cloudwatch")); err != nil {
		errs = append(errs, fmt.Errorf("tools.cloudwatch: %w", err))
	} else if c != nil {
		s.CloudWatch = c
	}
	gh, err := github.New(ctx, Settings(cfg.Tools, "github"), cfg.Tokens, cfg.resolver("github"), cfg.Outbound)
	if err != nil {
		errs = append(errs, fmt.Errorf("tools.github: %w", err))
		gh = nil
	}
	if gh != nil {
		s.Code = gh.Code()
	}
	var ghc changes.GitHub
	if gh != nil {
		ghc = gh
	}
	if c, err := changes.New(Settings(cfg.Tools, "changes"), ghc); err != nil {
		errs = append(errs, fmt.Errorf("tools.changes: %w", err))
	} else if c != nil {
		s.Changes = c
	}
	if t, err := Traces(ctx, cfg); err != nil {
		errs = append(errs, err)
	} else if t != nil {
		s.Traces = t
	}
	// Knowledge (runbooks) comes from the team's knowledge_source, not from
	// tools: the caller sets s.Knowledge.
	if len(errs) > 0 {
		return s, errors.Join(errs...)
	}
	return s, nil
}

// resolver returns the resolver integration name uses: scoped to the node,
// and to the team's own secrets when its address is written at the team's
// level.
func (cfg Config) resolver(name string) secretref.Resolver {
	own := Settings(cfg.OwnTools, name)
	teamAddress := false
	for _, k := range outbound.AddressKeys {
		if _, ok := own[k]; ok {
			teamAddress = true
		}
	}
	return cfg.Scope.Resolver(cfg.Resolver, teamAddress)
}

// Settings returns tools.<name> as an object, or nil.
func Settings(tools map[string]any, name string) map[string]any {
	m, _ := tools[name].(map[string]any)
	return m
}

func enabled(s map[string]any) bool {
	if s == nil {
		return false
	}
	en, ok := s["enabled"].(bool)
	return !ok || en
}

func str(s map[string]any, key string) (string, error) {
	switch v := s[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", fmt.Errorf("want a string, got %T", v)
	}
}

// Kubernetes builds the Kubernetes source of tools.kubernetes settings
// {enabled, kubeconfig, context, in_cluster, default_namespace, timeout}.
// default_namespace is read by the tools, not here.
func Kubernetes(s map[string]any) (evidence.Kubernetes, error) {
	if !enabled(s) {
		return nil, nil
	}
	var cfg kube.Config
	var err error
	if cfg.Kubeconfig, err = str(s, "kubeconfig"); err != nil {
		return nil, fmt.Errorf("tools.kubernetes.kubeconfig: %w", err)
	}
	if cfg.Context, err = str(s, "context"); err != nil {
		return nil, fmt.Errorf("tools.kubernetes.context: %w", err)
	}
	switch v := s["in_cluster"].(type) {
	case nil:
	case bool:
		cfg.InCluster = v
	default:
		return nil, fmt.Errorf("tools.kubernetes.in_cluster: want true or false, got %T", v)
	}
	if cfg.Timeout, err = seconds(s, "timeout"); err != nil {
		return nil, fmt.Errorf("tools.kubernetes.timeout: %w", err)
	}
	c, err := kube.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("tools.kubernetes: %w", err)
	}
	return c, nil
}

// Prometheus builds the Metrics source of tools.prometheus settings
// {enabled, url, headers (name → secret reference), timeout (seconds)}.
func Prometheus(ctx context.Context, s map[string]any, res secretref.Resolver, guard *outbound.Guard) (evidence.Metrics, error) {
	if !enabled(s) {
		return nil, nil
	}
	u, err := str(s, "url")
	if err != nil {
		return nil, fmt.Errorf("tools.prometheus.url: %w", err)
	}
	if u == "" {
		return nil, fmt.Errorf("tools.prometheus.url is required")
	}
	if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, fmt.Errorf("tools.prometheus.url: %q is not an http(s) URL", u)
	}
	cfg := prom.Config{URL: u, Headers: map[string]string{}, Guard: guard}
	if cfg.Timeout, err = seconds(s, "timeout"); err != nil {
		return nil, fmt.Errorf("tools.prometheus.timeout: %w", err)
	}
	// The guard judges the address before any secret is resolved for it.
	if err := guard.CheckURL(u); err != nil {
		return nil, fmt.Errorf("tools.prometheus.url: %w", err)
	}
	if hs, ok := s["headers"]; ok && hs != nil {
		m, ok := hs.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("tools.prometheus.headers: want an object of header name → secret reference")
		}
		for name, v := range m {
			ref, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("tools.prometheus.headers.%s: want a secret reference string", name)
			}
			if res == nil {
				return nil, fmt.Errorf("tools.prometheus.headers.%s: no secret resolver", name)
			}
			val, err := res.Resolve(ctx, ref)
			if err != nil {
				return nil, fmt.Errorf("tools.prometheus.headers.%s: %w", name, err)
			}
			cfg.Headers[name] = val
		}
	}
	c, err := prom.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("tools.prometheus: %w", err)
	}
	return c, nil
}

func seconds(s map[string]any, key string) (time.Duration, error) {
	return mergeconf.Seconds(s, key)
}
