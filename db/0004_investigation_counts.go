package db

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// migration0004InvestigationCounts creates bucketInvestigationCounts and
// fills it from the team index, so a list's total is read, not counted.
var migration0004InvestigationCounts = Migration{
	Name: "0004_investigation_counts",
	Up: func(tx *bolt.Tx) error {
		counts, err := tx.CreateBucketIfNotExists(bucketInvestigationCounts)
		if err != nil {
			return fmt.Errorf("creating bucket %s: %w", bucketInvestigationCounts, err)
		}
		idx := tx.Bucket(bucketInvestigationsByTeam)
		if idx == nil {
			return nil
		}
		n := map[string]uint64{}
		if err := idx.ForEach(func(k, v []byte) error {
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				return fmt.Errorf("investigations_by_team: malformed key %q", k)
			}
			n[string(countKey(string(k[:i]), string(v)))]++
			return nil
		}); err != nil {
			return err
		}
		for k, c := range n {
			if err := counts.Put([]byte(k), itob(c)); err != nil {
				return err
			}
		}
		return nil
	},
}
