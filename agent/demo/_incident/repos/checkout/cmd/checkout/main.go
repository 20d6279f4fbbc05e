package main

import (
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/acme-shop/checkout/internal/receipts"
)

func main() {
	ttl, err := time.ParseDuration(os.Getenv("RECEIPT_CACHE_TTL"))
	if err != nil {
		ttl = 24 * time.Hour
	}
	cache := &receipts.Cache{TTL: ttl}
	mux := http.NewServeMux()
	registerRoutes(mux, cache)
	slog.Info("http server listening on :8080")
	if err := http.ListenAndServe(":8080", mux); err != nil {
		slog.Error("server stopped", "err", err)
		os.Exit(1)
	}
}
