// Package layout holds no code: its test keeps the hand-written maps of the
// repository honest. Every Go package must be named in README.md's Layout
// table, and every package whose doc comment maps its files must name each of
// its non-test .go files there, and no file that is gone. The maps drifted
// before this test existed (packages and files added without them).
package layout
