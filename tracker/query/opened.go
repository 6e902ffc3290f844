package query

import "sync"

// openedRows is how many tempfile rows openedTemps remembers: far more
// than the uploads a tracker has open at once, at a few dozen bytes each.
const openedRows = 16384

// openedTemps remembers what this tracker's create_open wrote in each
// tempfile row — the class and the devices offered — so that the
// create_close that follows on this tracker (nearly always: a client
// closes through the tracker it opened with) need not read the row back:
// one of the five database round trips an upload costs, and the database's
// CPU per upload is what caps an installation. A tempfile row never changes
// after its INSERT (it is only deleted), so what is remembered is exact
// while the row exists; once the row is gone (committed, reaped, closed
// through another tracker) CommitFile finds no tempfile, as the read would
// have. A close through another tracker, or of a row forgotten (more than
// openedRows opens since), reads the row as before.
type openedTemps struct {
	mu   sync.Mutex
	rows map[int64]openedRow
	ring [openedRows]int64 // fids in the order remembered; the oldest goes
	next int
}

type openedRow struct {
	classID int
	devIDs  []int
}

func (o *openedTemps) remember(fid int64, classID int, devIDs []int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rows == nil {
		o.rows = map[int64]openedRow{}
	}
	if old := o.ring[o.next]; old != 0 {
		delete(o.rows, old)
	}
	o.ring[o.next] = fid
	o.next = (o.next + 1) % openedRows
	o.rows[fid] = openedRow{classID, devIDs}
}

// take returns and forgets what fid's row holds, if this tracker wrote it.
func (o *openedTemps) take(fid int64) (openedRow, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.rows[fid]
	delete(o.rows, fid)
	return r, ok
}
