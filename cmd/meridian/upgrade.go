package main

import (
	"fmt"
	"log"
	"net"
	"os"
	"strings"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/plugin/gslb"
)

// A binary upgrade without a lost query (docs/operations.md, "Upgrading without a lost
// query"): on SIGUSR2 caddy, under CoreDNS, starts the binary anew as a child that inherits the
// DNS sockets and serves them beside this process (the gslb plugin writes the state files for
// it meanwhile); once the child reports that it serves, this process stops its servers, hands
// over what the gslb blocks own (gslb.Handover) and exits. The child tells systemd that it is
// the service's main process now.

// announceStarts tells systemd of each start (a process's first, a Corefile reload's):
// READY=1 and this process's PID.
func announceStarts() {
	caddy.RegisterEventHook("meridian-systemd", func(event caddy.EventName, _ any) error {
		if event != caddy.InstanceStartupEvent {
			return nil
		}
		if err := notifySystemd(os.Getenv("NOTIFY_SOCKET"), fmt.Sprintf("READY=1\nMAINPID=%d", os.Getpid())); err != nil {
			log.Printf("[WARNING] systemd notification: %v", err)
		}
		return nil
	})
}

// handOver ends the process after coremain.Run returned: that happens only when caddy stopped
// every server without a shutdown, in a binary upgrade.
func handOver() {
	gslb.Handover()
	log.Printf("[INFO] handed over to the upgraded process")
}

// notifySystemd sends state to the service manager's notification socket (sd_notify(3)), when
// there is one: socket is $NOTIFY_SOCKET, a path or, with a leading @, an abstract name.
// Under a unit of Type=notify with NotifyAccess=all, MAINPID makes the upgraded child the
// service's main process before its parent exits.
func notifySystemd(socket, state string) error {
	if socket == "" {
		return nil
	}
	if strings.HasPrefix(socket, "@") {
		socket = "\x00" + socket[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("dial %s: %w", strings.TrimPrefix(socket, "\x00"), err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("send to %s: %w", strings.TrimPrefix(socket, "\x00"), err)
	}
	return nil
}
