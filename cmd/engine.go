package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/agent/llm"
	"github.com/rootcause/rootcause/secretref"
)

// newResolver returns the secret resolver of the server: environment,
// files, and Vault when VAULT_ADDR (and VAULT_TOKEN as a reference or
// value in the environment) are set.
func newResolver() secretref.Resolver {
	opts := secretref.ResolverOptions{LookupEnv: os.LookupEnv, ReadFile: os.ReadFile}
	if addr := os.Getenv("VAULT_ADDR"); addr != "" {
		opts.Vault = secretref.VaultOptions{Address: addr, Token: "env:VAULT_TOKEN", Namespace: os.Getenv("VAULT_NAMESPACE")}
	}
	return secretref.NewResolver(opts)
}

// buildEngine returns the investigation engine the settings ask for: the
// offline analyst, wrapped by the LLM loop when llm.provider is set.
func buildEngine(ctx context.Context, s LLMSettings, res secretref.Resolver, logger *slog.Logger) (agent.Engine, error) {
	offline := analyst.New(analyst.Options{})
	if s.Provider == "" {
		return offline, nil
	}
	cfg := llm.Config{
		Provider: s.Provider, BaseURL: s.BaseURL, Model: s.Model,
		MaxTokens: s.MaxTokens, Temperature: s.Temperature, Timeout: s.Timeout,
		MaxSteps: s.MaxSteps, MaxRetries: s.MaxRetries, Required: s.Required,
		ToolResultBudget: s.ToolResultBudget,
	}
	var secrets []string
	if s.APIKey != "" {
		key, err := res.Resolve(ctx, s.APIKey)
		if err != nil {
			return nil, fmt.Errorf("setting llm.api_key: %w", err)
		}
		cfg.APIKey = key
		secrets = append(secrets, key)
	}
	p, err := llm.NewProvider(cfg)
	if err != nil {
		return nil, fmt.Errorf("llm settings: %w", err)
	}
	if logger != nil {
		logger.Info("LLM engine enabled", "provider", s.Provider, "model", s.Model, "base_url", s.BaseURL)
	}
	return llm.NewEngine(cfg, p, offline, llm.WithSecrets(secrets...)), nil
}
