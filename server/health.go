package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/db"
)

// readyTimeout bounds the readiness probe's store check.
const readyTimeout = 2 * time.Second

func (s *Server) registerHealthRoutes() {
	s.handlePublic(http.MethodGet, "/healthz", s.getHealthz)
	s.handlePublic(http.MethodGet, "/readyz", s.getReadyz)
}

type healthStatus struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// getHealthz is the liveness probe: the process answers.
func (s *Server) getHealthz(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	return writeJSON(w, http.StatusOK, healthStatus{Status: "ok", Version: s.version})
}

// getReadyz is the readiness probe: the store answers within readyTimeout.
func (s *Server) getReadyz(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	var err error
	if s.cfg.Ready != nil {
		err = s.cfg.Ready(ctx)
	} else {
		_, err = s.cfg.Nodes.OrgName(ctx)
	}
	if err != nil {
		// The cause is logged; probes only need to know.
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "readiness check failed",
			slog.String("request_id", RequestID(r.Context())), slog.String("error", err.Error()))
		return &db.Error{Code: db.EUNAVAILABLE, Message: "not ready: the database is not reachable", Err: err}
	}
	return writeJSON(w, http.StatusOK, healthStatus{Status: "ready", Version: s.version})
}
