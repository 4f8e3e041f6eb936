package health

import (
	"errors"
	"time"
)

// newLuaProbe is a placeholder until the lua probe lands.
func newLuaProbe(p *Params, t Target, timeout time.Duration) (Prober, error) {
	return nil, errors.New("the lua probe is not implemented yet")
}
