package gcp

import (
	"context"
	"errors"
	"fmt"

	compute "cloud.google.com/go/compute/apiv1"
	"google.golang.org/api/option"

	"github.com/tiler-dev/tiler/internal/gcpapi"
)

// clients are the Compute Engine REST clients the package uses. REST (not gRPC) because Compute
// Engine v1 is a REST API and because a REST client can be pointed at an httptest server.
type clients struct {
	instances        *compute.InstancesClient
	zoneOperations   *compute.ZoneOperationsClient
	machineTypes     *compute.MachineTypesClient
	acceleratorTypes *compute.AcceleratorTypesClient
	images           *compute.ImagesClient
	reservations     *compute.ReservationsClient
}

func newClients(ctx context.Context, cfg Config, opts []option.ClientOption) (*clients, error) {
	all := gcpapi.ClientOptions(cfg.Endpoint, opts...)
	var c clients
	var err error
	if c.instances, err = compute.NewInstancesRESTClient(ctx, all...); err != nil {
		return nil, fmt.Errorf("gcp: creating the instances client: %w", err)
	}
	if c.zoneOperations, err = compute.NewZoneOperationsRESTClient(ctx, all...); err != nil {
		c.close()
		return nil, fmt.Errorf("gcp: creating the zone operations client: %w", err)
	}
	if c.machineTypes, err = compute.NewMachineTypesRESTClient(ctx, all...); err != nil {
		c.close()
		return nil, fmt.Errorf("gcp: creating the machine types client: %w", err)
	}
	if c.acceleratorTypes, err = compute.NewAcceleratorTypesRESTClient(ctx, all...); err != nil {
		c.close()
		return nil, fmt.Errorf("gcp: creating the accelerator types client: %w", err)
	}
	if c.images, err = compute.NewImagesRESTClient(ctx, all...); err != nil {
		c.close()
		return nil, fmt.Errorf("gcp: creating the images client: %w", err)
	}
	if c.reservations, err = compute.NewReservationsRESTClient(ctx, all...); err != nil {
		c.close()
		return nil, fmt.Errorf("gcp: creating the reservations client: %w", err)
	}
	return &c, nil
}

func (c *clients) close() error {
	var errs []error
	if c.instances != nil {
		errs = append(errs, c.instances.Close())
	}
	if c.zoneOperations != nil {
		errs = append(errs, c.zoneOperations.Close())
	}
	if c.machineTypes != nil {
		errs = append(errs, c.machineTypes.Close())
	}
	if c.acceleratorTypes != nil {
		errs = append(errs, c.acceleratorTypes.Close())
	}
	if c.images != nil {
		errs = append(errs, c.images.Close())
	}
	if c.reservations != nil {
		errs = append(errs, c.reservations.Close())
	}
	return errors.Join(errs...)
}
