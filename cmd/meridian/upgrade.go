package main

import (
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/plugin/gslb"
)

// A binary upgrade without a lost query (docs/operations.md, "Upgrading without a lost
// query"): SIGUSR2 makes caddy, under CoreDNS, start the binary anew as a child that inherits
// the DNS sockets and serves them beside this process; once the child reports that it serves,
// this process stops its servers, hands over what the gslb blocks own (gslb.Handover) and
// exits. The child tells systemd that it is the service's main process now.

// prepareUpgrades takes SIGUSR2 over from caddy once CoreDNS has started (caddy's signal
// handler, installed by coremain.Run, would start the child at once): on the signal, the state
// files are written first, so that the child, which reads them as it starts, starts every
// backend at the health this process knows, and then caddy's Upgrade starts the child. It
// also announces each start to systemd.
func prepareUpgrades() {
	var takeOver sync.Once
	caddy.RegisterEventHook("meridian-upgrades", func(event caddy.EventName, _ any) error {
		if event != caddy.InstanceStartupEvent {
			return nil
		}
		takeOver.Do(func() {
			signal.Reset(syscall.SIGUSR2) // caddy's channel no longer gets it
			usr2 := make(chan os.Signal, 1)
			signal.Notify(usr2, syscall.SIGUSR2)
			go func() {
				for range usr2 {
					upgrade()
				}
			}()
		})
		if err := notifySystemd(os.Getenv("NOTIFY_SOCKET"), fmt.Sprintf("READY=1\nMAINPID=%d", os.Getpid())); err != nil {
			log.Printf("[WARNING] systemd notification: %v", err)
		}
		return nil
	})
}

// upgrade replaces this process by a new one of the binary at its path, which serves the same
// sockets (caddy.Upgrade), after writing the state files. On success caddy stops this
// process's servers and coremain.Run returns (see handOver); on failure this process goes on.
func upgrade() {
	log.Printf("[INFO] SIGUSR2: upgrading")
	engine.Default.WriteStateFiles()
	if err := caddy.Upgrade(); err != nil {
		log.Printf("[ERROR] SIGUSR2: upgrading: %v", err)
	}
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
