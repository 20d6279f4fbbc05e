package server

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/db"
)

// registerMetricsRoutes serves the Prometheus metrics on the API at
// GET /metrics for admin:read principals. Without Config.Metrics the route
// answers 503. The same registry can be served without authentication on a
// separate listener (cmd: metrics.addr), for scrapers on a private network.
func (s *Server) registerMetricsRoutes() {
	s.handle(http.MethodGet, "/metrics", db.PermAdminRead, rateRead, s.getMetrics)
}

func (s *Server) getMetrics(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if s.cfg.Metrics == nil {
		return db.Errorf(db.EUNAVAILABLE, "metrics are not enabled on this server")
	}
	s.cfg.Metrics.Handler().ServeHTTP(w, r)
	return nil
}
