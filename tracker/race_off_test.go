//go:build !race

package tracker_test

const raceDetector = false
