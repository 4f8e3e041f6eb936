package health

import (
	"errors"
	"time"
)

// newGRPCProbe is a placeholder until the grpc probe lands.
func newGRPCProbe(p *Params, t Target, timeout time.Duration) (Prober, error) {
	return nil, errors.New("the grpc probe is not implemented yet")
}
