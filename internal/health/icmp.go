package health

import (
	"errors"
	"time"
)

// newICMPProbe is a placeholder until the icmp probe lands.
func newICMPProbe(p *Params, t Target, timeout time.Duration) (Prober, error) {
	return nil, errors.New("the icmp probe is not implemented yet")
}
