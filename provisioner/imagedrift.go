package provisioner

import (
	"context"
	"errors"
	"maps"
	"slices"

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
//
// The provider's other launch settings (subnets, security groups, instance profile, cluster
// bootstrap; GCE network, service account, disk, metadata) drift the same way: the provider
// records a digest of them on each instance (Instance.Settings, kept in LaunchRecord.Settings),
// and a node launched with another digest than a launch in its zone gets now
// (cloudprovider.SettingsChooser) is drifted. A roll is paused, and a failure remembered, by image
// and settings together (simulator.BootName).

// nodeImages returns, by Node, the image its instance booted from and the image the provider
// launches now for a node of its GPU configuration (cloudprovider.ImageChooser), and likewise its
// launch settings and those a launch in its zone gets now (cloudprovider.SettingsChooser);
// nothing when the provider chooses neither. Records with neither (the provider did not say) are
// left out. The provider is asked for images once per GPU configuration (a fleet has few), not
// once per node: the answer may be a cloud call (an SSM parameter not read yet). When the provider
// cannot say which image it launches now, that error is returned once, with the nodes known
// without it: no node drifts by an image not known. Launch settings are asked for once per zone,
// and likewise (an AWS launch template's $Default version, read from EC2).
func nodeImages(ctx context.Context, p cloudprovider.Provider, recs []LaunchRecord, idx nodeIndex) (map[string]simulator.NodeImage, error) {
	ic, images := p.(cloudprovider.ImageChooser)
	sc, settings := p.(cloudprovider.SettingsChooser)
	if !images && !settings {
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
	type zoneSettings struct {
		now string
		err error
	}
	zones := map[string]zoneSettings{}
	settingsIn := func(zone string) zoneSettings {
		z, ok := zones[zone]
		if !ok {
			z.now, z.err = sc.LaunchSettings(ctx, zone)
			zones[zone] = z
		}
		return z
	}
	var out map[string]simulator.NodeImage
	for _, r := range recs {
		n := idx.forRecord(r)
		if n == nil {
			continue
		}
		var m simulator.NodeImage
		if images && r.Image != "" {
			var gpu api.GPUConfig
			if r.GPU != nil {
				gpu = *r.GPU
			}
			if a := imageFor(gpu); a.err == nil {
				m.Booted, m.Now = r.Image, a.now
			}
		}
		if settings && r.Settings != "" {
			if z := settingsIn(r.Zone); z.err == nil {
				m.Settings, m.SettingsNow = r.Settings, z.now
			}
		}
		if m == (simulator.NodeImage{}) {
			continue
		}
		if out == nil {
			out = map[string]simulator.NodeImage{}
		}
		out[n.Name] = m
	}
	var errs []error
	for _, a := range asked {
		errs = append(errs, a.err)
	}
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		errs = append(errs, zones[z].err)
	}
	return out, errors.Join(errs...)
}
