//go:build !linux

package probe

import (
	"errors"
	"net/netip"
	"time"
)

// Poller is only available on Linux; elsewhere every probe runs on a goroutine of its own.
type Poller struct{}

// exchangeHandler is the protocol side of an exchange (unused outside Linux).
type exchangeHandler interface {
	written() (res Result, done bool)
	received(in []byte, eof bool) (res Result, done, keep bool)
	expired(in []byte, timeout string) Result
	ended(keptFD int)
}

// NewPoller fails: there is no epoll on this system.
func NewPoller() (*Poller, error) { return nil, errors.New("no epoll on this system") }

func (p *Poller) start(netip.AddrPort, int, []netip.Addr, []byte, int, time.Time, time.Duration, exchangeHandler, func(Result)) {
	panic("poller: not available on this system")
}

// Close does nothing: no poller runs here.
func (p *Poller) Close() {}

func alive(int) bool { return false }

func closeFD(int) {}
