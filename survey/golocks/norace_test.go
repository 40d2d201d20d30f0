//go:build !race

package golocks

// raceDetector says the tests run under the race detector.
const raceDetector = false
