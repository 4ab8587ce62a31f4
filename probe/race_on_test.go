//go:build race

package probe

// raceDetector is true when the tests run under the race detector, whose sync.Pool drops a
// quarter of what is put back on purpose: allocation figures then say nothing.
const raceDetector = true
