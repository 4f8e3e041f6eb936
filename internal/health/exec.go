package health

import (
	"errors"
	"time"
)

// newExecProbe is a placeholder until the exec probe lands.
func newExecProbe(p *Params, t Target, timeout time.Duration) (Prober, error) {
	return nil, errors.New("the exec probe is not implemented yet")
}
