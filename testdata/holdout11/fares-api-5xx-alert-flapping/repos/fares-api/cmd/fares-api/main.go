// Command fares-api serves fare searches for the travel apps.
package main

import (
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/acme-travel/fares-api/internal/config"
	"github.com/acme-travel/fares-api/internal/fares"
	"github.com/acme-travel/fares-api/internal/fxrates"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	cfg := config.MustLoad()

	fx := fxrates.NewCachedClient(cfg.FXRatesURL, cfg.FXCacheTTL)
	h := fares.NewHandler(cfg, fx, log)

	mux := http.NewServeMux()
	mux.Handle("/v2/fares", h)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

	srv := &http.Server{Addr: ":8080", Handler: mux}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		log.Info("received signal, exiting", "signal", s.String())
		os.Exit(0)
	}()

	log.Info("listening", "addr", srv.Addr, "version", cfg.Version)
	if err := srv.ListenAndServe(); err != nil {
		log.Error("server stopped", "err", err)
		os.Exit(1)
	}
}
