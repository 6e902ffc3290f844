//go:build race

package tracker_test

// raceDetector: the race detector's shadow memory multiplies a process's
// RSS, so RSS bounds mean nothing under it.
const raceDetector = true
