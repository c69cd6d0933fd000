package provisioner

import (
	"context"
	"errors"
	"fmt"

	"github.com/tiler-dev/tiler/api"
	"github.com/tiler-dev/tiler/cloudprovider"
)

// Image drift: an operator rolls the fleet onto a patched OS or GPU driver by changing the
// provider's image (the AMI flags, the GCE image, the simulated cloud's image), and the nodes
// booted from the old one must go, under the pools' disruption budgets, as nodes whose pool
// changed do. The image an instance booted from is kept in its launch record (LaunchRecord.Image,
// from the cloud's answer at launch, or learnt by Recover for records kept before it was); the
// plan gets the drifted nodes as data (simulator.DisruptionOptions.Drifted), the simulation
// cannot see the cloud.

// imageDrift lists the Nodes whose instance booted from another image than the provider launches
// now for a node of its GPU configuration, each with how; nil when the provider does not choose
// images (cloudprovider.ImageChooser). A record without an image (its provider did not say), or
// whose provider does not choose the image for its GPU configuration, is not drifted. When the
// provider cannot say which image it launches now (an SSM parameter unreadable, never read), the
// error is returned with the nodes judged without it: none is drifted by an image not known.
func imageDrift(ctx context.Context, p cloudprovider.Provider, recs []LaunchRecord, idx nodeIndex) (map[string]string, error) {
	ic, ok := p.(cloudprovider.ImageChooser)
	if !ok {
		return nil, nil
	}
	var out map[string]string
	var errs []error
	for _, r := range recs {
		n := idx.forRecord(r)
		if r.Image == "" || n == nil {
			continue
		}
		var gpu api.GPUConfig
		if r.GPU != nil {
			gpu = *r.GPU
		}
		want, err := ic.ImageFor(ctx, gpu)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if want != "" && want != r.Image {
			if out == nil {
				out = map[string]string{}
			}
			out[n.Name] = fmt.Sprintf("booted from image %s; its nodes now boot from %s", r.Image, want)
		}
	}
	return out, errors.Join(errs...)
}
