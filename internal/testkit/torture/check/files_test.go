package check

import "testing"

func TestFids(t *testing.T) {
	good := []Alloc{
		{Proc: "w1", Fid: 1, Start: at(0), End: at(5)},
		{Proc: "w2", Fid: 3, Start: at(1), End: at(4)}, // overlaps w1's call: either order
		{Proc: "w1", Fid: 2, Start: at(3), End: at(6)},
		{Proc: "w2", Fid: 7, Start: at(10), End: at(12)},
	}
	wantViolations(t, Fids(good), InvFid, 0)
	dup := append(append([]Alloc(nil), good...), Alloc{Proc: "w3", Fid: 7, Start: at(11), End: at(13)})
	wantViolations(t, Fids(dup), InvFid, 1, "fid 7 handed out twice")
	low := append(append([]Alloc(nil), good...), Alloc{Proc: "w3", Fid: 5, Start: at(20), End: at(21)})
	wantViolations(t, Fids(low), InvFid, 1, "w3 fid 5", "below w2 fid 7")
}

func TestCommits(t *testing.T) {
	commits := []FileCommit{
		{Proc: "w1", Fid: 1, DomainID: 1, Key: "a", Outcome: OK, At: at(0)},
		{Proc: "w2", Fid: 2, DomainID: 1, Key: "a", Outcome: OK, At: at(10)}, // replaces fid 1
		{Proc: "w1", Fid: 3, DomainID: 1, Key: "b", Outcome: OK, At: at(20)},
		{Proc: "w2", Fid: 4, DomainID: 1, Key: "c", Outcome: Unknown, At: at(30)},
		{Proc: "w2", Fid: 5, DomainID: 1, Key: "d", Outcome: Failed, At: at(40)},
		{Proc: "w3", Fid: 6, DomainID: 1, Key: "e", Outcome: OK, At: at(50)}, // deleted later by the workload
	}
	final := []FileRow{{2, 1, "a"}, {3, 1, "b"}, {4, 1, "c"}}
	removed := map[int64]bool{6: true}
	wantViolations(t, Commits(commits, final, removed), InvCommit, 0)
	wantViolations(t, Commits(commits, final[:2], removed), InvCommit, 0) // the unknown one did not apply

	lost := []FileRow{{2, 1, "a"}}
	wantViolations(t, Commits(commits, lost, removed), InvCommit, 1, "w1's acknowledged commit of fid 3")
	failedThere := append(append([]FileRow(nil), final...), FileRow{5, 1, "d"})
	wantViolations(t, Commits(commits, failedThere, removed), InvCommit, 1, "fid 5", "failed, yet the file is there")
	twice := append(append([]FileRow(nil), final...), FileRow{1, 1, "a"})
	wantViolations(t, Commits(commits, twice, removed), InvCommit, 1, "owned by fids 2 and 1")
	moved := []FileRow{{2, 1, "a"}, {3, 1, "z"}, {4, 1, "c"}}
	wantViolations(t, Commits(commits, moved, removed), InvCommit, 1, `the file table has it as domain 1 key "z"`)
}
