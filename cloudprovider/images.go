package cloudprovider

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// RefreshedImages resolves image settings that name a moving image (an AWS SSM parameter, a GCE
// image family) into the image they name now, reading each at most once per Refresh, so that
// the image a launch boots and the image ImageChooser.ImageFor reports agree, and a new release
// reaches the fleet as drift within Refresh. A read that fails keeps the image last read; with
// none read yet it is the read's error (no launch can choose an image).
type RefreshedImages struct {
	Clock   clock.PassiveClock
	Refresh time.Duration

	mu   sync.Mutex
	read map[string]readImage // by setting
}

type readImage struct {
	image string
	at    time.Time
}

// Resolve returns the image setting names now: the one read within Refresh, else read's answer
// (kept for the next Refresh), else, when read fails, the one read last.
func (r *RefreshedImages) Resolve(ctx context.Context, setting string, read func(context.Context) (string, error)) (string, error) {
	r.mu.Lock()
	last, have := r.read[setting]
	r.mu.Unlock()
	if have && r.Clock.Since(last.at) < r.Refresh {
		return last.image, nil
	}
	image, err := read(ctx)
	if err != nil {
		if have {
			return last.image, nil
		}
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.read == nil {
		r.read = map[string]readImage{}
	}
	r.read[setting] = readImage{image: image, at: r.Clock.Now()}
	return image, nil
}
