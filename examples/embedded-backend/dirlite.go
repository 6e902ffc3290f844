// Package dirlite is an example of an embedded gomogile metadata backend in
// a module of its own, built only from gomogile's exported pieces: an
// installation keeps its metadata in a directory of its own,
//
//	dirlite:///srv/mogilefs/meta?synchronous=full
//
// in the SQLite file mogilefs.db there, the directory created when missing.
// It takes sqlite.NewConfig's pool, in-process locks and capabilities,
// names itself in the Dialect (Info.Driver is the scheme it registers) and
// lets sqlstore.New own the lifecycle. Its test runs conformance.Run, the
// suite every backend must pass.
//
// What a backend on an embedded database must know, shown here:
//
//   - The registry hands Open a *store.DSN parsed by the generic rules:
//     Path is the DSN's path as written (leading '/' kept), Params the
//     parameters the registry does not take itself (op_timeout,
//     max_idle_conns, max_open_conns and lock_dsn are already in OpTimeout,
//     MaxIdleConns, MaxOpenConns and Locks). sqlite.NewConfig opens the
//     file named by Database, which only a sqlite DSN fills: a backend of
//     another form fills it itself.
//   - Info().Driver must be the registered scheme: sqlite.Dialect's
//     BackendName.
//   - The suite's fault hooks (kill a lock's session, crash its owner)
//     have no database session to act on: the locks live in the Store's
//     process and die with it, so the test's harness makes both the
//     Store's Close (conformance.FaultOverride).
package dirlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/store/sqlstore"
)

// Scheme is the DSN scheme this backend registers.
const Scheme = "dirlite"

// File is the name of the database file in the directory.
const File = "mogilefs.db"

func init() { store.Register(Scheme, Driver{}) }

// Driver opens dirlite Stores.
type Driver struct{}

// Open creates the directory when missing and returns a ready Backend on the
// database file in it.
func (Driver) Open(ctx context.Context, d *store.DSN) (store.Backend, error) {
	if d.Path == "" {
		return nil, fmt.Errorf("%w: %s DSN names no directory (%s:///path/to/dir)", store.ErrBadDSN, Scheme, Scheme)
	}
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", Scheme, err)
	}
	file := *d
	file.Database = filepath.Join(d.Path, File)
	cfg, err := sqlite.NewConfig(ctx, &file)
	if err != nil {
		return nil, err
	}
	cfg.Dialect = sqlite.Dialect{BackendName: Scheme}
	s, err := sqlstore.New(ctx, cfg)
	if err != nil {
		return nil, err // New has closed what cfg held
	}
	return s, nil
}
