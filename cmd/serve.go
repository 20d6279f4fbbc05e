package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/gcfloor"
	"github.com/rootcause/rootcause/logwriter"
	"github.com/rootcause/rootcause/metrics"
	"github.com/rootcause/rootcause/server"
)

// shutdownTimeout bounds the drain of in-flight requests on SIGTERM.
const shutdownTimeout = 30 * time.Second

func newServeCommand(v *viper.Viper) *cobra.Command {
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the API server",
		Long: `Opens <data-dir>/rootcause.db (creating and migrating it; an existing file is
copied to rootcause.db.pre-migrate-<n>.bak before a migration), creates the
organization root --org on an empty database, and serves the HTTP API on
--addr and the same router on the local socket <data-dir>/rootcause.sock
(mode 0600). The CLI manages tokens, nodes and backups through the socket
while the server runs; requests on it are trusted as a local admin.

It refuses to start when another server already answers on the socket.
SIGTERM or SIGINT stop accepting connections, drain in-flight requests (up
to 30 seconds), close the database and exit 0.

Settings come from flags, then ROOTCAUSE_<KEY> environment variables (upper
case, "." as "_": rate_limit.run is ROOTCAUSE_RATE_LIMIT_RUN), then the --config
YAML file, then defaults:

  addr, data_dir, org, public_url
  rate_limit.read, rate_limit.write, rate_limit.run   per minute (0 default, -1 off)
  workers, queue_size, sync_wait, investigation_timeout, retention,
  config_history_keep
  outbound.allow (alias webhook.allow), trusted_proxies, slack.api_url
  llm.provider, llm.base_url, llm.model, llm.api_key (a secret reference),
  llm.max_tokens, llm.temperature, llm.timeout, llm.max_steps, llm.max_retries,
  llm.required, llm.tool_result_budget
  log.format, log.level, metrics.addr, gc.heap_floor

packaging/rootcause.example.yaml lists each with its default and meaning
(docs/operations.md). A bad value stops serve at start-up with the key named;
--check validates the settings (including the LLM settings and the secret
reference of llm.api_key), lists the outbound-guard exemptions in force and
exits without serving.`,
		Example: `  rootcause serve --addr 127.0.0.1:8080 --data-dir /var/lib/rootcause
  rootcause serve --config /etc/rootcause/rootcause.yaml --check`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := loadSettings(v)
			if err != nil {
				return err
			}
			if check, _ := cmd.Flags().GetBool("check"); check {
				if _, err := buildEngine(cmd.Context(), s.LLM, newResolver(), nil); err != nil {
					return err
				}
				printOutboundExemptions(cmd.OutOrStdout(), s)
				fmt.Fprintln(cmd.OutOrStdout(), "settings OK")
				return nil
			}
			// The log is written asynchronously (one write call per batch of
			// lines, never per request); Close writes out the rest at exit.
			logOut := logwriter.New(cmd.ErrOrStderr())
			defer logOut.Close()
			logger, err := newLogger(logOut, s.Log)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), s, buildFrom(cmd.Context()), logger)
		},
	}
	f := c.Flags()
	f.String("addr", "127.0.0.1:8080", "TCP address of the HTTP API (env ROOTCAUSE_ADDR)")
	f.String("org", "default", "name of the organization root created on an empty database (env ROOTCAUSE_ORG)")
	mustBind(v, "addr", f.Lookup("addr"))
	mustBind(v, "org", f.Lookup("org"))
	f.Bool("check", false, "validate the settings (flags, environment, --config file) and exit without serving")
	return c
}

// serve runs the server until ctx is cancelled, then shuts down gracefully.
func serve(ctx context.Context, s Settings, b Build, logger *slog.Logger) error {
	if err := os.MkdirAll(s.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}
	sock := socketPath(s.DataDir)
	// Dial first: a live server answers on the socket, and its database
	// lock would otherwise make us wait on bbolt.
	if up, err := socketAnswers(sock); err != nil {
		return err
	} else if up {
		return fmt.Errorf("a rootcause server is already running on %s (it answers on %s); stop it first", s.DataDir, sock)
	}

	// No collection while the heap is under gc.heap_floor: a small live
	// heap would otherwise be collected every few megabytes of requests
	// (gcfloor, docs/decisions.md).
	floor := gcfloor.Start(uint64(max(s.GCHeapFloor, 0)))
	defer floor.Stop()

	met := metrics.New(b.Version) // served at GET /metrics and on metrics.addr (cmd/observability.go)
	store, err := db.Open(dbPath(s.DataDir), db.Options{Logger: logger, ObserveTx: observeTx(met), ConfigHistoryKeep: s.ConfigHistoryKeep})
	if err != nil {
		return err
	}
	closeStore := func() {
		if err := store.Close(); err != nil {
			logger.Error("closing database", "error", err)
		}
	}
	org, err := store.EnsureOrg(ctx, s.Org)
	if err != nil {
		closeStore()
		return fmt.Errorf("creating organization %q: %w", s.Org, err)
	}
	if org.Name != s.Org && s.Org != "default" {
		logger.Warn("the database already has an organization; --org ignored", "org", org.Name, "requested", s.Org)
	}

	hooks, err := newNotifyWorker(s, b, store, logger, withDeliveryMetrics(met)) // webhook and chat deliveries (cmd/webhook.go)
	if err != nil {
		closeStore()
		return err
	}

	toolServers := newToolServers(store, newResolver(), b.Version, logger) // tool servers and A2A peers (cmd/toolservers.go)
	defer func() {
		if err := toolServers.Close(); err != nil {
			logger.Warn("stopping tool servers", "error", err)
		}
	}()

	rt, err := newRuntime(ctx, s, store, hooks, logger, withRuntimeMetrics(met), withToolServers(toolServers)) // investigations (cmd/runtime.go)
	if err != nil {
		closeStore()
		return err
	}
	// Recover first: pending runs are re-queued and running ones marked
	// interrupted before any new request is accepted.
	if err := rt.Start(ctx); err != nil {
		closeStore()
		return err
	}

	oidc := newOIDC(ctx, store, org.Name, logger) // OIDC sign-in from the org's oidc config (cmd/oidc.go)
	api := server.New(server.Config{
		Nodes:  store,
		Tokens: store,

		JWTVerifier: oidc,
		OIDCLogin:   oidc,
		PublicURL:   s.PublicURL, // public_url: the OIDC redirect URI and the A2A agent card

		Backup: store.WriteBackup,
		Logger: logger,
		RateLimits: server.RateLimits{
			Read:  s.RateLimit.Read,
			Write: s.RateLimit.Write,
			Run:   s.RateLimit.Run,
		},
		Configs: store,

		Investigations: rt,
		SyncWait:       s.SyncWait,

		ToolServerTools:    toolServers.ServerTools,   // validates "server:tool" names
		ToolServerToolsFor: toolServers.ServerToolsIn, // ... with the definition of the node written (any level)
		ToolServers:        toolServers,               // admin tool-server routes
		Version:            b.Version,

		Webhooks:       hooks,                 // delivery log, redelivery, test ping, signing secrets
		WebhookAllow:   s.Webhook.Allowlist(), // webhooks.investigation_complete is checked when saved
		Outbound:       s.Outbound.Guard(),    // every team-settable address (outbound.allow)
		TrustedProxies: trustedProxies(s),     // X-Forwarded-For is read only from these peers

		Metrics: met,
	})

	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go sweepChangeRequests(sweepCtx, store, logger)

	tcpLn, err := net.Listen("tcp", s.Addr)
	if err != nil {
		closeStore()
		return fmt.Errorf("listening on %s: %w", s.Addr, err)
	}
	sockLn, err := listenSocket(sock)
	if err != nil {
		tcpLn.Close()
		closeStore()
		return err
	}

	servers := []*http.Server{
		{Handler: api.Handler(), ConnContext: server.CorkContext, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)},
		{Handler: api.LocalHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)},
	}
	met.QueueDepthFunc(rt.QueueDepth)
	met.DBFile(dbPath(s.DataDir))
	stopMetrics := func(context.Context) {}
	if s.Metrics.Addr != "" {
		if stopMetrics, err = serveMetrics(s.Metrics.Addr, met, logger); err != nil {
			tcpLn.Close()
			sockLn.Close()
			rt.Stop(ctx)
			closeStore()
			return err
		}
	}
	// Large answers leave in one write (server.CorkListener).
	listeners := []net.Listener{server.CorkListener(tcpLn), sockLn}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() {
			if err := srv.Serve(listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	if err := hooks.Start(ctx); err != nil {
		logger.Error("starting webhook deliveries", "error", err)
	}
	logger.Info("rootcause serving", "version", b.Version, "addr", tcpLn.Addr().String(), "socket", sock,
		"data_dir", s.DataDir, "org", org.Name)

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down: draining in-flight requests", "timeout", shutdownTimeout)
	case serveErr = <-errc:
		logger.Error("server failed; shutting down", "error", serveErr)
	}

	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(sctx); err != nil {
				logger.Warn("requests still running at the shutdown deadline; closing them", "error", err)
				srv.Close()
			}
		}()
	}
	wg.Wait()
	stopMetrics(sctx)
	rt.Stop(sctx)    // running investigations finish, or are recorded as interrupted at the deadline
	hooks.Stop(sctx) // deliveries in flight finish or are retried after the next start
	os.Remove(sock)
	if err := store.Close(); err != nil {
		return err
	}
	logger.Info("stopped")
	if serveErr != nil {
		return fmt.Errorf("serving: %w", serveErr)
	}
	return nil
}

// listenSocket listens on the unix socket at path with mode 0600, removing
// a stale socket file left by a crashed server (the caller has checked that
// nothing answers on it).
func listenSocket(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; move it away", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
		}
	}
	// The umask makes the socket 0600 from the moment it exists; the chmod
	// below only confirms it.
	old := syscall.Umask(0o077)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listening on socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("setting socket mode: %w", err)
	}
	// Close must not unlink a socket a successor may have created; we
	// remove it ourselves after shutdown.
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	return ln, nil
}
