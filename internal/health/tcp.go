package health

import (
	"errors"
	"time"
)

// newTCPProbe is a placeholder until the tcp probe lands.
func newTCPProbe(p *Params, t Target, timeout time.Duration) (Prober, error) {
	return nil, errors.New("the tcp probe is not implemented yet")
}
