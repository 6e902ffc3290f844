package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gomogile/gomogile/store/migrate"
)

// cmdMigrate moves the metadata from one database to another, whatever
// their backends (package store/migrate), and checks the copy; with
// --verify-only it checks two databases against each other and changes
// nothing. Both are named as a tracker names its database (--from DSN or
// --from-config FILE, and --to likewise). The copy goes on from where an
// interrupted run of the same move stopped.
func cmdMigrate(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "migrate")
	from := dbFlags(fs, "from", "the source database")
	to := dbFlags(fs, "to", "the target database (empty, or holding this move unfinished)")
	verifyOnly := fs.Bool("verify-only", false, "compare the two databases' dumps, table by table, and change nothing")
	quiesced := fs.Bool("source-quiesced", false, "copy although a monitor reported to the source within the last 30 s")
	batch := fs.Int("batch", 2000, "files copied per transaction")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *batch <= 0 {
		return usagef("migrate: --batch must be positive, not %d", *batch)
	}
	fromDSN, err := from.storeDSN(fs)
	if err != nil {
		return err
	}
	src, err := from.open(ctx, fs, true)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := to.open(ctx, fs, false)
	if err != nil {
		return err
	}
	defer dst.Close()
	if *verifyOnly {
		if err := migrate.Verify(ctx, src, dst); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "migrate: the two databases hold the same installation")
		return nil
	}
	l := &liveLine{w: e.stderr}
	l.tty, l.width = terminal(e.stderr)
	defer l.end()
	var m meter
	var lastShown time.Time
	lastPhase := ""
	err = migrate.Move(ctx, src, dst, migrate.Options{
		Batch:          *batch,
		SourceQuiesced: *quiesced,
		Source:         fromDSN.Redacted(),
		Progress: func(p migrate.Progress) {
			now := time.Now()
			rate, eta, ok := m.observe(now, p.Files, p.TotalFiles)
			// Off a terminal, a line per phase and one every 10 s at most.
			if !l.tty && p.Phase == lastPhase && now.Sub(lastShown) < 10*time.Second {
				return
			}
			lastPhase, lastShown = p.Phase, now
			line := fmt.Sprintf("migrate %s: %s, %d rows", p.Phase, progress(p.Files, p.TotalFiles, "files", rate, eta, ok), p.Rows)
			if p.ResumedFrom > 0 {
				line += fmt.Sprintf(" (resumed after fid %d)", p.ResumedFrom)
			}
			l.show(line)
		},
	})
	if err != nil {
		return err
	}
	l.end()
	fmt.Fprintln(e.stdout, "migrate: done; the target holds the same installation as the source")
	return nil
}
