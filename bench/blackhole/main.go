// Command blackhole is a TCP health-check target for Meridian's benchmarks. By default it is the
// worst case, for the health benchmark: it listens on loopback ports, accepts every connection
// and never answers, so every probe runs to its timeout. With -close it is the cheapest up
// target, for the fast path benchmark: it closes every connection it accepts at once, on one
// thread, where a forking listener (socat's fork) would start a process for every check. It
// prints the ports it listens on, one per line, then serves until killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1", "loopback address to listen on")
	n := flag.Int("ports", 100, "number of ports to listen on")
	port := flag.Int("port", 0, "the port to listen on (with -ports 1); 0 picks free ones")
	closeAtOnce := flag.Bool("close", false, "close every accepted connection at once (an up target)")
	flag.Parse()
	if *port != 0 && *n != 1 {
		log.Fatalf("blackhole: -port %d needs -ports 1", *port)
	}
	ip := net.ParseIP(*addr)
	if ip == nil || !ip.IsLoopback() {
		log.Fatalf("blackhole: %q is not a loopback address", *addr)
	}
	handle := hold
	if *closeAtOnce {
		handle = func(c net.Conn) { c.Close() } // the probe sees the port up
	}
	// Plain TCP, as the servers a GSLB checks listen: Go's listeners use MPTCP by default
	// where the kernel has it, and on loopback the MPTCP listener's work for every accepted
	// plain connection runs in the prober's system calls.
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	for range *n {
		l, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(*addr, strconv.Itoa(*port)))
		if err != nil {
			log.Fatalf("blackhole: %v", err)
		}
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
		go serve(l, handle)
	}
	os.Stdout.Sync()
	select {}
}

// serve accepts connections and hands each to handle.
func serve(l net.Listener, handle func(net.Conn)) {
	var wait time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			// Out of descriptors (a checker that opens more connections at once than the
			// limit allows, as gdnsd's first round of checks does): wait for some to close
			// rather than spin, as net/http's server does.
			wait = min(max(2*wait, 5*time.Millisecond), time.Second)
			log.Printf("blackhole: %v; retrying in %v", err, wait)
			time.Sleep(wait)
			continue
		}
		wait = 0
		handle(c)
	}
}

// hold reads a connection to the end, on a goroutine of its own, without ever writing.
func hold(c net.Conn) {
	go func() {
		_, _ = io.Copy(io.Discard, c)
		c.Close()
	}()
}
