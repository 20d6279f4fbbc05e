package bundle_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

// formsBundle opens files as a bundle captured at 2027-01-20T17:25:00Z.
func formsBundle(t *testing.T, files fstest.MapFS) *bundle.Bundle {
	t.Helper()
	files["bundle.json"] = &fstest.MapFile{Data: []byte(`{"captured_at": "2027-01-20T17:25:00Z"}`)}
	b, err := bundle.Open(files, "forms")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkReport runs bundle check on b and returns what it read and what it
// skipped, one "file what" line each.
func checkReport(t *testing.T, ctx context.Context, b *bundle.Bundle) (read, skipped []string) {
	t.Helper()
	r, err := bundle.Check(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range r.Read {
		read = append(read, it.File+" "+it.What)
	}
	for _, it := range r.Skipped {
		skipped = append(skipped, it.File+" "+it.What)
	}
	return read, skipped
}
