package torture

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/sqlaccess"
	"github.com/gomogile/gomogile/store"
)

// fidRec is what the workers learned about one fid CreateTempFile gave.
type fidRec struct {
	fid      int64
	by       string    // tracker that created it
	created  time.Time // when CreateTempFile returned it
	commit   int       // -1 none attempted, else applied / maybe / notApplied
	abandon  int       // -1 none attempted, else applied / maybe / notApplied
	deleted  bool      // DeleteFile returned nil
	replaced bool      // a later commit reported replacing it
}

type fileLog struct {
	mu               sync.Mutex
	fids             map[int64]*fidRec
	dups             []string
	bad              []string
	ambiguousCreates int64
	maxFid           int64 // largest fid handed out so far
}

func newFileLog() *fileLog { return &fileLog{fids: map[int64]*fidRec{}} }

func (f *fileLog) created(fid int64, by string, floor int64, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.fids[fid]; ok {
		f.dups = append(f.dups, fmt.Sprintf("fid %d returned by CreateTempFile to %s and again to %s", fid, old.by, by))
		return
	}
	if fid <= floor {
		f.dups = append(f.dups, fmt.Sprintf("fid %d returned by CreateTempFile to %s, not above fid %d reserved before the call", fid, by, floor))
	}
	f.maxFid = max(f.maxFid, fid)
	f.fids[fid] = &fidRec{fid: fid, by: by, created: at, commit: -1, abandon: -1}
}

func (f *fileLog) update(fid int64, fn func(*fidRec)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.fids[fid]; ok {
		fn(r)
	}
}

func (f *fileLog) committed(fid int64, outcome int, replaced int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.fids[fid]
	if r == nil {
		return
	}
	// A retry may settle an unknown outcome; an applied commit stays applied.
	if r.commit != applied {
		r.commit = outcome
	}
	if outcome != applied {
		return
	}
	if replaced != 0 {
		// The replaced fid's own commit may not be recorded yet: its
		// worker may not have run since; judge checks it at the end.
		if old := f.fids[replaced]; old != nil {
			old.replaced = true
		} else {
			f.bad = append(f.bad, fmt.Sprintf("commit of fid %d replaced fid %d, which no tracker created", fid, replaced))
		}
	}
}

// gone marks a fid DeleteFile acknowledged.
func (f *fileLog) gone(fid int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.fids[fid]; r != nil {
		r.deleted = true
	}
}

// FileStats summarises the file invariants.
type FileStats struct {
	Fids             int   // fids handed out
	Committed        int   // commits acknowledged
	UnknownCommits   int   // commits whose outcome stayed unknown
	Files            int   // file rows at the end
	TempFiles        int   // tempfile rows at the end
	DeleteQueued     int   // of our fids, rows in the delete queue at the end
	OrphanTemps      int   // tempfile rows of fids no tracker was told about
	AmbiguousCreates int64 // CreateTempFile calls whose outcome was unknown
	DevCountChecked  int
}

// judge checks the file invariants against the database, read through the
// contract (and once through raw SQL for devcount, where the Store is SQL).
func (f *fileLog) judge(ctx context.Context, st *store.Store, r *Report) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s FileStats
	s.Fids = len(f.fids)
	s.AmbiguousCreates = f.ambiguousCreates

	// Every file row, in pages.
	files := map[int64]store.File{}
	for from := int64(0); ; {
		page, err := st.Files(ctx, from, math.MaxInt64, 1000)
		if err != nil {
			return fmt.Errorf("list files: %w", err)
		}
		for _, fl := range page {
			files[fl.Fid] = fl
		}
		if len(page) < 1000 {
			break
		}
		from = page[len(page)-1].Fid + 1
	}
	s.Files = len(files)
	temps, err := st.ExpiredTempFiles(ctx, 0, 1<<20)
	if err != nil {
		return fmt.Errorf("list tempfiles: %w", err)
	}
	tempSet := map[int64]bool{}
	for _, t := range temps {
		tempSet[t.Fid] = true
	}

	// Devcount, (dmid, key) uniqueness, and no file nobody created.
	var devBad, uniqBad, fidBad []string
	keys := map[string]int64{}
	for fid, fl := range files {
		on, err := st.FileOn(ctx, fid)
		if err != nil {
			return fmt.Errorf("file_on of fid %d: %w", fid, err)
		}
		s.DevCountChecked++
		if fl.DevCount != len(on) {
			devBad = append(devBad, fmt.Sprintf("fid %d: devcount %d, file_on %v", fid, fl.DevCount, on))
		}
		k := fmt.Sprintf("%d/%q", fl.DomainID, fl.Key)
		if other, ok := keys[k]; ok {
			uniqBad = append(uniqBad, fmt.Sprintf("fids %d and %d both own key %s", other, fid, k))
		}
		keys[k] = fid
		if f.fids[fid] == nil {
			fidBad = append(fidBad, fmt.Sprintf("file fid %d was never handed out by CreateTempFile", fid))
		}
	}
	if db, ok := sqlaccess.DB(st); ok {
		// The same equality in one statement, not trusting File/FileOn.
		rows, err := db.QueryContext(ctx,
			"SELECT f.fid, f.devcount, (SELECT COUNT(*) FROM file_on o WHERE o.fid = f.fid) FROM file f")
		if err != nil {
			return fmt.Errorf("raw devcount query: %w", err)
		}
		for rows.Next() {
			var fid, dc, n int64
			if err := rows.Scan(&fid, &dc, &n); err != nil {
				rows.Close()
				return fmt.Errorf("raw devcount query: %w", err)
			}
			if dc != n {
				devBad = append(devBad, fmt.Sprintf("raw SQL: fid %d devcount %d, COUNT(file_on) %d", fid, dc, n))
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("raw devcount query: %w", err)
		}
	}
	r.check("files: devcount = COUNT(file_on)", devBad, fmt.Sprintf("%d files checked", s.DevCountChecked))
	r.check("files: no two files share (dmid, key)", uniqBad, fmt.Sprintf("%d keys", len(keys)))
	r.check("files: fids unique and increasing", f.dups, fmt.Sprintf("%d fids", s.Fids))

	// The delete queue in one statement where the Store is SQL (the
	// contract reads it a row at a time, which long runs would feel).
	var delSet map[int64]bool
	if db, ok := sqlaccess.DB(st); ok {
		if delSet, err = fidSet(ctx, db, "SELECT fid FROM file_to_delete2"); err != nil {
			return fmt.Errorf("delete queue: %w", err)
		}
	}

	// Where each fid ended, against what its workers were told.
	ids := make([]int64, 0, len(f.fids))
	for fid := range f.fids {
		ids = append(ids, fid)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var lost []string
	lost = append(lost, f.bad...)
	lost = append(lost, fidBad...)
	for _, fid := range ids {
		rec := f.fids[fid]
		_, isFile := files[fid]
		isTemp := tempSet[fid]
		if !isTemp && !isFile && time.Since(rec.created) < 3*time.Second {
			// Possibly created in the database's current second, which
			// ExpiredTempFiles leaves out: ask for the row itself.
			_, err := st.TempFile(ctx, fid)
			switch {
			case err == nil:
				isTemp = true
			case !errors.Is(err, store.ErrNotFound):
				return fmt.Errorf("tempfile %d: %w", fid, err)
			}
		}
		isDel := delSet[fid]
		if delSet == nil {
			_, err := st.QueueItem(ctx, store.QueueDelete, fid)
			isDel = err == nil
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("delete queue row of fid %d: %w", fid, err)
			}
		}
		if isTemp {
			s.TempFiles++
		}
		if isDel {
			s.DeleteQueued++
		}
		switch rec.commit {
		case applied:
			s.Committed++
		case maybe:
			s.UnknownCommits++
		}
		if msg := judgeFid(rec, isTemp, isFile, isDel); msg != "" {
			lost = append(lost, fmt.Sprintf("fid %d (created by %s): %s (tempfile=%v file=%v delete-queued=%v)", fid, rec.by, msg, isTemp, isFile, isDel))
		}
	}
	for _, t := range temps {
		if f.fids[t.Fid] == nil {
			s.OrphanTemps++
		}
	}
	if int64(s.OrphanTemps) > f.ambiguousCreates {
		lost = append(lost, fmt.Sprintf("%d tempfile rows of fids no tracker was given, but only %d CreateTempFile calls had an unknown outcome", s.OrphanTemps, f.ambiguousCreates))
	}
	r.Files = s
	r.check("files: every acknowledged commit present exactly once", lost, fmt.Sprintf(
		"%d fids: %d commits acknowledged, %d unknown; at the end %d files, %d tempfiles, %d delete-queued, %d orphan tempfiles (%d creates of unknown outcome)",
		s.Fids, s.Committed, s.UnknownCommits, s.Files, s.TempFiles, s.DeleteQueued, s.OrphanTemps, s.AmbiguousCreates))
	return nil
}

// judgeFid says what is wrong with where a fid ended, or "".
func judgeFid(r *fidRec, isTemp, isFile, isDel bool) string {
	n := 0
	for _, b := range []bool{isTemp, isFile, isDel} {
		if b {
			n++
		}
	}
	if n > 1 {
		return "in more than one of tempfile, file and delete queue"
	}
	if r.replaced && (r.commit == -1 || r.commit == notApplied) {
		return "replaced by a later commit, yet its own commit never applied"
	}
	gone := r.deleted || r.replaced
	switch r.commit {
	case applied:
		switch {
		case isTemp || n == 0:
			return "commit acknowledged, yet neither a file nor queued for deletion"
		case isFile && gone:
			return "deleted or replaced, yet still a file"
		}
	case maybe:
		switch {
		case n == 0:
			return "commit of unknown outcome, and the fid is nowhere"
		case isFile && gone:
			return "deleted or replaced, yet still a file"
		}
	default: // never committed, or the commit reported it did not apply
		switch {
		case isFile || isDel:
			if r.commit == notApplied {
				return "commit reported failure, yet it applied"
			}
			return "never committed, yet a file or queued for deletion"
		case r.abandon == applied && isTemp:
			return "tempfile deleted, yet still there"
		case n == 0 && r.abandon != applied && r.abandon != maybe:
			return "tempfile vanished without a commit or a delete"
		}
	}
	return ""
}

// known reports whether a tracker was given fid.
func (f *fileLog) known(fid int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fids[fid] != nil
}

// fidSet runs a query listing fids.
func fidSet(ctx context.Context, db *sql.DB, query string) (map[int64]bool, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[int64]bool{}
	for rows.Next() {
		var fid int64
		if err := rows.Scan(&fid); err != nil {
			return nil, err
		}
		set[fid] = true
	}
	return set, rows.Err()
}
