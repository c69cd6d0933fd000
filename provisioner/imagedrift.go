package provisioner

import (
	"context"
	"errors"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
	"github.com/tiler-dev/tiler/simulator"
)

// Image drift: an operator rolls the fleet onto a patched OS or GPU driver by changing the
// provider's image (the AMI flags, or the SSM parameter they name; the GCE image; the simulated
// cloud's image), and the nodes booted from the old one must go, under the pools' disruption
// budgets, as nodes whose pool changed do. The image an instance booted from is kept in its
// launch record (LaunchRecord.Image, from the cloud's answer at launch, or learnt by Recover for
// records kept before it was). The plan gets each node's image and the image its provider
// launches now as data (simulator.DisruptionOptions.Images): the simulation cannot see the cloud,
// and decides the drift, and the pause of a roll onto an image whose nodes are unhealthy, itself.

// nodeImages returns, by Node, the image its instance booted from and the image the provider
// launches now for a node of its GPU configuration; nothing when the provider does not choose
// images (cloudprovider.ImageChooser). Records without an image (the provider did not say) are
// left out. The provider is asked once per GPU configuration (a fleet has few), not once per
// node: the answer may be a cloud call (an SSM parameter not read yet). When the provider cannot
// say which image it launches now, that error is returned once, with the nodes known without it:
// no node drifts by an image not known.
func nodeImages(ctx context.Context, p cloudprovider.Provider, recs []LaunchRecord, idx nodeIndex) (map[string]simulator.NodeImage, error) {
	ic, ok := p.(cloudprovider.ImageChooser)
	if !ok {
		return nil, nil
	}
	type answer struct {
		gpu api.GPUConfig
		now string
		err error
	}
	var asked []answer
	imageFor := func(gpu api.GPUConfig) answer {
		for _, a := range asked {
			if a.gpu.Equal(gpu) {
				return a
			}
		}
		a := answer{gpu: gpu}
		a.now, a.err = ic.ImageFor(ctx, gpu)
		asked = append(asked, a)
		return a
	}
	var out map[string]simulator.NodeImage
	for _, r := range recs {
		n := idx.forRecord(r)
		if r.Image == "" || n == nil {
			continue
		}
		var gpu api.GPUConfig
		if r.GPU != nil {
			gpu = *r.GPU
		}
		a := imageFor(gpu)
		if a.err != nil {
			continue
		}
		if out == nil {
			out = map[string]simulator.NodeImage{}
		}
		out[n.Name] = simulator.NodeImage{Booted: r.Image, Now: a.now}
	}
	var errs []error
	for _, a := range asked {
		errs = append(errs, a.err)
	}
	return out, errors.Join(errs...)
}
