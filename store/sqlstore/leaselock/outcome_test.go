package leaselock

import "testing"

// What one DB.Acquire found decides a try: the try's own row is a grant
// even when it went in on an earlier attempt (whose fencing token went
// unseen), and a refusal names the first of: owner gone, epoch gate,
// dead holder, taken.
func TestOutcome(t *testing.T) {
	const mine, theirs = 7, 9
	tok := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name  string
		a     Attempt
		res   tryResult
		fence int64
	}{
		{"Inserted", Attempt{OwnerAlive: true, Open: true, Inserted: true, HolderToken: tok(mine), Fence: 5}, tryAcquired, 5},
		{"InsertedNoFence", Attempt{OwnerAlive: true, Open: true, Inserted: true}, tryAcquired, 0},
		{"OwnRowFromEarlierAttempt", Attempt{OwnerAlive: true, Open: true, HolderToken: tok(mine), Fence: 5}, tryAcquired, 0},
		{"OwnerGone", Attempt{Open: true, HolderToken: tok(theirs), HolderDead: true}, tryOwnerGone, 0},
		{"Gated", Attempt{OwnerAlive: true, HolderDead: true}, tryGated, 0},
		{"HolderDead", Attempt{OwnerAlive: true, Open: true, HolderToken: tok(theirs), HolderDead: true}, tryHolderDead, 0},
		{"Taken", Attempt{OwnerAlive: true, Open: true, HolderToken: tok(theirs)}, tryTaken, 0},
		{"TakenHolderUnseen", Attempt{OwnerAlive: true, Open: true}, tryTaken, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, fence := outcome(tc.a, mine)
			if res != tc.res || fence != tc.fence {
				t.Errorf("outcome(%+v) = %v, %d; want %v, %d", tc.a, res, fence, tc.res, tc.fence)
			}
		})
	}
}
