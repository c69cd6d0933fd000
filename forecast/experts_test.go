package forecast

import (
	"math"
	"reflect"
	"testing"
)

// TestExpertsMakeTheForecast walks two series a day ahead — NYC taxi, where the experts mix,
// and a load at its floor that bursts at random hours (TestFloorFallbackOnABurstyLoad's), where
// the forecast falls back to the week's median — and checks, at every origin, that the experts
// Walker.Experts returns are the ones the forecast is made of: each share names one of them, and
// Σ weight·point over the shares is the forecast's point (the mix, a baseline or the median
// fallen back to, or same time yesterday after a break). And that asking for them changes no
// forecast: a walker asked at every origin forecasts bit for bit as one never asked.
func TestExpertsMakeTheForecast(t *testing.T) {
	nyc := loadTrace(t, "tune/nab/nyc_taxi.csv")
	nyc.Values = nyc.Values[:7*7*48]
	floor := burstyAtFloor()
	for _, c := range []struct {
		name  string
		s     Series
		model string // a share some forecast must have
	}{
		{"NYC taxi", nyc, "baseline/" + BaselineNaiveWeek},
		{"a load at its floor", floor, FloorMedian},
	} {
		asked, err := NewWalker(c.s, Options{Horizon: Day})
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := NewWalker(c.s, Options{Horizon: Day})
		if _, err := asked.Experts(c.s.Len()); err == nil {
			t.Errorf("%s: an origin past the series gave experts", c.name)
		}
		mixed, seen := 0, 0
		for o := 0; o+asked.HorizonSteps() < c.s.Len(); o++ {
			ex, err := asked.Experts(o)
			if err != nil {
				t.Fatal(err)
			}
			got, errA := asked.At(o)
			want, errB := plain.At(o)
			if (errA == nil) != (errB == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, origin %d: %+v (%v) asked for its experts, %+v (%v) not", c.name, o, got, errA, want, errB)
			}
			if errA != nil {
				continue
			}
			point := map[string]float64{}
			for _, e := range ex {
				if _, dup := point[e.Model]; dup {
					t.Fatalf("%s, origin %d: %s listed twice", c.name, o, e.Model)
				}
				point[e.Model] = e.Point
			}
			sum := 0.0
			for _, s := range got.Shares {
				p, ok := point[s.Model]
				if !ok {
					t.Fatalf("%s, origin %d: share %s is none of the experts %v", c.name, o, s.Model, ex)
				}
				sum += s.Weight * p
				if s.Model == c.model {
					seen++
				}
			}
			if math.Abs(sum-got.Point) > 1e-9*math.Max(1, math.Abs(got.Point)) {
				t.Fatalf("%s, origin %d: Σ weight·point %v, forecast %v (shares %v, experts %v)", c.name, o, sum, got.Point, got.Shares, ex)
			}
			if len(got.Shares) > 1 {
				mixed++
			}
		}
		if mixed == 0 || seen == 0 {
			t.Errorf("%s: %d forecasts mixed experts, %d had a share of %s: the walk checked too little", c.name, mixed, seen, c.model)
		}
	}
}
