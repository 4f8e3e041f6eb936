package health

import (
	"errors"
	"time"
)

// newHTTPProbe is a placeholder until the http probe lands.
func newHTTPProbe(p *Params, t Target, timeout time.Duration) (Prober, error) {
	return nil, errors.New("the http probe is not implemented yet")
}
