package db

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// migration0001CreateBuckets creates every bucket of the product. Later
// services add data to these buckets without a migration of their own.
var migration0001CreateBuckets = Migration{
	Name: "0001_create_buckets",
	Up: func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("creating bucket %s: %w", name, err)
			}
		}
		return nil
	},
}
