// Package mig knows how NVIDIA Multi-Instance GPU (MIG) partitions a GPU: the profiles of each
// GPU model, which sets of profiles fit on one GPU (a layout), and how to choose a layout per GPU
// of a new node so that pending MIG slice requests fit.
//
// The data comes from the embedded copy of testdata/catalog/mig-profiles.yaml (see data/), which
// records for each model the memory-slot placement table that `nvidia-smi mig -lgipp` prints:
// a profile of size s may start at the listed slot indices and occupies slots [start, start+s).
// A layout is valid when its instances can be placed without overlapping memory slots, their
// compute slices fit the GPU, no profile exceeds its maximum count and media extensions (+me)
// follow the rules below. Layout validity is decided by search over that table, never by
// adding up memory fractions: on A100-40GB, 3g.20gb takes 4 of the 8 memory slots, so
// 3g.20gb+3g.20gb leaves no room for anything else although only 6 of 7 compute slices are used.
//
// Media extensions: at most one +me instance per GPU (MIG User Guide), and, as mig-parted's
// known_configs.go does, a 1g +me instance is never combined with another 1g instance. The
// second rule is unconfirmed on hardware; it is kept because a layout the planner proposes must
// also be accepted by mig-parted.
//
// Terms:
//
//	profile    a GPU-instance shape such as "1g.10gb" (compute slices, memory slots, placements)
//	layout     the multiset of profiles on one GPU, in canonical order, with a start slot each
//	maximal    a layout to which no further (non +me) profile can be added
//	named      a mig-parted config name from config-default.yaml: all-1g.10gb, all-balanced, ...
//
// The package is pure: a Table is built once by Load and is then read-only and safe for
// concurrent use. Plan is the hot path used by the simulator for each candidate node; it works
// on small fixed-size count vectors and cached layouts.
package mig
