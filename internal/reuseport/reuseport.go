// Package reuseport binds sockets with SO_REUSEPORT, as CoreDNS binds its DNS sockets: several
// sockets, of this process or of the one that replaces it in a binary upgrade, share one
// address, and the kernel spreads the packets or connections among them.
package reuseport

import (
	"context"
	"net"
)

// Listen is net.Listen with SO_REUSEPORT on the socket.
func Listen(network, addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: Control}
	return lc.Listen(context.Background(), network, addr)
}
