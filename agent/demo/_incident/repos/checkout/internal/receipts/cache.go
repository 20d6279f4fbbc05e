package receipts

import (
	"sync"
	"time"
)

// Cache keeps rendered receipts so customers can download them again
// without re-rendering (added in v2.4.0).
//
// Entries expire after TTL but are only removed when read again: nothing
// bounds the number of entries, so memory grows with traffic until the
// next restart.
type Cache struct {
	mu      sync.Mutex
	TTL     time.Duration
	entries map[string]entry
}

type entry struct {
	pdf     []byte
	expires time.Time
}

// Put stores a rendered receipt.
func (c *Cache) Put(orderID string, pdf []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]entry{}
	}
	c.entries[orderID] = entry{pdf: pdf, expires: time.Now().Add(c.TTL)}
}

// Get returns a cached receipt that has not expired.
func (c *Cache) Get(orderID string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[orderID]
	if !ok {
		return nil, false
	}
	if time.Now().After(e.expires) {
		delete(c.entries, orderID)
		return nil, false
	}
	return e.pdf, true
}
