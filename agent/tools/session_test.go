package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestSessionScrubsSecretsFromErrors(t *testing.T) {
	const secret = "s3cr3t-bearer-value"
	tests := []struct {
		name     string
		err      error
		wantCode string
	}{
		{"EvidenceError", evidence.Errorf("prometheus", evidence.CodeUnavailable, "server said: bad header Authorization: Bearer %s", secret), evidence.CodeUnavailable},
		{"PlainError", errors.New("upstream echoed " + secret), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := NewCatalog([]Tool{{
				Spec: Spec{Name: "probe", Parameters: json.RawMessage(`{"type":"object"}`), ReadOnly: true},
				Run:  func(context.Context, *Env, json.RawMessage) (any, error) { return nil, tt.err },
			}})
			s := &Session{Catalog: cat, Toolkit: []string{"probe"}, Env: &Env{Sources: &evidence.Sources{}, Secrets: []string{secret, "abc"}}}
			_, err := s.Call(context.Background(), "probe", nil)
			if err == nil || strings.Contains(err.Error(), secret) {
				t.Fatalf("error still holds the secret: %v", err)
			}
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("error = %q, want the secret replaced by [redacted]", err)
			}
			if evidence.CodeOf(err) != tt.wantCode {
				t.Errorf("code = %q, want %q", evidence.CodeOf(err), tt.wantCode)
			}
			if tt.wantCode != "" && !strings.HasPrefix(err.Error(), "prometheus: ") || strings.Contains(err.Error(), "prometheus: prometheus") {
				t.Errorf("source prefix wrong: %q", err)
			}
		})
	}
}
