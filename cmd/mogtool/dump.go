package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/dump"
	_ "github.com/gomogile/gomogile/store/etcd" // lock_dsn=etcd://…, as the tracker takes it
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
	mogtracker "github.com/gomogile/gomogile/tracker"
)

// cmdDump writes the metadata database's canonical dump (package
// store/dump): it reads the database itself, named as a tracker names
// it (--dsn, --dbuser, --dbpass, --lock_dsn, or --config with a
// mogilefsd.conf), not through a tracker. --digest prints each table's row
// count and SHA-256 instead, to compare two databases. With -o the dump
// goes to a file that appears only once it is whole.
func cmdDump(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "dump")
	db := dbFlags(fs, "", "the database")
	out := fs.String("o", "", "write the dump to this file (default: standard output)")
	digest := fs.Bool("digest", false, "print each table's rows and SHA-256 instead of the dump")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	st, err := db.open(ctx, fs, true)
	if err != nil {
		return err
	}
	defer st.Close()
	if *digest {
		ds, err := dump.Digest(ctx, st)
		if err != nil {
			return err
		}
		return printDigest(e, ds)
	}
	if *out == "" {
		return dump.Write(ctx, st, e.stdout)
	}
	return writeFileWhole(*out, func(f *os.File) error { return dump.Write(ctx, st, f) })
}

// dbFlagSet names a metadata database as a tracker's configuration does:
// db_dsn, db_user, db_pass and lock_dsn, from flags (prefixed, for a
// command naming two databases) or a mogilefsd.conf.
type dbFlagSet struct {
	prefix                          string
	cfgFile, dsn, user, pass, locks *string
}

func dbFlags(fs *flag.FlagSet, prefix, what string) *dbFlagSet {
	p := prefix
	if p != "" {
		p += "-"
	}
	return &dbFlagSet{
		prefix:  prefix,
		cfgFile: fs.String(p+"config", "", "a mogilefsd.conf naming "+what+" (db_dsn, db_user, db_pass, lock_dsn)"),
		dsn:     fs.String(ifEmpty(prefix, "dsn"), "", what+", as db_dsn (overrides the config file's)"),
		user:    fs.String(p+"dbuser", "", "db_user for "+what),
		pass:    fs.String(p+"dbpass", "", "db_pass for "+what),
		locks:   fs.String(p+"lock_dsn", "", "lock_dsn for "+what),
	}
}

func ifEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// storeDSN is the database's DSN, parsed once, as the tracker would parse it
// (tracker.Config.StoreDSN).
func (d *dbFlagSet) storeDSN(fs *flag.FlagSet) (*store.DSN, error) {
	p := d.prefix
	if p != "" {
		p += "-"
	}
	cfg := mogtracker.DefaultConfig()
	if *d.cfgFile != "" {
		f, err := os.Open(*d.cfgFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fs.Name(), err)
		}
		cfg, err = mogtracker.ParseConfig(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", fs.Name(), *d.cfgFile, err)
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case ifEmpty(d.prefix, "dsn"):
			cfg.DBDSN = *d.dsn
		case p + "dbuser":
			cfg.DBUser = *d.user
		case p + "dbpass":
			cfg.DBPass, cfg.DBPassSet = *d.pass, true
		case p + "lock_dsn":
			cfg.LockDSN = *d.locks
		}
	})
	if cfg.DBDSN == "" {
		return nil, usagef("%s: --%s or --%sconfig naming db_dsn is required", fs.Name(), ifEmpty(d.prefix, "dsn"), p)
	}
	dsn, err := cfg.StoreDSN()
	if err != nil {
		return nil, usagef("%s: %v", fs.Name(), err)
	}
	return dsn, nil
}

// open opens the database; existing: only one that holds an
// installation's schema already, creating nothing in any other
// (store.ExistingOnly), as a database read from must be.
func (d *dbFlagSet) open(ctx context.Context, fs *flag.FlagSet, existing bool) (*store.Store, error) {
	dsn, err := d.storeDSN(fs)
	if err != nil {
		return nil, err
	}
	dsn.Existing = existing
	st, err := store.OpenDSN(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: open %s: %w", fs.Name(), dsn.Redacted(), err)
	}
	return st, nil
}

// printDigest prints one line per table and the digest of them all: the
// line two databases holding the same installation share.
func printDigest(e *env, ds []dump.TableDigest) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
	all := sha256.New()
	for _, d := range ds {
		fmt.Fprintf(tw, "%s\trows=%d\tsha256=%s\n", d.Table, d.Rows, d.SHA256)
		fmt.Fprintf(all, "%s %d %s\n", d.Table, d.Rows, d.SHA256)
	}
	fmt.Fprintf(tw, "all\t\tsha256=%s\n", hex.EncodeToString(all.Sum(nil)))
	return tw.Flush()
}

// writeFileWhole writes path through a temporary file in its directory,
// synced and renamed into place only once write has succeeded, so that an
// interrupted dump never leaves a file that looks whole.
func writeFileWhole(path string, write func(*os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone by then when renamed
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("dump: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	return nil
}
