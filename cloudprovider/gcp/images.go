package gcp

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/tiler-dev/tiler/api"
)

// DefaultImageRefresh is how long the image an image family named is used before the family is
// read again.
const DefaultImageRefresh = 10 * time.Minute

// imageFamily matches an image family setting, with or without the API's URL prefix:
// projects/PROJECT/global/images/family/FAMILY.
var imageFamily = regexp.MustCompile(`^(?:https://(?:www|compute)\.googleapis\.com/compute/v1/)?projects/([^/]+)/global/images/family/([^/]+)$`)

// image returns the image launches boot from now: Config.Image, or the image its family names
// now (images.getFromFamily, read at most once per Config.ImageRefresh; a read that fails keeps
// the image last read, and with none read yet the launch fails), as
// projects/PROJECT/global/images/NAME. Launches then boot the image ImageFor reports, and a new
// image published in the family drifts the nodes booted from the old one.
func (p *Provider) image(ctx context.Context) (string, error) {
	m := imageFamily.FindStringSubmatch(p.cfg.Image)
	if m == nil {
		return p.cfg.Image, nil
	}
	project, family := m[1], m[2]
	return p.images.Resolve(ctx, p.cfg.Image, func(ctx context.Context) (string, error) {
		img, err := p.c.images.GetFromFamily(ctx, &computepb.GetFromFamilyImageRequest{Project: project, Family: family}, p.cfg.Retry.CallOption())
		if err != nil {
			return "", fmt.Errorf("reading image family %s of project %s: %w", family, project, err)
		}
		if img.GetName() == "" {
			return "", fmt.Errorf("image family %s of project %s: the answer names no image", family, project)
		}
		return fmt.Sprintf("projects/%s/global/images/%s", project, img.GetName()), nil
	})
}

// ImageFor returns the image launches boot from now (image), as the instances launched with it
// name it (MetadataImage): every node boots the same image here.
func (p *Provider) ImageFor(ctx context.Context, _ api.GPUConfig) (string, error) {
	return p.image(ctx)
}
