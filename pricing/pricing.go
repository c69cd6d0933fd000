package pricing

import (
	"context"
	"time"

	"github.com/tiler-dev/tiler/api"
)

// Price is one observed price of one offering.
type Price struct {
	api.PricedOffering
	// ObservedAt is when the source saw the price (for spot, the price history timestamp).
	ObservedAt time.Time
}

// Source returns current prices.
type Source interface {
	// Name identifies the source in logs and metrics: embedded, aws, gcp.
	Name() string
	// Prices returns the latest known price of every offering the source knows. An error means
	// the caller keeps the prices it had.
	Prices(ctx context.Context) ([]Price, error)
}
