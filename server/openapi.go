package server

import (
	_ "embed"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"
)

// openapiJSON is the OpenAPI 3.1 document of the whole API. It is the
// reference for integrators (docs/api.md) and the contract the tests hold
// the handlers to: server/openapi_test.go requires an operation for every
// registered route (and a route for every operation), and the server and
// end-to-end tests validate every response against it (server/openapitest).
//
//go:embed openapi.json
var openapiJSON []byte

// OpenAPIDocument returns the OpenAPI document served at
// /api/v1/openapi.json. The caller must not modify it.
func OpenAPIDocument() []byte { return openapiJSON }

// registerOpenAPIRoutes serves the document. Like every other route it
// needs a valid principal (any permission): the document describes no
// secret, but the appliance answers nothing to anonymous callers except
// health probes, and the same document is in the repository and the
// release archive for reading offline.
func (s *Server) registerOpenAPIRoutes() {
	s.handle(http.MethodGet, "/api/v1/openapi.json", "", rateRead, s.getOpenAPI)
}

func (s *Server) getOpenAPI(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openapiJSON)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, max-age=300")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openapiJSON)
	return nil
}
