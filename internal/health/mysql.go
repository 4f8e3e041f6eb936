package health

import (
	"errors"
	"time"
)

// newMySQLProbe is a placeholder until the mysql probe lands.
func newMySQLProbe(p *Params, t Target, timeout time.Duration) (Prober, error) {
	return nil, errors.New("the mysql probe is not implemented yet")
}
