package kubetext

import "testing"

// TestFence tells a Markdown code fence from Python's error markers under
// a traceback's code line, which must not end a log's output.
func TestFence(t *testing.T) {
	cases := []struct {
		line string
		want bool
	}{
		{"```", true},
		{"```console", true},
		{"~~~ bash", true},
		{"  ~~~~", true},
		{"       ~~~~~^^^^^^^^^^^^^^^^^^", false},
		{"~~~~~^^^^^", false},
		{"    ```", false},
		{"``` not a fence `x`", false},
	}
	for _, c := range cases {
		if got := fence(c.line); got != c.want {
			t.Errorf("fence(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}
