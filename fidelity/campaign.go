package fidelity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/tiler-dev/tiler/internal/controlplane"
)

// Campaign runs many generated scenarios, each in several modes (default AllModes), on a local control
// plane it starts itself (and replaces when a run could not clean up after itself).
type Campaign struct {
	// First is the first seed; Seeds how many consecutive seeds to run.
	First uint64
	Seeds int
	// Gen tunes the generator.
	Gen GenOptions
	// Modes are the modes each scenario runs in (default AllModes).
	Modes []Mode
	// Out, when set, is a folder that receives every scenario with a disagreement or a note, as a
	// regression file named <scenario>.txt, and the report as report.txt.
	Out string
	// Dir receives the simulated cloud's state files (default: a temporary folder).
	Dir string
	// Timing tunes the harness; ControlPlane the control plane.
	Timing       Timing
	ControlPlane controlplane.Options
	// Log receives the controller's and the cloud's logs (nil: none); Progress one line per seed.
	Log      *zap.Logger
	Progress func(format string, args ...any)
}

// Run runs the campaign and returns its report. A run that fails for another reason than cleanup
// is reported through Progress and left out of the report; the error is reserved for the control
// plane not starting and I/O on Out and Dir.
func (c Campaign) Run(ctx context.Context) (*Report, error) {
	progress := c.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if c.Out != "" {
		if err := os.MkdirAll(c.Out, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", c.Out, err)
		}
	}
	dir := c.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "tiler-fidelity-")
		if err != nil {
			return nil, fmt.Errorf("creating a state folder: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	start := func() (*controlplane.ControlPlane, *Harness, error) {
		cp, err := controlplane.Start(ctx, c.ControlPlane)
		if err != nil {
			return nil, nil, fmt.Errorf("starting the control plane: %w", err)
		}
		kube, err := kubernetes.NewForConfig(cp.RESTConfig())
		if err != nil {
			cp.Stop()
			return nil, nil, fmt.Errorf("building a client for the control plane: %w", err)
		}
		dyn, err := dynamic.NewForConfig(cp.RESTConfig())
		if err != nil {
			cp.Stop()
			return nil, nil, fmt.Errorf("building a client for the control plane: %w", err)
		}
		return cp, NewHarness(kube, dyn, dir, c.Log, c.Timing), nil
	}
	cp, h, err := start()
	if err != nil {
		return nil, err
	}
	defer func() { cp.Stop() }()
	rep := &Report{}
	began := time.Now()
	for seed := c.First; seed < c.First+uint64(c.Seeds) && ctx.Err() == nil; seed++ {
		sc := Generate(seed, c.Gen)
		keep := false
		modes := c.Modes
		if len(modes) == 0 {
			modes = AllModes
		}
		for _, mode := range modes {
			out, err := h.Run(ctx, sc, mode)
			if errors.Is(err, ErrCleanup) {
				if out != nil {
					rep.Add(out)
					keep = keep || len(out.Disagreements()) > 0 || len(out.Notes) > 0
				}
				progress("%v; starting a fresh control plane", err)
				cp.Stop()
				if cp, h, err = start(); err != nil {
					return rep, err
				}
				continue
			}
			if err != nil {
				progress("%v", err)
				continue
			}
			rep.Add(out)
			keep = keep || len(out.Disagreements()) > 0 || len(out.Notes) > 0
		}
		if keep && c.Out != "" {
			b, err := sc.Encode()
			if err != nil {
				return rep, err
			}
			if err := os.WriteFile(filepath.Join(c.Out, sc.Name+".txt"), b, 0o644); err != nil {
				return rep, fmt.Errorf("writing scenario %s: %w", sc.Name, err)
			}
		}
		progress("seed %d done (%s elapsed)", seed, time.Since(began).Round(time.Second))
	}
	return rep, ctx.Err()
}

// WriteReport writes the report to Out/report.txt when Out is set.
func (c Campaign) WriteReport(rep *Report) error {
	if c.Out == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(c.Out, "report.txt"))
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if err := rep.Write(f); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}
