// Command flood sends one DNS query at a fixed rate from one source address, open loop (it
// never waits for an answer, as a flood does not), and counts what comes back: full answers,
// truncated ones (rate limiting's slips), others. bench/rrl.sh runs it as the flooding source.
// It prints "key: value" lines: sent, answered, truncated, other, and the rate achieved.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
)

// batch is how many packets one sendmmsg sends.
const batch = 64

func main() {
	server := flag.String("server", "", "server address, host:port")
	from := flag.String("from", "127.0.0.1", "source address")
	name := flag.String("name", "www.bench.test.", "query name")
	rate := flag.Int("rate", 200000, "queries a second")
	duration := flag.Duration("duration", 10*time.Second, "how long to send")
	flag.Parse()
	if *server == "" {
		log.Fatal("flood: -server is required")
	}
	dst, err := net.ResolveUDPAddr("udp", *server)
	if err != nil {
		log.Fatalf("flood: %v", err)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(*from)})
	if err != nil {
		log.Fatalf("flood: %v", err)
	}
	_ = conn.SetReadBuffer(8 << 20)
	_ = conn.SetWriteBuffer(8 << 20)
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(*name), dns.TypeA)
	q.SetEdns0(1232, false)
	wire, err := q.Pack()
	if err != nil {
		log.Fatalf("flood: %v", err)
	}

	var answered, truncated, other atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			var m dns.Msg
			switch {
			case m.Unpack(buf[:n]) != nil:
				other.Add(1)
			case m.Truncated:
				truncated.Add(1)
			case len(m.Answer) > 0:
				answered.Add(1)
			default:
				other.Add(1)
			}
		}
	}()

	pc := ipv4.NewPacketConn(conn)
	msgs := make([]ipv4.Message, batch)
	pkts := make([][]byte, batch)
	for i := range msgs {
		pkts[i] = append([]byte(nil), wire...)
		msgs[i] = ipv4.Message{Buffers: [][]byte{pkts[i]}, Addr: dst}
	}
	start := time.Now()
	sent, id := 0, uint16(0)
	for time.Since(start) < *duration {
		// Send what the rate owes by now, a batch at a time; then wait for the next batch.
		due := int(time.Since(start).Seconds() * float64(*rate))
		if sent+batch > due {
			time.Sleep(time.Duration(float64(sent+batch-due) / float64(*rate) * float64(time.Second)))
			continue
		}
		for i := range msgs {
			id++
			pkts[i][0], pkts[i][1] = byte(id>>8), byte(id)
		}
		n, err := pc.WriteBatch(msgs, 0)
		if err != nil {
			log.Fatalf("flood: %v", err)
		}
		sent += n
	}
	elapsed := time.Since(start)
	time.Sleep(time.Second) // the last answers
	conn.Close()
	<-done
	fmt.Fprintf(os.Stdout, "sent: %d\nanswered: %d\ntruncated: %d\nother: %d\nrate: %.0f\n",
		sent, answered.Load(), truncated.Load(), other.Load(), float64(sent)/elapsed.Seconds())
}
