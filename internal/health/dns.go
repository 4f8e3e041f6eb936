package health

import (
	"errors"
	"time"
)

// newDNSProbe is a placeholder until the dns probe lands.
func newDNSProbe(p *Params, t Target, timeout time.Duration) (Prober, error) {
	return nil, errors.New("the dns probe is not implemented yet")
}
