package server

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/db"
)

func TestCheckJSONBody(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name    string
		body    string
		wantErr string
	}{
		{"Flat", `{"a": 1}`, ""},
		{"AtLimit", deep(MaxJSONDepth), ""},
		{"OverLimit", deep(MaxJSONDepth + 1), "nesting deeper than 64 levels at byte offset 64"},
		{"DeepInField", `{"agents": ` + deep(10000) + `}`, "nesting deeper"},
		{"BracketsInStrings", `{"a": "` + strings.Repeat("[{", 500) + `"}`, ""},
		{"EscapedQuoteInString", `{"a": "\"[[[[", "b": ` + deep(3) + `}`, ""},
		{"InvalidUTF8", "{\"a\": \"\xff\"}", "not valid UTF-8 (first bad byte at offset 7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkJSONBody([]byte(tt.body))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if db.ErrorCode(err) != db.EINVALID || !strings.Contains(db.ErrorMessage(err), tt.wantErr) {
				t.Fatalf("err = %v, want invalid_request containing %q", err, tt.wantErr)
			}
		})
	}
}
