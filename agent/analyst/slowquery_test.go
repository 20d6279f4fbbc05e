package analyst

import "testing"

func TestSlowQueryLines(t *testing.T) {
	testLines(t, slowQuery, []lineCase{
		{"LOG:  duration: 4800.123 ms  statement: SELECT * FROM order_items WHERE sku_id = 7", KindSlowQuery},
		{`{"level":"error","err":"canceling statement due to statement timeout"}`, KindSlowQuery},
		{"# Query_time: 12.004512  Lock_time: 0.000101 Rows_sent: 1  Rows_examined: 4200311", KindSlowQuery},
		{`{"level":"warn","msg":"slow query: SELECT products by category took 1.21s (threshold 1s)"}`, ""},
		{"LOG:  duration: 12.5 ms  statement: SELECT 1", ""},
	})
}
