package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An InnoDB buffer pool far smaller than the data, read from mysql's boxed
// SHOW VARIABLES and SHOW GLOBAL STATUS, the \G form of SELECT
// @@innodb_buffer_pool_size with INNODB STATUS' hit rate, and a config
// asking for more than the server runs with; a pool that holds the working
// set, and a small pool every read hits, are none.
func TestDetectBufferPoolSmall(t *testing.T) {
	vars := func(size string) []string {
		return []string{
			"mysql> SHOW GLOBAL VARIABLES LIKE 'innodb_buffer_pool_size';",
			"+-------------------------+------------+",
			"| Variable_name           | Value      |",
			"+-------------------------+------------+",
			"| innodb_buffer_pool_size | " + size + " |",
			"+-------------------------+------------+",
			"1 row in set (0.00 sec)",
		}
	}
	status := func(reads string) []string {
		return []string{
			"mysql> SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_read%';",
			"+----------------------------------+-------------+",
			"| Variable_name                    | Value       |",
			"+----------------------------------+-------------+",
			"| Innodb_buffer_pool_read_requests | 902117733   |",
			"| Innodb_buffer_pool_reads         | " + reads + " |",
			"+----------------------------------+-------------+",
		}
	}
	size := []string{
		"mysql> SELECT table_schema, ROUND(SUM(data_length+index_length)/1024/1024) AS size_mb FROM information_schema.tables GROUP BY table_schema;",
		"+--------------+---------+",
		"| table_schema | size_mb |",
		"+--------------+---------+",
		"| shop         |   20480 |",
		"+--------------+---------+",
	}
	boxedCmd := evidence.CommandOutput{Command: "kubectl -n shop exec -it shop-db-0 -- mysql -uroot -p", Exec: true, Pod: "shop-db-0", Run: "mysql -uroot -p"}
	small := boxedCmd
	small.Lines = append(append(append([]string{}, vars("268435456 ")...), status("88120411   ")...), size...)
	big := boxedCmd
	big.Lines = append(append(append([]string{}, vars("17179869184")...), status("88120411   ")...), size...)
	hits := boxedCmd
	hits.Lines = append(append(append([]string{}, vars("268435456 ")...), status("1204       ")...), size...)
	vertical := evidence.CommandOutput{Command: `mysql -h orders-mariadb.internal -uops -p -e "SELECT @@innodb_buffer_pool_size\G; SHOW ENGINE INNODB STATUS\G"`, Run: `mysql -h orders-mariadb.internal -uops -p -e "..."`, Lines: []string{
		"*************************** 1. row ***************************",
		"@@innodb_buffer_pool_size: 134217728",
		"*************************** 1. row ***************************",
		"  Type: InnoDB",
		"----------------------",
		"BUFFER POOL AND MEMORY",
		"----------------------",
		"Buffer pool size   8192",
		"Buffer pool hit rate 871 / 1000, young-making rate 2 / 1000 not 41 / 1000",
	}}
	cnf := evidence.CommandOutput{Command: "kubectl -n orders get configmap orders-mariadb -o yaml", Lines: []string{
		"data:",
		"  my.cnf: |",
		"    [mysqld]",
		"    innodb_buffer_pool_size = 6G",
	}}
	for _, tc := range []struct {
		name    string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"boxed variables and status, 256 MiB for 20 GiB", []evidence.CommandOutput{small}, "shop-db",
			[]string{"innodb_buffer_pool_size 268435456 (256 MiB)", "for 20 GiB of data", "9.8 % of page reads miss it", "so queries are slow"}},
		{"\\G variable, INNODB STATUS hit rate, a my.cnf not applied", []evidence.CommandOutput{vertical, cnf}, "orders-mariadb.internal",
			[]string{"134217728 (128 MiB, the 128M default)", "asks for 6 GiB", "hit rate 871 / 1000"}},
		{"a pool that holds the data", []evidence.CommandOutput{big}, "", nil},
		{"a small pool every read hits", []evidence.CommandOutput{hits}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectBufferPoolSmall(&Gathered{Commands: tc.cmds, Window: win, Scope: Scope{Service: "api"}}, nil)
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindBufferPoolSmall, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
