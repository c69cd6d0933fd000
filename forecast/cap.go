package forecast

import "math"

// Caps. A load pinned at a limit — a CPU quota, a connection pool, an instance's whole CPU —
// shows the same largest value again and again, and never a larger one. The experts scale
// profiles by the last day's level and carry them forward by the growth, so at the phases the
// limit pins they forecast above it, where no value ever lies: on synthetic batch-1 of the tune
// set, whose nightly job is pinned for three hours, those hours alone were a third of the
// forecaster's excess error over the filter oracle's (forecast/synth), each forecast 0.5 %
// above the limit. Every expert's forecast is therefore clipped at the cap the values up to its
// origin show (ceilings), so the mix weighs the experts on what they would forecast clipped. A
// value above the cap lifts it at once, so a load whose limit is raised is forecast above the
// old limit from its first value past it. The upper forecast keeps its own rule (margin.go's
// ceiling: the margin does not raise it past a saturated level; it is never below the point).

// capTies is how many values at the running maximum (within capTolerance of it) make it a cap.
// Chosen on the tune set (testdata/traces/tune, the 1-day hourly backtest of
// TestGeneralisation), against no cap (median ratio 0.858, mean 0.8363): 2 and 3 gave a median
// of 0.844 with batch-1 0.858 → 0.826 and batch-3 0.948 → 0.972; 6 gave 0.817 and 0.956; 12
// (kept) 0.817 and 0.943, mean 0.8351; 24 0.831 and 0.944; 48 0.858 and 0.946 (batch-1's 51
// pinned hours then make a cap only in its last weeks). No other tune series moved by more
// than 0.005. The earlier the cap, the more of the weighing's evidence is clipped: batch-3's
// cap is known from its third day and, with 3, its mix leaned on the experts clipping helped
// and fell back to the four-week mean a third of the time (13 % without a cap and with 12).
// Twelve exact repeats of the largest value are no accident of a continuous load; a count that
// small integers make tie at its maximum twelve times is forecast at most at that maximum,
// until a larger value lifts the cap.
const capTies = 12

// beyondMax bounds every expert's forecast at this multiple of the largest value seen up to its
// origin. A stack's predictors scale the profile by ratios of recent values to the profile, and
// where the profile is near zero and the recent values are not (a disk that writes nothing for
// hours, then 400 MB in five minutes) the ratio is in the millions: on NAB's
// ec2_disk_write_bytes_c0d644 (tune/nab) the daily stack forecast 7·10¹² bytes an hour on a load
// whose largest hour is 4·10⁷, and one such forecast in the mix outweighed every other error (a
// ratio to the best baseline of 11.8). A load may grow past its largest value, but not to twice
// it within a horizon without that showing first: a step up lifts the bound with it. Chosen on
// that trace with the evidence cap (evidenceCap): 1.5× gave 1.079, 2× 1.081, 3× 1.121, 10× 1.422;
// no other tune series moved by more than 0.005 with any of them.
const beyondMax = 2

// capTolerance is the relative distance from the maximum within which a value ties with it: an
// hour of four quarter-hours pinned at the limit averages to the limit within a rounding error.
const capTolerance = 1e-9

// ceilings returns, for every index, the bound of the forecasts from it: the cap the values up
// to it show — their maximum once capTies of them lie at it — or else beyondMax times their
// maximum; +Inf while no value above zero is known. A larger value lifts the cap until it too
// has repeated capTies times.
func ceilings(y []float64) []float64 {
	out := make([]float64, len(y))
	m, ties := 0.0, 0
	for i, v := range y {
		switch {
		case math.IsNaN(v):
		case ties == 0 || v > m+capTolerance*math.Abs(m):
			m, ties = v, 1
		case v >= m-capTolerance*math.Abs(m):
			ties++
		}
		switch {
		case ties == 0 || m <= 0:
			out[i] = math.Inf(1)
		case ties >= capTies:
			out[i] = m
		default:
			out[i] = beyondMax * m
		}
	}
	return out
}
