package db

// How to add a service (db/config.go, db/investigations.go, db/outbox.go):
//
//   - Use the buckets declared in buckets.go; migration 0001 already created
//     all of them, so no migration is needed to start using one.
//   - Write methods on *DB. Use d.update(ctx, fn) for a write transaction and
//     d.view(ctx, fn) for a read transaction; both translate bbolt errors to
//     EINTERNAL and return an *Error from fn unchanged.
//   - Store values with putJSON(bucket, key, v) and read them with
//     getJSON(bucket, key, &v) (false when absent). Number keys are 8-byte
//     big-endian: itob(n) / btoi(k), so byte order is numeric order and
//     Cursor.Last is the newest. Use b.NextSequence() for ids.
//   - Bytes read from bbolt are valid only inside the transaction: copy them
//     (cloneBytes) before they escape.
//   - d.now() is the clock (Options.Now in tests). d.Bolt() is the raw
//     *bolt.DB for anything else.
//   - Return *Error values with the codes of errors.go and document each
//     method's codes on the service interface in db.go.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FileName is the database file's name inside the data directory.
const FileName = "rootcause.db"

// ErrLocked is returned by Open when another process (a running server)
// holds the database file's lock.
var ErrLocked = errors.New("database is in use by a running server; use the socket or stop it")

// Options configure Open. The zero value is a sensible default.
type Options struct {
	// Timeout is how long to wait for the file lock; 0 means one second.
	Timeout time.Duration
	// ReadOnly opens the file with a shared lock and refuses writes. No
	// migrations run and no install key is created.
	ReadOnly bool
	// NoMigrate opens the file without applying pending migrations (for
	// `migrate --dry-run`). Services need a migrated file.
	NoMigrate bool
	// LastUsedFlush is how often recorded token last-used times are written;
	// 0 means one minute. They are also written at Close.
	LastUsedFlush time.Duration
	// Logger receives migration and flush messages; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ObserveTx, if set, is told the duration of every transaction run
	// through the services (write true for read-write ones), for metrics.
	ObserveTx func(write bool, d time.Duration)
	// ConfigHistoryKeep is how many of each node's newest config versions
	// keep their full document readable (full_config in the history);
	// older snapshot records are deleted, their audit entries (who, when,
	// diff) are kept. 0 keeps every version's document.
	ConfigHistoryKeep int
}

// DB is rootcause's store: one bbolt file. It implements NodeService and
// TokenService, and later ConfigService, InvestigationService and
// OutboxService. It is safe for concurrent use.
type DB struct {
	bolt   *bolt.DB
	path   string
	opts   Options
	logger *slog.Logger
	now    func() time.Time

	installKey []byte // HMAC key for token secrets, loaded at open

	// auth caches verified token records by the keyed hash of their secret
	// (tokens.go), so authentication is a map read; revocation empties it.
	authOnce sync.Once
	auth     *authCache

	// lastUsed holds token last-used times not yet written to the file.
	// Every request authenticates, so writing on each one would put a write
	// transaction (and an fsync) on the hot path; flushing them in one
	// transaction per interval keeps Authenticate read-only.
	mu          sync.Mutex
	lastUsed    map[string]time.Time // pending writes, id -> time
	lastWritten map[string]time.Time // last value written or loaded, id -> time
	stopFlush   chan struct{}
	flushDone   chan struct{}
	closeOnce   sync.Once

	// configGen changes after every config write (config.go), so readers
	// can tell that no version moved without a transaction.
	configGen atomic.Uint64

	// writers counts group writes in progress (groupUpdate).
	writers atomic.Int64
	// commits counts committed write transactions (Commits). countedTx is
	// the write transaction whose commit is already registered, so a batch
	// (many functions, one transaction) counts once; it is only touched
	// inside write transactions, which bbolt runs one at a time.
	commits   atomic.Uint64
	countedTx *bolt.Tx
}

// Commits returns the number of write transactions the services have
// committed since Open: each is one durable commit (bbolt syncs the pages,
// then the meta page), so it counts the fsync points of the write path.
func (d *DB) Commits() uint64 { return d.commits.Load() }

// countCommit registers tx to be counted once when it commits. It runs
// inside the write transaction tx.
func (d *DB) countCommit(tx *bolt.Tx) {
	if d.countedTx == tx {
		return
	}
	d.countedTx = tx
	tx.OnCommit(func() { d.commits.Add(1) })
}

// MaxBatchDelay is how long a write that meets another in progress waits
// for more writers to share its commit (bbolt's DB.MaxBatchDelay).
const MaxBatchDelay = time.Millisecond

// Open opens (creating if needed) the bbolt file at path, applies pending
// migrations (after a backup copy when the file already holds data) and
// creates the per-install key on first open. A file locked by a running
// server gives ErrLocked; a file written by a newer binary gives
// ErrNewerSchema.
func Open(path string, opts Options) (*DB, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.LastUsedFlush <= 0 {
		opts.LastUsedFlush = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("opening database: %w", err)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, ReadOnly: opts.ReadOnly})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("opening %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	bdb.MaxBatchDelay = MaxBatchDelay
	d := &DB{
		bolt:        bdb,
		path:        path,
		opts:        opts,
		logger:      opts.Logger,
		now:         opts.Now,
		lastUsed:    map[string]time.Time{},
		lastWritten: map[string]time.Time{},
		stopFlush:   make(chan struct{}),
		flushDone:   make(chan struct{}),
	}
	if err := d.init(); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	if opts.ReadOnly {
		close(d.flushDone)
	} else {
		go d.flushLoop()
	}
	return d, nil
}

// init checks the schema, migrates, and loads or creates the install key.
func (d *DB) init() error {
	if d.opts.ReadOnly || d.opts.NoMigrate {
		// Still refuse a file from a newer binary.
		if _, err := d.MigrationStatus(); err != nil {
			return err
		}
	} else if _, err := d.Migrate(false); err != nil {
		return err
	}
	// Load the key; create it at first open of a migrated, writable file.
	if err := d.bolt.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta); b != nil {
			d.installKey = cloneBytes(b.Get(metaInstallKey))
		}
		return nil
	}); err != nil {
		return fmt.Errorf("reading install key: %w", err)
	}
	if d.installKey != nil || d.opts.ReadOnly || d.opts.NoMigrate {
		return nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("creating install key: %w", err)
	}
	err := d.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMeta)
		if existing := b.Get(metaInstallKey); existing != nil {
			key = cloneBytes(existing)
			return nil
		}
		if err := b.Put(metaCreatedAt, []byte(d.now().UTC().Format(time.RFC3339))); err != nil {
			return err
		}
		return b.Put(metaInstallKey, key)
	})
	if err != nil {
		return fmt.Errorf("storing install key: %w", err)
	}
	d.installKey = key
	return nil
}

// Close writes pending token last-used times and closes the file.
func (d *DB) Close() error {
	var err error
	d.closeOnce.Do(func() {
		if !d.opts.ReadOnly {
			close(d.stopFlush)
			<-d.flushDone
			if ferr := d.FlushLastUsed(); ferr != nil {
				d.logf("flushing token last-used times", "error", ferr)
			}
		}
		err = d.bolt.Close()
	})
	if err != nil {
		return fmt.Errorf("closing database: %w", err)
	}
	return nil
}

// Bolt returns the underlying bbolt database.
func (d *DB) Bolt() *bolt.DB { return d.bolt }

// Path returns the database file's path.
func (d *DB) Path() string { return d.path }

func (d *DB) logf(msg string, args ...any) {
	if d.logger != nil {
		d.logger.Info(msg, args...)
	}
}

// update runs fn in a write transaction. An *Error returned by fn passes
// through; any other error becomes EINTERNAL.
func (d *DB) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.opts.ObserveTx != nil {
		start := time.Now()
		defer func() { d.opts.ObserveTx(true, time.Since(start)) }()
	}
	return boltError(d.bolt.Update(func(tx *bolt.Tx) error {
		d.countCommit(tx)
		return fn(tx)
	}))
}

// groupUpdate is update for writes that may share a commit: a write that
// finds none in progress commits at once, as update does; one that meets
// another joins bbolt's Batch, so writers that meet share one commit (and
// one fsync) instead of queueing for one each. fn may run more than once
// (bbolt re-runs a batch without a function that failed), so it must only
// change the transaction and its own results.
func (d *DB) groupUpdate(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.opts.ObserveTx != nil {
		start := time.Now()
		defer func() { d.opts.ObserveTx(true, time.Since(start)) }()
	}
	counted := func(tx *bolt.Tx) error {
		d.countCommit(tx)
		return fn(tx)
	}
	defer d.writers.Add(-1)
	if d.writers.Add(1) > 1 {
		return boltError(d.bolt.Batch(counted))
	}
	return boltError(d.bolt.Update(counted))
}

// view runs fn in a read transaction, translating errors like update.
func (d *DB) view(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.opts.ObserveTx != nil {
		start := time.Now()
		defer func() { d.opts.ObserveTx(false, time.Since(start)) }()
	}
	return boltError(d.bolt.View(fn))
}

// boltError translates storage errors at the db boundary: domain errors pass
// through, everything else is an internal error with the cause kept.
func boltError(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &Error{Code: EINTERNAL, Err: fmt.Errorf("storage: %w", err)}
}

// itob encodes n as an 8-byte big-endian key.
func itob(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// btoi decodes an 8-byte big-endian key; shorter input gives 0.
func btoi(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// putJSON stores v as JSON under key.
func putJSON(b *bolt.Bucket, key []byte, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", key, err)
	}
	return b.Put(key, buf)
}

// getJSON decodes the JSON value under key into v and reports whether the
// key exists.
func getJSON(b *bolt.Bucket, key []byte, v any) (bool, error) {
	buf := b.Get(key)
	if buf == nil {
		return false, nil
	}
	if err := json.Unmarshal(buf, v); err != nil {
		return true, fmt.Errorf("decoding %s: %w", key, err)
	}
	return true, nil
}

// cloneBytes copies b (nil stays nil), for bytes that outlive a transaction.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
