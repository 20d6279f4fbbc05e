package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/metrics"
	"github.com/rootcause/rootcause/notify"
	"github.com/rootcause/rootcause/server"
)

// LogSettings configure the server's structured log (stderr).
type LogSettings struct {
	Format string // json or text (default)
	Level  string // debug, info (default), warn, error
}

// MetricsSettings configure the Prometheus metrics. They are always served
// at GET /metrics on the API for admin:read principals; Addr adds a
// listener without authentication (for example 127.0.0.1:9090 or a
// private interface), empty for none.
type MetricsSettings struct {
	Addr string
}

func setObservabilityDefaults(v *viper.Viper) {
	v.SetDefault("log.format", "text")
	v.SetDefault("log.level", "info")
	v.SetDefault("metrics.addr", "")
}

// loadObservability reads and checks the log.* and metrics.* settings.
func loadObservability(v *viper.Viper) (LogSettings, MetricsSettings, error) {
	ls := LogSettings{Format: strings.ToLower(v.GetString("log.format")), Level: strings.ToLower(v.GetString("log.level"))}
	ms := MetricsSettings{Addr: v.GetString("metrics.addr")}
	switch ls.Format {
	case "json", "text":
	default:
		return ls, ms, fmt.Errorf("setting log.format: %q is not json or text", ls.Format)
	}
	if _, err := parseLevel(ls.Level); err != nil {
		return ls, ms, err
	}
	if ms.Addr != "" {
		if _, _, err := net.SplitHostPort(ms.Addr); err != nil {
			return ls, ms, fmt.Errorf("setting metrics.addr: %q is not host:port", ms.Addr)
		}
	}
	return ls, ms, nil
}

func parseLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("setting log.level: %q is not debug, info, warn or error", s)
}

// newLogger returns the server's logger writing to w as the settings say.
func newLogger(w io.Writer, ls LogSettings) (*slog.Logger, error) {
	lvl, err := parseLevel(ls.Level)
	if err != nil {
		return nil, err
	}
	// slog's text or JSON handler; the server writes its request lines in
	// the same format without the handler's generic formatting.
	return slog.New(server.NewLogHandler(w, ls.Format == "json", lvl)), nil
}

// observeTx adapts the metrics to db.Options.ObserveTx.
func observeTx(m *metrics.Metrics) func(write bool, d time.Duration) {
	return func(write bool, d time.Duration) {
		kind := "read"
		if write {
			kind = "write"
		}
		m.ObserveTx(kind, d)
	}
}

// withRuntimeMetrics wires the investigation metrics into a runtime config:
// state transitions, run durations and tool calls.
func withRuntimeMetrics(m *metrics.Metrics) func(*agent.RuntimeConfig) {
	return func(rc *agent.RuntimeConfig) {
		rc.OnTransition = func(inv *db.Investigation) {
			m.Transition(inv.Agent, inv.Status)
			if db.IsFinal(inv.Status) && inv.StartedAt != nil {
				end := inv.CompletedAt
				switch {
				case inv.FailedAt != nil:
					end = inv.FailedAt
				case inv.CancelledAt != nil:
					end = inv.CancelledAt
				}
				if end != nil {
					m.InvestigationDone(inv.Agent, inv.Status, end.Sub(*inv.StartedAt))
				}
			}
		}
		rc.OnToolCall = m.ToolCall
	}
}

// withDeliveryMetrics counts every handled outbox entry by kind and the
// state it reached; an entry back to pending is a retry.
func withDeliveryMetrics(m metrics.Deliveries) func(*notify.Config) {
	return func(nc *notify.Config) {
		nc.OnDelivery = func(kind, state string, _ int) {
			m.Delivery(kind, state)
			if state == db.DeliveryPending {
				m.Retry(kind)
			}
		}
	}
}

// serveMetrics serves m without authentication on addr until the returned
// stop function is called.
func serveMetrics(addr string, m *metrics.Metrics, logger *slog.Logger) (func(context.Context), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on metrics.addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener failed", "error", err)
		}
	}()
	logger.Info("serving metrics without authentication", "metrics_addr", ln.Addr().String())
	return func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}, nil
}
