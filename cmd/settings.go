package cmd

import (
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/notify"
	"github.com/rootcause/rootcause/outbound"
)

// parseProxyCIDR parses one trusted_proxies entry: a CIDR or a single
// address.
func parseProxyCIDR(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8 or an IP address", s)
}

const defaultDataDir = "./rootcause-data"

// Settings are the server settings of contract section 2. Config file keys
// are the mapstructure names; env variables are ROOTCAUSE_ with "_" for ".".
// Settings not used yet are carried so that later parts find them here.
type Settings struct {
	Addr    string
	DataDir string
	Org     string
	// PublicURL is the server's external base URL (public_url, env
	// ROOTCAUSE_PUBLIC_URL), such as https://rootcause.example.com: the OIDC
	// redirect URI is <PublicURL>/callback, and notification links are
	// absolute under it. Empty derives the OIDC redirect from each request's
	// Host and leaves links as paths.
	PublicURL string
	RateLimit RateLimitSettings
	Workers   int
	QueueSize int
	SyncWait  time.Duration
	// InvestigationTimeout bounds a run whose agent sets no timeout.
	InvestigationTimeout time.Duration
	// Retention deletes final investigations older than this, and finished
	// A2A tasks last updated before then; 0 keeps all.
	Retention time.Duration
	// ConfigHistoryKeep (config_history_keep) is how many of each node's
	// newest config versions keep their full document in the history
	// (full_config); older ones keep who, when and the diff. 0 keeps all.
	ConfigHistoryKeep int
	Webhook           WebhookSettings
	// Outbound.Allow (outbound.allow) lists the CIDRs and host names exempt
	// from the outbound guard; webhook.allow is an alias whose entries are
	// added to it.
	Outbound OutboundSettings
	// TrustedProxies (trusted_proxies) lists the CIDRs of reverse proxies
	// whose X-Forwarded-For names the client address.
	TrustedProxies []string
	Slack          SlackSettings
	LLM            LLMSettings
	Log            LogSettings     // log.format, log.level (cmd/observability.go)
	Metrics        MetricsSettings // metrics.addr (cmd/observability.go)
	// GCHeapFloor (gc.heap_floor) is the heap size in bytes below which
	// serve's garbage collector does not start a collection (package
	// gcfloor); 0 leaves the collector as GOGC alone sets it.
	GCHeapFloor int64
}

// RateLimitSettings are per-minute request limits per principal; 0 means
// the default, a negative value turns the limit off.
type RateLimitSettings struct {
	Read  int
	Write int
	Run   int
}

// WebhookSettings configure webhook delivery.
type WebhookSettings struct {
	// Allow (webhook.allow) is the older name of outbound.allow; loadSettings
	// folds it into Outbound.Allow and keeps the union here as well.
	Allow []string
}

// Allowlist returns the outbound guard's exemptions (outbound.allow and its
// alias webhook.allow; loadSettings has checked them, and an entry that
// does not parse exempts nothing).
func (w WebhookSettings) Allowlist() notify.Allowlist {
	a, err := notify.ParseAllowlist(w.Allow)
	if err != nil {
		return notify.Allowlist{}
	}
	return a
}

// OutboundSettings configure the outbound guard.
type OutboundSettings struct {
	Allow []string
}

// Guard returns the outbound guard of these settings.
func (o OutboundSettings) Guard() *outbound.Guard {
	a, err := outbound.ParseAllowlist(o.Allow)
	if err != nil {
		return outbound.New(outbound.Allowlist{})
	}
	return outbound.New(a)
}

// SlackSettings configure chat notifications.
type SlackSettings struct {
	// APIURL is the Slack Web API base (slack.api_url), default
	// https://slack.com/api; a Slack-compatible server's in air-gapped sites.
	APIURL string
}

// LLMSettings configure the optional LLM engine. APIKey is a secret
// reference (env:, file:, vault:), never a value.
type LLMSettings struct {
	Provider    string
	BaseURL     string
	Model       string
	APIKey      string
	MaxTokens   int
	Temperature *float64
	Timeout     time.Duration
	MaxSteps    int
	MaxRetries  int
	Required    bool
	// ToolResultBudget caps the bytes of one tool result sent to the model.
	ToolResultBudget int
}

func setDefaults(v *viper.Viper) {
	v.SetDefault("data_dir", defaultDataDir)
	v.SetDefault("addr", "127.0.0.1:8080")
	v.SetDefault("org", "default")
	v.SetDefault("public_url", "")
	v.SetDefault("rate_limit.read", 100)
	v.SetDefault("rate_limit.write", 20)
	v.SetDefault("rate_limit.run", 10)
	v.SetDefault("workers", 4)
	v.SetDefault("queue_size", 100)
	v.SetDefault("sync_wait", "120s")
	v.SetDefault("investigation_timeout", "10m")
	v.SetDefault("retention", "0")
	v.SetDefault("config_history_keep", 0)
	v.SetDefault("webhook.allow", []string{})
	v.SetDefault("outbound.allow", []string{})
	v.SetDefault("trusted_proxies", []string{})
	v.SetDefault("slack.api_url", "https://slack.com/api")
	v.SetDefault("llm.provider", "")
	v.SetDefault("llm.base_url", "")
	v.SetDefault("llm.model", "")
	v.SetDefault("llm.api_key", "")
	v.SetDefault("llm.max_tokens", 4096)
	v.SetDefault("llm.temperature", "")
	v.SetDefault("llm.timeout", "180s")
	v.SetDefault("llm.max_steps", 20)
	v.SetDefault("llm.max_retries", 2)
	v.SetDefault("llm.required", false)
	v.SetDefault("llm.tool_result_budget", 16384)
	v.SetDefault("gc.heap_floor", "64MB")
	setObservabilityDefaults(v)
}

func mustBind(v *viper.Viper, key string, f *pflag.Flag) {
	if f == nil {
		panic("cmd: no flag for " + key)
	}
	if err := v.BindPFlag(key, f); err != nil {
		panic(err)
	}
}

// loadSettings reads and validates every setting from v.
func loadSettings(v *viper.Viper) (Settings, error) {
	var s Settings
	var errs []error
	str := func(key string) string {
		out, err := cast.ToStringE(v.Get(key))
		if err != nil {
			errs = append(errs, fmt.Errorf("setting %s: %w", key, err))
		}
		return out
	}
	num := func(key string, min int) int {
		n, err := cast.ToIntE(v.Get(key))
		if err != nil {
			errs = append(errs, fmt.Errorf("setting %s: %v is not a whole number", key, v.Get(key)))
		} else if n < min {
			errs = append(errs, fmt.Errorf("setting %s: %d is below the minimum %d", key, n, min))
		}
		return n
	}
	s.Addr = str("addr")
	s.DataDir = str("data_dir")
	s.Org = str("org")
	if u, err := parsePublicURL(str("public_url")); err != nil {
		errs = append(errs, err)
	} else {
		s.PublicURL = u
	}
	s.RateLimit.Read = num("rate_limit.read", -1)
	s.RateLimit.Write = num("rate_limit.write", -1)
	s.RateLimit.Run = num("rate_limit.run", -1)
	s.Workers = num("workers", 1)
	s.ConfigHistoryKeep = num("config_history_keep", 0)
	s.QueueSize = num("queue_size", 1)
	if d, err := cast.ToDurationE(v.Get("sync_wait")); err != nil || d < 0 {
		errs = append(errs, fmt.Errorf("setting sync_wait: %v is not a duration such as \"120s\"", v.Get("sync_wait")))
	} else {
		s.SyncWait = d
	}
	if d, err := cast.ToDurationE(v.Get("investigation_timeout")); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("setting investigation_timeout: %v is not a duration such as \"10m\"", v.Get("investigation_timeout")))
	} else {
		s.InvestigationTimeout = d
	}
	if d, err := cast.ToDurationE(v.Get("retention")); err != nil || d < 0 {
		errs = append(errs, fmt.Errorf("setting retention: %v is not a duration such as \"2160h\" (0 keeps everything)", v.Get("retention")))
	} else {
		s.Retention = d
	}
	if allow, err := cast.ToStringSliceE(v.Get("webhook.allow")); err != nil {
		errs = append(errs, fmt.Errorf("setting webhook.allow: %w", err))
	} else if _, err := notify.ParseAllowlist(allow); err != nil {
		errs = append(errs, fmt.Errorf("setting webhook.allow: %w", err))
	} else {
		s.Webhook.Allow = allow
	}
	if allow, err := cast.ToStringSliceE(v.Get("outbound.allow")); err != nil {
		errs = append(errs, fmt.Errorf("setting outbound.allow: %w", err))
	} else if _, err := outbound.ParseAllowlist(allow); err != nil {
		errs = append(errs, fmt.Errorf("setting outbound.allow: %w", err))
	} else {
		// One list: outbound.allow plus its alias webhook.allow.
		s.Outbound.Allow = append(append([]string{}, allow...), s.Webhook.Allow...)
		s.Webhook.Allow = s.Outbound.Allow
	}
	if cidrs, err := cast.ToStringSliceE(v.Get("trusted_proxies")); err != nil {
		errs = append(errs, fmt.Errorf("setting trusted_proxies: %w", err))
	} else {
		for _, c := range cidrs {
			if _, err := parseProxyCIDR(c); err != nil {
				errs = append(errs, fmt.Errorf("setting trusted_proxies: %w", err))
			}
		}
		s.TrustedProxies = cidrs
	}
	s.Slack.APIURL = str("slack.api_url")
	s.LLM = LLMSettings{Provider: str("llm.provider"), BaseURL: str("llm.base_url"), Model: str("llm.model"), APIKey: str("llm.api_key"),
		MaxTokens: num("llm.max_tokens", 1), MaxSteps: num("llm.max_steps", 1), MaxRetries: num("llm.max_retries", -1),
		ToolResultBudget: num("llm.tool_result_budget", 1024)}
	if t := str("llm.temperature"); t != "" {
		f, err := cast.ToFloat64E(t)
		if err != nil || f < 0 || f > 2 {
			errs = append(errs, fmt.Errorf("setting llm.temperature: %q is not a number from 0 to 2", t))
		} else {
			s.LLM.Temperature = &f
		}
	}
	if d, err := cast.ToDurationE(v.Get("llm.timeout")); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("setting llm.timeout: %v is not a duration such as \"180s\"", v.Get("llm.timeout")))
	} else {
		s.LLM.Timeout = d
	}
	if b, err := cast.ToBoolE(v.Get("llm.required")); err != nil {
		errs = append(errs, fmt.Errorf("setting llm.required: %v is not true or false", v.Get("llm.required")))
	} else {
		s.LLM.Required = b
	}
	switch s.LLM.Provider {
	case "", "openai", "anthropic":
	default:
		errs = append(errs, fmt.Errorf("setting llm.provider: %q is not openai or anthropic", s.LLM.Provider))
	}
	if raw := strings.TrimSpace(str("gc.heap_floor")); raw != "0" && raw != "" {
		if n, err := parseSize(raw); err != nil {
			errs = append(errs, fmt.Errorf("setting gc.heap_floor: %w (0 turns it off)", err))
		} else {
			s.GCHeapFloor = n
		}
	}
	if ls, ms, err := loadObservability(v); err != nil {
		errs = append(errs, err)
	} else {
		s.Log, s.Metrics = ls, ms
	}
	if s.DataDir == "" {
		errs = append(errs, fmt.Errorf("setting data_dir: must not be empty"))
	}
	if len(errs) > 0 {
		return s, errs[0]
	}
	return s, nil
}

// parsePublicURL checks the public_url setting: empty, or an absolute http
// or https URL with a host, without user info, query or fragment. The
// answer has no trailing slash, so paths append to it.
func parsePublicURL(raw string) (string, error) {
	v := strings.TrimSpace(raw)
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("setting public_url: %q is not an absolute http(s) URL such as https://rootcause.example.com (no user info, query or fragment)", raw)
	}
	return strings.TrimRight(v, "/"), nil
}

// trustedProxies returns the trusted_proxies setting parsed (loadSettings
// has checked every entry).
func trustedProxies(s Settings) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range s.TrustedProxies {
		if p, err := parseProxyCIDR(c); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// printOutboundExemptions writes, for serve --check, what bypasses the
// outbound guard: the outbound.allow entries, and the destinations only
// admins set, which are not guarded (docs/security.md).
func printOutboundExemptions(w io.Writer, s Settings) {
	entries := s.Outbound.Guard().Allow().Entries()
	if len(entries) == 0 {
		fmt.Fprintln(w, "outbound guard: no exemptions (outbound.allow is empty)")
	} else {
		fmt.Fprintf(w, "outbound guard: exempt by outbound.allow: %s\n", strings.Join(entries, ", "))
	}
	fmt.Fprintln(w, "outbound guard: not guarded (admin-set): tool_servers URLs, a2a_peers URLs, tools.cloudwatch.endpoint, llm.base_url, slack.api_url, VAULT_ADDR, the OIDC issuer")
	if len(s.TrustedProxies) > 0 {
		fmt.Fprintf(w, "trusted proxies (X-Forwarded-For read from): %s\n", strings.Join(s.TrustedProxies, ", "))
	}
}
