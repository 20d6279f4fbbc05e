package analyst

import "testing"

func TestFDExhaustionLines(t *testing.T) {
	testLines(t, fdExhaustion, []lineCase{
		{"2026/04/18 02:31:06 http: Accept error: accept tcp [::]:8080: accept4: too many open files; retrying in 1s", KindFDExhaustion},
		{`{"level":"error","err":"dial tcp 52.1.2.3:443: socket: too many open files"}`, KindFDExhaustion},
		{"Error: EMFILE, open '/data/x'", KindFDExhaustion},
		{"java.io.IOException: Too many open files", KindFDExhaustion},
		{"INFO opened 1024 files for compaction", ""},
	})
}
