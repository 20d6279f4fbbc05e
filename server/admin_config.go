package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/db"
)

// Admin configuration routes (contract section 2): any node's own config,
// its history, and the change requests awaiting approval.
//
// Approvers. The contract makes approvers people: the emails listed in the
// org root's `approvers`. An OIDC admin may approve or reject only when
// its email is listed there. An admin token (and the local socket) may
// also approve or reject: it is the operator's break-glass credential, and
// the audit entry records it as "token:<id> (<name>)". Nobody approves their
// own request, compared by principal id and by email.

func (s *Server) registerAdminConfigRoutes() {
	s.handle(http.MethodGet, "/api/v1/admin/nodes/:name/config", db.PermAdminRead, rateRead, s.getNodeConfig)
	s.handle(http.MethodPut, "/api/v1/admin/nodes/:name/config", db.PermAdminWrite, rateWrite, s.putNodeConfig)
	s.handle(http.MethodGet, "/api/v1/admin/nodes/:name/config/audit", db.PermAdminRead, rateRead, s.getNodeConfigAudit)
	s.handle(http.MethodGet, "/api/v1/admin/change-requests", db.PermAdminRead, rateRead, s.getChangeRequests)
	s.handle(http.MethodGet, "/api/v1/admin/change-requests/:id", db.PermAdminRead, rateRead, s.getChangeRequest)
	s.handle(http.MethodPost, "/api/v1/admin/change-requests/:id/approve", db.PermAdminWrite, rateWrite, s.postApproveChange, withMaxBody(64<<10))
	s.handle(http.MethodPost, "/api/v1/admin/change-requests/:id/reject", db.PermAdminWrite, rateWrite, s.postRejectChange, withMaxBody(64<<10))
}

// HeaderConfigVersion carries a node's config version on GET
// /api/v1/admin/nodes/{name}/config, whose body is the bare document.
const HeaderConfigVersion = "X-Rootcause-Config-Version"

func (s *Server) getNodeConfig(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	store, err := s.configs()
	if err != nil {
		return err
	}
	lin, err := store.ConfigLineage(r.Context(), ps.ByName("name"), true)
	if err != nil {
		return err
	}
	self := lin[len(lin)-1]
	w.Header().Set(HeaderConfigVersion, strconv.FormatInt(self.Version, 10))
	return writeJSON(w, http.StatusOK, self.Own)
}

func (s *Server) putNodeConfig(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	n, err := s.cfg.Nodes.FindNode(r.Context(), ps.ByName("name"))
	if err != nil {
		return err
	}
	// Admin writes apply directly: the approval workflow governs teams.
	return s.applyConfig(w, r, n, checkParams{admin: true})
}

func (s *Server) getNodeConfigAudit(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	return s.writeHistory(w, r, ps.ByName("name"))
}

var crStatuses = []string{db.StatusPendingApproval, db.StatusApplied, db.StatusRejected, db.StatusExpired, db.StatusConflict}

func (s *Server) getChangeRequests(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	store, err := s.configs()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := db.ChangeRequestFilter{Node: q.Get("node")}
	switch st := q.Get("status"); st {
	case "", "pending", db.StatusPendingApproval:
		f.Status = db.StatusPendingApproval
	case "all":
	default:
		ok := false
		for _, c := range crStatuses {
			ok = ok || c == st
		}
		if !ok {
			return &db.Error{Code: db.EINVALID, Field: "status", Message: fmt.Sprintf(
				"query parameter status: must be pending, all or one of %s", strings.Join(crStatuses, ", "))}
		}
		f.Status = st
	}
	crs, err := store.ListChangeRequests(r.Context(), f)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, changeRequestList(crs))
}

func (s *Server) getChangeRequest(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	store, err := s.configs()
	if err != nil {
		return err
	}
	cr, err := store.FindChangeRequest(r.Context(), ps.ByName("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, viewChangeRequest(cr))
}

// checkApprover allows admin tokens and the local socket, and OIDC admins
// whose email is in the org root's approvers.
func (s *Server) checkApprover(r *http.Request) error {
	p := PrincipalFrom(r.Context())
	if p.Kind == KindAdminToken || p.Kind == KindLocal {
		return nil
	}
	if p.Email == "" {
		return db.Errorf(db.EFORBIDDEN, "only approvers (the org's approvers emails) or an admin token can decide change requests")
	}
	store, err := s.configs()
	if err != nil {
		return err
	}
	org, err := s.orgName(r.Context())
	if err != nil {
		return err
	}
	lin, err := store.ConfigLineage(r.Context(), org, true)
	if err != nil {
		return err
	}
	list, _ := lin[0].Own["approvers"].([]any)
	for _, a := range list {
		if e, ok := a.(string); ok && strings.EqualFold(e, p.Email) {
			return nil
		}
	}
	return db.Errorf(db.EFORBIDDEN, "%s is not in the org's approvers", p.Email)
}

type approvedChange struct {
	ChangeRequestID string `json:"change_request_id"`
	Status          string `json:"status"`
	Node            string `json:"node"`
	Version         int64  `json:"version"`
}

func (s *Server) postApproveChange(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := s.checkApprover(r); err != nil {
		return err
	}
	store, err := s.configs()
	if err != nil {
		return err
	}
	ctx := r.Context()
	cr, err := store.FindChangeRequest(ctx, ps.ByName("id"))
	if err != nil {
		return err
	}
	n, err := s.cfg.Nodes.FindNode(ctx, cr.Node)
	if err != nil {
		return err
	}
	// Re-validate as the requester's write (never with the approver's admin
	// rights), against the config as it is now.
	check := s.configCheck(checkParams{node: n.Name, level: levelOf(n.Kind), patch: cr.Patch, serverTools: s.serverTools(ctx, n.Name, cr.Patch)})
	done, err := store.ApproveChangeRequest(ctx, cr.ID, actorOf(PrincipalFrom(ctx)), check)
	if err != nil {
		return err
	}
	s.audit(r, "config change approved", slog.String("change_request_id", done.ID), slog.String("node", done.Node),
		slog.Int64("version", done.AppliedVersion))
	return writeJSON(w, http.StatusOK, approvedChange{ChangeRequestID: done.ID, Status: done.Status, Node: done.Node, Version: done.AppliedVersion})
}

type rejectRequest struct {
	Reason string `json:"reason"`
}

func (s *Server) postRejectChange(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := s.checkApprover(r); err != nil {
		return err
	}
	var req rejectRequest
	if err := decodeJSON(w, r, &req, strictFields); err != nil {
		return err
	}
	if strings.TrimSpace(req.Reason) == "" {
		return missingField("reason")
	}
	store, err := s.configs()
	if err != nil {
		return err
	}
	cr, err := store.RejectChangeRequest(r.Context(), ps.ByName("id"), actorOf(PrincipalFrom(r.Context())), req.Reason)
	if err != nil {
		return err
	}
	s.audit(r, "config change rejected", slog.String("change_request_id", cr.ID), slog.String("node", cr.Node))
	return writeJSON(w, http.StatusOK, viewChangeRequest(cr))
}
