//go:build !race

package nsinit

// raceEnabled: the race detector's shadow memory dwarfs what memory tests measure.
const raceEnabled = false
