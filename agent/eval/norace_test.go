//go:build !race

package eval

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = false
