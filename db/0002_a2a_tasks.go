package db

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// migration0002A2ATasks creates the bucket of A2A tasks (a2atasks.go),
// which used to live in the server's memory only.
var migration0002A2ATasks = Migration{
	Name: "0002_a2a_tasks",
	Up: func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketA2ATasks); err != nil {
			return fmt.Errorf("creating bucket %s: %w", bucketA2ATasks, err)
		}
		return nil
	},
}
