package reserve

import (
	"context"
	"time"

	"go.uber.org/zap"
)

const warehouseDeadline = 200 * time.Millisecond

type whResult struct {
	warehouse string
	stock     int
	err       error
}

// queryWarehouses asks every warehouse in parallel and returns what arrived
// before the deadline; late warehouses fall back to the cached figure.
func (s *Service) queryWarehouses(ctx context.Context, sku string) map[string]int {
	ctx, cancel := context.WithTimeout(ctx, warehouseDeadline)
	defer cancel()

	out := make(map[string]int, len(s.warehouses))
	for _, wh := range s.warehouses {
		wh := wh
		ch := make(chan whResult)
		go func() {
			n, err := s.wh.Stock(context.Background(), wh, sku)
			ch <- whResult{warehouse: wh, stock: n, err: err}
		}()
		select {
		case r := <-ch:
			if r.err == nil {
				out[r.warehouse] = r.stock
			}
		case <-ctx.Done():
			s.log.Warn("warehouse query deadline exceeded",
				zap.String("warehouse", wh), zap.Duration("deadline", warehouseDeadline), zap.String("sku", sku))
			out[wh] = s.cache.Stock(wh, sku)
		}
	}
	return out
}
