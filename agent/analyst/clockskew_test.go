package analyst

import "testing"

func TestClockSkewLines(t *testing.T) {
	testLines(t, clockSkew, []lineCase{
		{`{"level":"warn","msg":"token validation failed","err":"Token used before issued"}`, KindClockSkew},
		{"jwt not yet valid", KindClockSkew},
		{"chronyd[812]: System clock wrong by 96.214 seconds", KindClockSkew},
		{"chronyd[812]: Can't synchronise: no selectable sources (2 unreachable)", KindClockSkew},
		{"systemd-timesyncd: time not synchronized, retrying", KindClockSkew},
		{"INFO session token refreshed, valid for 3600s", ""},
		{"WARN session expired, please log in again", ""},
	})
}
