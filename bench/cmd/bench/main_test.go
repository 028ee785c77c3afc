package main

import (
	"strings"
	"testing"
)

// TestCheckPhaseChunk: a -phase-chunk of no Team is refused before the run
// when the converge phase in turns is to run, and accepted when it is not.
func TestCheckPhaseChunk(t *testing.T) {
	for _, tc := range []struct {
		teams, chunk int
		refused      bool
	}{
		{1000, 100, false},
		{1000, 5000, false},
		{1000, 0, true},
		{1000, -1, true},
		{0, 0, false},
		{-1, 0, false},
	} {
		err := checkPhaseChunk(tc.teams, tc.chunk)
		if (err != nil) != tc.refused {
			t.Errorf("-phase-teams %d -phase-chunk %d: %v, refused: %v", tc.teams, tc.chunk, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "-phase-chunk") {
			t.Errorf("-phase-teams %d -phase-chunk %d: %v does not name the flag", tc.teams, tc.chunk, err)
		}
	}
}
