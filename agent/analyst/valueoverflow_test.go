package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestValueOverflow reads writes refused because a value exceeds its
// column's precision, in each database's words: PostgreSQL's numeric field
// overflow (a JDBC batch entry with its row, a server log's STATEMENT, a
// psql run), MySQL 1264 naming the column, SQL Server 8115, Oracle
// ORA-01438; the column's declared type from psql \d or SHOW CREATE TABLE,
// and the change that brought the row's data. A key at its integer
// maximum is not this cause.
func TestValueOverflow(t *testing.T) {
	at := win.Start.Add(15 * time.Minute)
	set := func(lines ...string) LogSet {
		var ts []analysis.LogTemplate
		for _, l := range lines {
			ts = append(ts, analysis.LogTemplate{Example: l, Incident: 3, FirstIncident: at, FirstSeen: at})
		}
		return LogSet{Source: "payouts-worker-6d8f-x2", Subject: "payouts-worker", Namespace: "finance", Templates: ts}
	}
	pgBatch := `2026-11-27 02:41:17.363 ERROR [main] o.h.engine.jdbc.spi.SqlExceptionHelper - Batch entry 3 insert into payout_lines (amount,currency,vendor_id,booked_on,id) values (('25000000000.00'::numeric),('KRW'),('v_41920'),('2026-11-26'::date),(88120)) was aborted: ERROR: numeric field overflow
  Detail: A field with precision 12, scale 2 must round to an absolute value less than 10^10.  Call getNextException to see other errors in the batch.`
	pgServer := []string{
		`2026-11-27 02:41:17.301 UTC [4121] payouts@ledger ERROR:  numeric field overflow`,
		`2026-11-27 02:41:17.301 UTC [4121] payouts@ledger DETAIL:  A field with precision 10, scale 2 must round to an absolute value less than 10^8.`,
		`2026-11-27 02:41:17.301 UTC [4121] payouts@ledger STATEMENT:  INSERT INTO public.payout_lines (amount, currency, vendor_id) VALUES (412000000.00, 'HUF', 'v_77812')`,
	}
	psqlD := evidence.CommandOutput{Command: `psql -c '\d payout_lines'`, Lines: []string{
		"                 Table \"public.payout_lines\"",
		"  Column   |     Type      | Collation | Nullable | Default",
		"-----------+---------------+-----------+----------+---------",
		" amount    | numeric(12,2) |           | not null |",
		" currency  | character(3)  |           | not null |",
	}}
	showCreate := evidence.CommandOutput{Command: `mysql -e 'SHOW CREATE TABLE payout_lines\G'`, Lines: []string{
		"CREATE TABLE `payout_lines` (",
		"  `id` bigint NOT NULL AUTO_INCREMENT,",
		"  `amount` decimal(10,2) NOT NULL,",
	}}
	flag := evidence.Change{Timestamp: at.Add(-20 * time.Hour), Service: "vendor-onboarding", Kind: "feature_flag", Description: "payouts.currencies: add KRW for Korean vendors"}
	cases := []struct {
		name    string
		logs    []LogSet
		cmds    []evidence.CommandOutput
		earlier []evidence.Change
		want    bool
		column  string
		typ     string
		value   string
		says    string
	}{
		{"PostgreSQL through JDBC: the batch entry's row, psql \\d and the flag that added its currency", []LogSet{set(pgBatch)}, []evidence.CommandOutput{psqlD}, []evidence.Change{flag}, true, "amount", "numeric(12,2)", "25000000000.00", "currency KRW, vendor_id v_41920"},
		{"PostgreSQL's own log: ERROR, DETAIL and STATEMENT", []LogSet{set(pgServer...)}, nil, nil, true, "amount", "", "412000000.00", "precision 10, scale 2: less than 10^8"},
		{"MySQL 1264 names the column; SHOW CREATE TABLE its type", []LogSet{set(`com.mysql.cj.jdbc.exceptions.MysqlDataTruncation: Data truncation: Out of range value for column 'amount' at row 1`)}, []evidence.CommandOutput{showCreate}, nil, true, "amount", "decimal(10,2)", "", "declared decimal(10,2)"},
		{"SQL Server 8115", []LogSet{set(`Microsoft.Data.SqlClient.SqlException (0x80131904): Arithmetic overflow error converting numeric to data type numeric. The statement has been terminated.`)}, nil, nil, true, "", "", "", "numeric field overflow"},
		{"Oracle ORA-01438", []LogSet{set(`java.sql.SQLException: ORA-01438: value larger than specified precision allowed for this column`)}, nil, nil, true, "", "", "", "numeric field overflow"},
		{"MySQL: a key column out of range is a key at its maximum", []LogSet{set(`Data truncation: Out of range value for column 'order_id' at row 1`)}, nil, nil, false, "", "", "", ""},
		{"SQL Server: an IDENTITY at its maximum", []LogSet{set(`Arithmetic overflow error converting IDENTITY to data type int.`)}, nil, nil, false, "", "", "", ""},
		{"PostgreSQL: an integer out of range", []LogSet{set(`ERROR: integer out of range`)}, nil, nil, false, "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Gathered{Window: win, Logs: c.logs, Commands: c.cmds, Earlier: c.earlier}
			f, ok := oneFinding(t, detectValueOverflow(&ev, nil), c.want)
			if !ok {
				return
			}
			if f.Subject != "payouts-worker" || f.fact("column") != c.column || f.fact("type") != c.typ || f.fact("value") != c.value {
				t.Errorf("subject %q column %q type %q value %q, want payouts-worker %q %q %q", f.Subject, f.fact("column"), f.fact("type"), f.fact("value"), c.column, c.typ, c.value)
			}
			d := checkWritten(t, valueOverflow, &f, "Widen", "numeric field overflow", c.says)
			if len(c.earlier) > 0 && !containsToken(d, "vendor-onboarding's feature flag change") {
				t.Errorf("description lacks the change that brought the data: %s", d)
			}
		})
	}
}

// TestValueOverflowFromJobPod reads the refused write in the last lines of
// a failed Job's pod, its subject the CronJob that made the Job.
func TestValueOverflowFromJobPod(t *testing.T) {
	ev := Gathered{Window: win, K8s: K8sEvidence{PreviousLogs: map[string][]evidence.LogLine{
		"finance/payouts-29929080-ph7dq/payouts": {
			{Text: `2026-11-27 02:41:17 ERROR Batch entry 0 insert into payout_lines (amount,currency) values (('25000000000.00'::numeric),('KRW')) was aborted: ERROR: numeric field overflow`},
			{Text: `  Detail: A field with precision 12, scale 2 must round to an absolute value less than 10^10.`},
		}}}}
	f, ok := oneFinding(t, detectValueOverflow(&ev, nil), true)
	if !ok {
		return
	}
	if f.Subject != "payouts" || f.fact("column") != "amount" || f.fact("bound") != "10^10" || f.fact("row") != "currency KRW" {
		t.Errorf("column %q bound %q row %q", f.fact("column"), f.fact("bound"), f.fact("row"))
	}
}
