package forecast

import (
	"math"
	"strings"
	"testing"
)

// burstyAtFloor is five weeks of an hourly load at its floor (0.4–0.6) that bursts to 50–150
// one hour in eight, at random.
func burstyAtFloor() Series {
	return synthetic(5*7*24, func(i int) float64 {
		if noise(700000+i) > 0.75 {
			return 100 + 50*noise(800000+i)
		}
		return 0.5 + 0.1*noise(900000+i)
	}, nil)
}

// TestFloorFallbackOnABurstyLoad: a load that is nothing most hours and bursts at random ones
// (one hour in eight, 50–150 times the floor) is forecast a day ahead. Every expert and baseline
// forecasts some mean of the bursts, and at the hours without one (seven in eight) that mean is
// all error; the median of the last week, the floor, is what an absolute error asks for. The
// floor fallback takes the forecaster's error below the mix's (0.955 against 1.079 of the load
// when written; the best baseline, which copies bursts, 1.398). On a daily load it is never
// taken.
func TestFloorFallbackOnABurstyLoad(t *testing.T) {
	s := burstyAtFloor()
	score := func(floor bool) (wape, best float64, atFloor, n int) {
		w, err := NewWalker(s, Options{Horizon: Day})
		if err != nil {
			t.Fatal(err)
		}
		if !floor {
			w.fallbacks = w.fallbacks[:len(w.baselines)]
		}
		var errSum, ySum float64
		base := make([]float64, len(w.baselines))
		for T := s.Len() - 2*7*24; T < s.Len(); T++ {
			fc, err := w.At(T - w.h)
			if err != nil {
				t.Fatal(err)
			}
			y := s.Values[T]
			errSum += math.Abs(y - fc.Point)
			ySum += y
			for j, b := range w.baselines {
				v, _ := w.forecastOf(b, T)
				base[j] += math.Abs(y - v)
			}
			if fc.Model == FloorMedian && len(fc.Shares) == 1 && strings.Contains(fc.Fallback, "floor") {
				atFloor++
			}
			n++
		}
		return errSum / ySum, slicesMin(base) / ySum, atFloor, n
	}
	with, best, atFloor, n := score(true)
	without, _, _, _ := score(false)
	t.Logf("WAPE %.3f with the floor fallback (%d of %d forecasts the week's median), %.3f without; best baseline %.3f", with, atFloor, n, without, best)
	if with >= best {
		t.Errorf("with the floor fallback the WAPE %.3f is not below the best baseline's %.3f", with, best)
	}
	if with > 0.95*without {
		t.Errorf("the floor fallback took the WAPE from %.3f to %.3f, want 5 %% less", without, with)
	}
	if atFloor < n/2 {
		t.Errorf("%d of %d forecasts fell back to the week's median, want most", atFloor, n)
	}

	daily := synthetic(5*7*24, func(i int) float64 { return daily(i) * (1 + 0.2*noise(i)) }, nil)
	w, err := NewWalker(daily, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	for o := 0; o+w.h < daily.Len(); o++ {
		fc, err := w.At(o)
		if err != nil {
			continue
		}
		if fc.Model == FloorMedian || w.floor.skewed(o) {
			t.Fatalf("a daily load fell back to the floor median at origin %d (%s)", o, fc.Fallback)
		}
	}
}

func slicesMin(x []float64) float64 {
	m := math.Inf(1)
	for _, v := range x {
		m = math.Min(m, v)
	}
	return m
}

// TestFloorFallbackLetsGoOfASteadyLoad: a load at its floor (bursts on nothing, as above) turns
// into a steady daily load at half the bursts' height for good. The level-break rule,
// suspended while the forecast is the floor median, takes over once the load has stayed above
// the week's mean for its twelve hours (floorModel.leftFloor), and the forecast follows same time
// yesterday from there: the floor median forecasts the first day and a half of the new load at
// most.
func TestFloorFallbackLetsGoOfASteadyLoad(t *testing.T) {
	change := 3 * 7 * 24
	s := synthetic(5*7*24, func(i int) float64 {
		if i >= change {
			return 0.5 * daily(i) * (1 + 0.1*noise(i))
		}
		if noise(700000+i) > 0.75 {
			return 100 + 50*noise(800000+i)
		}
		return 0.5 + 0.1*noise(900000+i)
	}, nil)
	w, err := NewWalker(s, Options{Horizon: Day})
	if err != nil {
		t.Fatal(err)
	}
	var errSum, naive, ySum float64
	atFloor := 0
	for T := change + w.h; T < s.Len(); T++ {
		fc, err := w.At(T - w.h)
		if err != nil {
			t.Fatal(err)
		}
		y := s.Values[T]
		v, _ := w.forecastOf(w.baselines[0], T)
		errSum, naive, ySum = errSum+math.Abs(y-fc.Point), naive+math.Abs(y-v), ySum+y
		if fc.Model == FloorMedian {
			atFloor++
		}
	}
	t.Logf("after the change: WAPE %.3f, same time yesterday %.3f; %d forecasts the floor median", errSum/ySum, naive/ySum, atFloor)
	if atFloor > 36 {
		t.Errorf("%d forecasts of the steady load were the floor median, want at most a day and a half's", atFloor)
	}
	if errSum > 2*naive {
		t.Errorf("WAPE %.3f after the change, more than twice same time yesterday's %.3f", errSum/ySum, naive/ySum)
	}
}
