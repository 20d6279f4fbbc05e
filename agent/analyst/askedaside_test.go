package analyst

import (
	"slices"
	"testing"
)

// A clause that names another failure beside the complaint and asks
// whether it is related makes that failure an aside; a name the question
// also asks about elsewhere, or a clause that does not ask "related?",
// does not.
func TestAsides(t *testing.T) {
	known := map[string]bool{"billing-export": true, "billing-db": true, "search-web": true, "orders-api": true}
	cases := []struct {
		msg  string
		want []string
	}{
		{"invoice emails are going out hours late and the queue keeps growing. is billing-db slow? also billing-export is failing, related?", []string{"billing-export"}},
		{"checkout is slow since 10:00. btw orders-api restarted twice, could that be related?", []string{"orders-api"}},
		{"search times out for everyone. Also search-web is throwing errors - same issue?", []string{"search-web"}},
		{"billing-export is failing since 09:00, also billing-export logs AccessDenied, related?", nil},
		{"billing-db is slow, also billing-export is failing", nil},
	}
	for _, c := range cases {
		got := asides(Scope{Message: c.msg, Known: known})
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: asides %v, want %v", c.msg, got, c.want)
		}
	}
}
