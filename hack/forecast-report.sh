#!/usr/bin/env bash
# The forecaster's figures on every trace of testdata/traces: walk-forward WAPE against the
# seasonal-naive baselines at 1 day, 1 hour and 15 minutes, and the replay (boot 5 m, lead 15 m)
# at the load per GPU that puts each trace's mean at ten to twenty GPUs — the settings
# forecast/backtest's target tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/tiler ./cmd/tiler
declare -A per_gpu=([tune/nab/nyc_taxi.csv]=1500 [tune/crane-dsp/input0.csv]=6 [tune/crane-dsp/input1.csv]=0.25 [tune/crane-dsp/input2.csv]=25)
for trace in tune/nab/nyc_taxi.csv tune/crane-dsp/input0.csv tune/crane-dsp/input1.csv tune/crane-dsp/input2.csv; do
	csv=testdata/traces/$trace
	echo "== $trace"
	for h in 1d 1h 15m; do
		if [[ $trace == */nab/* && $h == 15m ]]; then
			continue # 30-minute samples
		fi
		bin/tiler forecast backtest --csv "$csv" --horizon "$h" | grep -E '^(horizon|model|WAPE|baseline|WAPE / best)'
	done
	bin/tiler forecast replay --csv "$csv" --per-gpu "${per_gpu[$trace]}" --boot 5m --lead 15m |
		grep -E '^(per GPU|under-provisioned|GPU-hours|under-provisioning reduction|GPU-hours increase)|reactive'
	echo
done
