package probe

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// customShell is the shell a custom check's script runs in.
const customShell = "/bin/sh"

// customProbe is CoreDNS-GSLB's `custom` check: its `script` parameter is shell text, run as
// `/bin/sh -c SCRIPT`; exit status 0 is healthy, anything else (including being killed at the
// timeout) is unhealthy. It runs like an exec check (process group killed at the timeout,
// first line of output as the reason), with CoreDNS-GSLB's environment variables:
//
//	BACKEND_ADDRESS   the backend's address
//	BACKEND_FQDN      its record's name, with the trailing dot
//	BACKEND_PRIORITY  its priority, a decimal integer
//	BACKEND_ENABLE    "true": only enabled backends are probed (an operator's drain leaves it)
//
// and PATH, MERIDIAN_BACKEND_ADDRESS and MERIDIAN_BACKEND_PORT as an exec check has them.
type customProbe struct {
	execProbe
	id string // the record and priority, which the script sees
}

// newCustomProbe compiles a custom check.
func newCustomProbe(p *params, t Target, timeout time.Duration) (Prober, error) {
	script := p.String("script", "")
	if strings.TrimSpace(script) == "" {
		return nil, errors.New("params.script: required (the shell script to run)")
	}
	priority := strconv.Itoa(t.Priority)
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"BACKEND_ADDRESS=" + t.Host,
		"BACKEND_FQDN=" + t.Record,
		"BACKEND_PRIORITY=" + priority,
		"BACKEND_ENABLE=true",
	}
	env = append(env, execBackendEnv(t)...)
	return &customProbe{
		execProbe: execProbe{path: customShell, args: []string{"-c", script}, env: env, timeout: timeout},
		id:        t.Record + "|" + priority,
	}, nil
}

// identity makes the record and the priority part of the check's identity: the script sees
// them, so backends of different records do not share one run.
func (c *customProbe) identity() string { return c.id }
