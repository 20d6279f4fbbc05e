package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A query naming a column its source renamed, in Snowflake's (dbt),
// BigQuery's, Spark's and PostgreSQL's words, with the new name read from
// a loader's log, a column listing or the engine's suggestion; a missing
// column with no successor anywhere (code ahead of its migration) and a
// healthy run are none.
func TestDetectSchemaDrift(t *testing.T) {
	dbt := []string{
		"05:11:10    Database Error in model stg_shop__orders (models/staging/shop/stg_shop__orders.sql)",
		"  000904 (42000): SQL compilation error: error line 9 at position 8",
		"  invalid identifier 'TOTAL_AMOUNT'",
		"05:11:10  Done. PASS=187 WARN=0 ERROR=1 SKIP=26 TOTAL=214",
	}
	loader := []string{
		"2026-11-26T03:39:55.412Z INFO  CREATE OR REPLACE TABLE RAW.SHOP.ORDERS USING TEMPLATE (INFER_SCHEMA(@RAW.SHOP.STAGE/orders/)) -> columns: ORDER_ID, STATUS, TOTAL_AMOUNT_MINOR, CREATED_AT",
	}
	bq := []string{
		`google.api_core.exceptions.BadRequest: 400 Unrecognized name: customer_email at [4:5]; reason: invalidQuery, location: query, message: Unrecognized name: customer_email at [4:5]`,
	}
	bqColumns := evidence.CommandOutput{Command: "bq show --schema --format=prettyjson analytics:crm.customers", Lines: []string{
		`  {"name": "customer_id", "type": "STRING"},`, `  {"name": "customer_email_hash", "type": "STRING"},`}}
	spark := []string{
		"pyspark.errors.exceptions.captured.AnalysisException: [UNRESOLVED_COLUMN.WITH_SUGGESTION] A column or function parameter with name `session_start` cannot be resolved. Did you mean one of the following? [`session_start_ts`, `user_id`, `event_type`].;",
	}
	pg := []string{
		`2026-11-26 04:00:02,118 ERROR report failed: psycopg2.errors.UndefinedColumn: column "unit_price" does not exist`,
	}
	pgList := evidence.CommandOutput{Command: `psql -c '\d sales.order_lines'`, Lines: []string{
		" order_id       | bigint  |", " unit_price_cents | integer |"}}
	noSucc := []string{`2026-11-26 04:00:02,118 ERROR report failed: psycopg2.errors.UndefinedColumn: column "unit_price" does not exist`}
	healthy := []string{"05:12:02  Done. PASS=203 WARN=0 ERROR=0 SKIP=0 TOTAL=203"}
	for _, tc := range []struct {
		name      string
		sets      []LogSet
		cmds      []evidence.CommandOutput
		changes   []evidence.Change
		col, succ string
		want      []string
	}{
		{"dbt on Snowflake, a loader recreated the table", []LogSet{minedSet("dbt-nightly", false, 0, dbt...), minedSet("shop-raw-loader", false, 0, loader...)}, nil,
			[]evidence.Change{
				{Timestamp: win.Start.Add(-20 * time.Hour), Service: "orders-service", Kind: "deploy", Description: "orders-service 5.0.0: amounts stored as integer minor units, migration V58"},
				{Timestamp: win.Start.Add(-10 * time.Hour), Service: "analytics-dbt", Kind: "deploy", Description: "new marketing models"},
			},
			"TOTAL_AMOUNT", "TOTAL_AMOUNT_MINOR", []string{"stg_shop__orders", "renamed upstream to TOTAL_AMOUNT_MINOR", "orders-service's change", "migration V58"}},
		{"BigQuery, the schema lists the new column", []LogSet{minedSet("crm-export", false, 0, bq...)}, []evidence.CommandOutput{bqColumns}, nil,
			"customer_email", "customer_email_hash", []string{"crm-export", "customer_email_hash"}},
		{"Spark suggests the new name", []LogSet{minedSet("sessionize", false, 0, spark...)}, nil, nil,
			"session_start", "session_start_ts", []string{"the engine suggests it"}},
		{"PostgreSQL, psql lists the table", []LogSet{minedSet("sales-report", false, 0, pg...)}, []evidence.CommandOutput{pgList}, nil,
			"unit_price", "unit_price_cents", []string{"unit_price_cents"}},
		{"no successor: not this cause", []LogSet{minedSet("sales-report", false, 0, noSucc...)}, nil, nil, "", "", nil},
		{"a healthy run", []LogSet{minedSet("dbt-nightly", false, 0, healthy...), minedSet("shop-raw-loader", false, 0, loader...)}, nil, nil, "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectSchemaDrift(&Gathered{Logs: tc.sets, Commands: tc.cmds, Changes: tc.changes, Window: win}, nil)
			if tc.col == "" {
				if len(fs) != 0 {
					t.Fatalf("want none, got %s", fs[0].Summary)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %d", len(fs))
			}
			f := &fs[0]
			if f.fact("column") != tc.col || f.fact("successor") != tc.succ {
				t.Errorf("column %q -> %q, want %q -> %q", f.fact("column"), f.fact("successor"), tc.col, tc.succ)
			}
			h := &Hypothesis{Kind: KindSchemaDrift, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
