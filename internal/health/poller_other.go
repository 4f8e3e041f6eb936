//go:build !linux

package health

import (
	"errors"
	"net/netip"
	"time"
)

// poller is only available on Linux; elsewhere every probe runs on a goroutine of its own.
type poller struct{}

// exchangeHandler is the protocol side of an exchange (unused outside Linux).
type exchangeHandler interface {
	written() (res Result, done bool)
	received(in []byte, eof bool) (res Result, done, keep bool)
	expired(in []byte, timeout string) Result
}

func newPoller() (*poller, error) { return nil, errors.New("no epoll on this system") }

func (p *poller) start(netip.AddrPort, int, []netip.Addr, []byte, int, time.Time, time.Duration, exchangeHandler, func(Result, int)) {
	panic("poller: not available on this system")
}

func (p *poller) close() {}

func alive(int) bool { return false }

func closeFD(int) {}
