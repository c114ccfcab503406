//go:build race

package rules

// raceDetector is true when the tests run with -race, which makes work
// several times slower: time bounds on real work scale with it.
const raceDetector = true
