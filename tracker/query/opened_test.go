package query

import (
	"slices"
	"testing"
)

// openedTemps gives back what was remembered once, and forgets the oldest
// row when full.
func TestOpenedTemps(t *testing.T) {
	var o openedTemps
	o.remember(1, 7, []int{3, 4})
	if r, ok := o.take(1); !ok || r.classID != 7 || !slices.Equal(r.devIDs, []int{3, 4}) {
		t.Errorf("take(1) = %+v, %v", r, ok)
	}
	if _, ok := o.take(1); ok {
		t.Error("take(1) twice found it again")
	}
	for fid := int64(10); fid < 10+openedRows+1; fid++ {
		o.remember(fid, 0, nil)
	}
	if _, ok := o.take(10); ok {
		t.Error("the oldest of openedRows+1 rows is still remembered")
	}
	if _, ok := o.take(11); !ok {
		t.Error("the second oldest was forgotten")
	}
	if len(o.rows) != openedRows-1 {
		t.Errorf("%d rows remembered, want %d", len(o.rows), openedRows-1)
	}
}
