package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/notify"
)

// WebhookService is what the webhook routes need; *notify.Worker
// implements it.
type WebhookService interface {
	Deliveries(ctx context.Context, team string, limit int) ([]notify.DeliveryView, error)
	Redeliver(ctx context.Context, team, id string) (*notify.DeliveryView, error)
	Ping(ctx context.Context, team string) (*notify.PingResult, error)
	CreateSecret(ctx context.Context, team string, overlap time.Duration, createOnly bool) (*db.WebhookSecret, error)
}

// registerWebhookRoutes registers the delivery log, redelivery, the test
// ping and the admin signing-secret route (docs/webhooks.md).
func (s *Server) registerWebhookRoutes() {
	s.handle(http.MethodGet, "/api/v1/webhooks/deliveries", db.PermTeamRead, rateRead, s.getDeliveries)
	s.handle(http.MethodPost, "/api/v1/webhooks/deliveries/:id/redeliver", db.PermTeamWrite, rateWrite, s.postRedeliver, withMaxBody(4<<10))
	s.handle(http.MethodPost, "/api/v1/webhooks/test", db.PermTeamWrite, rateWrite, s.postWebhookTest, withMaxBody(4<<10))
	s.handle(http.MethodPost, "/api/v1/admin/teams/:team/webhook-secret", db.PermAdminWrite, rateWrite, s.postWebhookSecret, withMaxBody(4<<10))
}

func (s *Server) webhooks() (WebhookService, error) {
	if s.cfg.Webhooks == nil {
		return nil, db.Errorf(db.EUNAVAILABLE, "webhook delivery is not enabled on this server")
	}
	return s.cfg.Webhooks, nil
}

// teamWebhooks returns the delivery service and the team a webhook route
// acts on: a team token's own team (naming another one is 403), or the
// ?team= of an admin.
func (s *Server) teamWebhooks(r *http.Request) (WebhookService, string, error) {
	svc, err := s.webhooks()
	if err != nil {
		return nil, "", err
	}
	team, err := teamScope(PrincipalFrom(r.Context()), r.URL.Query().Get("team"))
	if err != nil {
		return nil, "", err
	}
	return svc, team, nil
}

func (s *Server) getDeliveries(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, team, err := s.teamWebhooks(r)
	if err != nil {
		return err
	}
	limit := notify.DefaultDeliveryLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > notify.MaxDeliveryLimit {
			return &db.Error{Code: db.EINVALID, Field: "limit", Message: "limit must be a whole number from 1 to " + strconv.Itoa(notify.MaxDeliveryLimit)}
		}
		limit = n
	}
	list, err := svc.Deliveries(r.Context(), team, limit)
	if err != nil {
		return err
	}
	if list == nil {
		list = []notify.DeliveryView{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"team": team, "limit": limit, "deliveries": list})
}

func (s *Server) postRedeliver(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	svc, team, err := s.teamWebhooks(r)
	if err != nil {
		return err
	}
	v, err := svc.Redeliver(r.Context(), team, ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, v)
}

func (s *Server) postWebhookTest(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	svc, team, err := s.teamWebhooks(r)
	if err != nil {
		return err
	}
	res, err := svc.Ping(r.Context(), team)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

type webhookSecretRequest struct {
	Overlap    *string `json:"overlap"`
	CreateOnly bool    `json:"create_only"`
}

// postWebhookSecret creates or rotates a team's signing secret and shows it
// this once.
func (s *Server) postWebhookSecret(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	svc, err := s.webhooks()
	if err != nil {
		return err
	}
	var req webhookSecretRequest
	if err := decodeJSON(w, r, &req, strictFields, optionalBody); err != nil {
		return err
	}
	overlap := notify.DefaultOverlap
	if req.Overlap != nil {
		d, err := time.ParseDuration(*req.Overlap)
		if err != nil || d < 0 || d > notify.MaxOverlap {
			return &db.Error{Code: db.EINVALID, Field: "overlap", Message: "overlap must be a duration from 0s to " + notify.MaxOverlap.String() + ", such as \"24h\""}
		}
		overlap = d
	}
	sec, err := svc.CreateSecret(r.Context(), ps.ByName("team"), overlap, req.CreateOnly)
	if err != nil {
		return err
	}
	s.audit(r, "webhook signing secret created", slog.String("team", ps.ByName("team")), slog.Duration("overlap", overlap))
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, sec)
}
