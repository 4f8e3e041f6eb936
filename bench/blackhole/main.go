// Command blackhole is the worst-case health-check target of Meridian's health benchmark: it
// listens on loopback ports, accepts every connection and never answers, so every probe runs
// to its timeout. It prints the ports it listens on, one per line, then serves until killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
)

func main() {
	addr := flag.String("addr", "127.0.0.1", "loopback address to listen on")
	n := flag.Int("ports", 100, "number of ports to listen on")
	flag.Parse()
	ip := net.ParseIP(*addr)
	if ip == nil || !ip.IsLoopback() {
		log.Fatalf("blackhole: %q is not a loopback address", *addr)
	}
	// Plain TCP, as the servers a GSLB checks listen: Go's listeners use MPTCP by default
	// where the kernel has it, and on loopback the MPTCP listener's work for every accepted
	// plain connection runs in the prober's system calls.
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	for range *n {
		l, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(*addr, "0"))
		if err != nil {
			log.Fatalf("blackhole: %v", err)
		}
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
		go serve(l)
	}
	os.Stdout.Sync()
	select {}
}

// serve accepts connections and reads them to the end without ever writing.
func serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			log.Printf("blackhole: %v", err)
			continue
		}
		go func() {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}()
	}
}
