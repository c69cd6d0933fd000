package forecast

import (
	"math"
	"testing"
)

// TestRevertingExpertDrawsBack checks the reverting expert on eight weeks of a level with no
// cycle that wanders and is pulled back (an hourly AR(1) in logarithms, ρ = 0.97, so 0.48 of a
// deviation is left a day later) under 5 % noise. No cycle is detected and the expert is a
// candidate; the share φ it fits a day ahead lies between 0.2 and 0.8; over the last four
// weeks its error is below that of same time yesterday (which keeps the whole deviation) and of
// Holt's damped trend (φ 0.598, errors 0.919 and 0.899 of theirs when written). On a load with
// a daily cycle it is no candidate.
func TestRevertingExpertDrawsBack(t *testing.T) {
	level := make([]float64, 8*7*24)
	for i := 1; i < len(level); i++ {
		level[i] = 0.97*level[i-1] + math.Sqrt(1-0.97*0.97)*0.3*noise(300000+i)*math.Sqrt(3)
	}
	s := synthetic(len(level), func(i int) float64 {
		return 100 * math.Exp(level[i]) * (1 + 0.05*noise(i))
	}, nil)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	last := s.Len() - 1
	if _, err := w.At(last); err != nil {
		t.Fatal(err)
	}
	if p := w.periodAt(last).period; p != PeriodNone {
		t.Fatalf("a cycle (%s) detected on a load without one", p)
	}
	byName := map[string]*track{}
	for _, tr := range w.candidates(last) {
		byName[tr.name] = tr
	}
	rev, naive, holt := byName["reverting"], byName["baseline/"+BaselineNaiveDay], byName["holt"]
	if rev == nil || naive == nil || holt == nil {
		t.Fatalf("candidates lack the reverting expert (%t), same time yesterday (%t) or Holt (%t)", rev != nil, naive != nil, holt != nil)
	}
	phi := rev.weightsAt(floorTo(last-w.h, w.refit), s.Steps(fitWindow))[0]
	er, en := lastWeeksErrors(t, w, rev, naive)
	_, eh := lastWeeksErrors(t, w, rev, holt)
	t.Logf("φ %.3f; a day ahead over the last four weeks: reverting %.0f, same time yesterday %.0f (%.3f), Holt %.0f (%.3f)", phi, er, en, er/en, eh, er/eh)
	if phi < 0.2 || phi > 0.8 {
		t.Errorf("φ fitted %.3f, want within [0.2, 0.8] (0.48 of a deviation is left a day later)", phi)
	}
	if er >= en || er >= eh {
		t.Errorf("reverting expert's error %.0f, same time yesterday's %.0f, Holt's %.0f: want the least", er, en, eh)
	}

	cyc := synthetic(6*7*24, func(i int) float64 { return daily(i) * (1 + 0.05*noise(i)) }, nil)
	wc, err := NewWalker(cyc, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	wc.At(cyc.Len() - 1)
	for _, tr := range wc.candidates(cyc.Len() - 1) {
		if tr.kind == revertExpert {
			t.Errorf("the reverting expert is a candidate on a load with a daily cycle")
		}
	}
}
