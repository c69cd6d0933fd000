// Command render writes deploy/tiler.yaml as the chart's rendering of its default values and copies
// the CRDs of deploy/crds into the chart's crds/ directory (`make chart` runs it).
package main

import (
	"fmt"
	"os"

	charttest "github.com/tiler-dev/tiler/deploy/chart/test"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run() error {
	m, err := charttest.DeployManifest()
	if err != nil {
		return err
	}
	if err := os.WriteFile(charttest.DeployManifestPath(), []byte(m), 0o644); err != nil {
		return err
	}
	pairs, err := charttest.CRDPairs()
	if err != nil {
		return err
	}
	for _, p := range pairs {
		b, err := os.ReadFile(p[0])
		if err != nil {
			return err
		}
		if err := os.WriteFile(p[1], b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
