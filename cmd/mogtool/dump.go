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

	"github.com/gomogile/gomogile/internal/dump"
	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/etcd" // lock_dsn=etcd://…, as the tracker takes it
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
	mogtracker "github.com/gomogile/gomogile/tracker"
)

// cmdDump writes the metadata database's canonical dump (package
// internal/dump): it reads the database itself, named as a tracker names
// it (--dsn, --dbuser, --dbpass, --lock_dsn, or --config with a
// mogilefsd.conf), not through a tracker. --digest prints each table's row
// count and SHA-256 instead, to compare two databases. With -o the dump
// goes to a file that appears only once it is whole.
func cmdDump(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "dump")
	cfgFile := fs.String("config", "", "a mogilefsd.conf to take db_dsn, db_user, db_pass and lock_dsn from")
	dsn := fs.String("dsn", "", "the database, as db_dsn (overrides --config)")
	user := fs.String("dbuser", "", "db_user")
	pass := fs.String("dbpass", "", "db_pass")
	lockDSN := fs.String("lock_dsn", "", "lock_dsn")
	out := fs.String("o", "", "write the dump to this file (default: standard output)")
	digest := fs.Bool("digest", false, "print each table's rows and SHA-256 instead of the dump")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	cfg := mogtracker.DefaultConfig()
	if *cfgFile != "" {
		f, err := os.Open(*cfgFile)
		if err != nil {
			return fmt.Errorf("dump: %w", err)
		}
		cfg, err = mogtracker.ParseConfig(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("dump: %s: %w", *cfgFile, err)
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "dsn":
			cfg.DBDSN = *dsn
		case "dbuser":
			cfg.DBUser = *user
		case "dbpass":
			cfg.DBPass, cfg.DBPassSet = *pass, true
		case "lock_dsn":
			cfg.LockDSN = *lockDSN
		}
	})
	if cfg.DBDSN == "" {
		return usagef("dump: --dsn or --config naming db_dsn is required")
	}
	d, err := cfg.StoreDSN()
	if err != nil {
		return usagef("dump: %v", err)
	}
	st, err := store.OpenDSN(ctx, d)
	if err != nil {
		return fmt.Errorf("dump: open %s: %w", d.Redacted(), err)
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
