package testutil

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// faultProxyUpstreamTimeout bounds the wait for the upstream server's answer to one message.
const faultProxyUpstreamTimeout = 5 * time.Second

// FaultProxy relays DNS messages over UDP and TCP between clients and an upstream server, and
// makes a share of the UPDATE messages (opcode 5) that pass through it fail, as a DNS
// provider's rate limiting would: refused (the proxy answers REFUSED itself, and the upstream
// never sees the update) or dropped (no answer at all, the client times out). The shares are
// the test's to choose and may change while the proxy runs. Every other message (queries,
// opcode 0) passes untouched.
//
// It is a fake for a fault that cannot be made to happen for real here: neither BIND nor Knot
// limits the rate of updates. The REFUSED it gives to a TSIG-signed UPDATE is unsigned (the
// proxy has no key), as a provider's front end that refuses before checking signatures would
// answer; a client verifying the reply's signature sees a reply without TSIG.
type FaultProxy struct {
	// Addr is the proxy's address on 127.0.0.1, host:port, for UDP and TCP.
	Addr     string
	upstream string
	udp      net.PacketConn
	tcp      net.Listener

	mu                       sync.Mutex
	refuse, drop             float64
	passed, refused, dropped int
	conns                    map[net.Conn]struct{} // TCP connections open, closed at the end

	wg sync.WaitGroup
}

// updateFate is what the proxy does with one message.
type updateFate int

const (
	fatePass updateFate = iota
	fateRefuse
	fateDrop
)

// StartFaultProxy relays to upstream (host:port) from a free 127.0.0.1 port, on UDP and TCP,
// letting every message pass until SetUpdateFaults says otherwise. It stops when the test ends.
func StartFaultProxy(t testing.TB, upstream string) *FaultProxy {
	t.Helper()
	p := &FaultProxy{upstream: upstream, conns: map[net.Conn]struct{}{}}
	var err error
	for range 3 {
		p.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
		if p.udp, err = net.ListenPacket("udp", p.Addr); err != nil {
			continue
		}
		if p.tcp, err = net.Listen("tcp", p.Addr); err != nil {
			p.udp.Close()
			continue
		}
		break
	}
	if err != nil {
		t.Fatalf("fault proxy: listen: %v", err)
	}
	p.wg.Add(2)
	go p.serveUDP()
	go p.serveTCP()
	t.Cleanup(p.close)
	return p
}

// SetUpdateFaults sets the shares (0 to 1) of UPDATE messages from now on that are refused
// and that are dropped; the rest pass.
func (p *FaultProxy) SetUpdateFaults(refuse, drop float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse, p.drop = refuse, drop
}

// Counts returns how many UPDATE messages the proxy passed upstream, refused and dropped.
func (p *FaultProxy) Counts() (passed, refused, dropped int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.passed, p.refused, p.dropped
}

// fate decides, and counts, what becomes of the message msg.
func (p *FaultProxy) fate(msg []byte) updateFate {
	// The opcode is bits 1-4 of the third byte of the header.
	if len(msg) < 12 || int(msg[2]>>3&0xF) != dns.OpcodeUpdate {
		return fatePass
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch r := rand.Float64(); {
	case r < p.refuse:
		p.refused++
		return fateRefuse
	case r < p.refuse+p.drop:
		p.dropped++
		return fateDrop
	default:
		p.passed++
		return fatePass
	}
}

// refusal is the proxy's own REFUSED answer to the UPDATE msg, unsigned.
func refusal(msg []byte) ([]byte, error) {
	req := new(dns.Msg)
	if err := req.Unpack(msg); err != nil {
		return nil, err
	}
	return new(dns.Msg).SetRcode(req, dns.RcodeRefused).Pack()
}

// relay returns the answer to msg: the upstream's (over network, through upstream), the
// proxy's REFUSED, or nil when the message is dropped. An error is the upstream's failure to
// answer, after which upstream is of no further use.
func (p *FaultProxy) relay(network string, upstream net.Conn, msg []byte) ([]byte, error) {
	switch p.fate(msg) {
	case fateRefuse:
		return refusal(msg)
	case fateDrop:
		return nil, nil
	}
	if err := upstream.SetDeadline(time.Now().Add(faultProxyUpstreamTimeout)); err != nil {
		return nil, err
	}
	if network == "udp" {
		if _, err := upstream.Write(msg); err != nil {
			return nil, err
		}
		buf := make([]byte, dns.MaxMsgSize)
		n, err := upstream.Read(buf)
		return buf[:n], err
	}
	if err := writeTCPMsg(upstream, msg); err != nil {
		return nil, err
	}
	return readTCPMsg(upstream)
}

// serveUDP relays each datagram on a goroutine of its own, through a socket of its own to the
// upstream.
func (p *FaultProxy) serveUDP() {
	defer p.wg.Done()
	for {
		buf := make([]byte, dns.MaxMsgSize)
		n, from, err := p.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			up, err := net.Dial("udp", p.upstream)
			if err != nil {
				return
			}
			defer up.Close()
			if reply, err := p.relay("udp", up, buf[:n]); err == nil && reply != nil {
				_, _ = p.udp.WriteTo(reply, from)
			}
		}()
	}
}

// serveTCP relays each client connection over a TCP connection of its own to the upstream, a
// message at a time.
func (p *FaultProxy) serveTCP() {
	defer p.wg.Done()
	for {
		c, err := p.tcp.Accept()
		if err != nil {
			return
		}
		if !p.track(c, true) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			up, err := net.Dial("tcp", p.upstream)
			if err != nil {
				return
			}
			defer up.Close()
			for {
				msg, err := readTCPMsg(c)
				if err != nil {
					return
				}
				reply, err := p.relay("tcp", up, msg)
				if err != nil {
					return
				}
				if reply != nil && writeTCPMsg(c, reply) != nil {
					return
				}
			}
		}()
	}
}

// track adds the connection c to those open (or, with open false, closes and removes it). It
// reports false when the proxy is closing, which takes no new connections.
func (p *FaultProxy) track(c net.Conn, open bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !open {
		c.Close()
		delete(p.conns, c)
		return true
	}
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// close stops the listeners, closes the open connections and waits for every relay to end.
func (p *FaultProxy) close() {
	p.udp.Close()
	p.tcp.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// readTCPMsg reads one DNS message, with its two-byte length prefix, from c.
func readTCPMsg(c net.Conn) ([]byte, error) {
	var size [2]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	msg := make([]byte, binary.BigEndian.Uint16(size[:]))
	if _, err := io.ReadFull(c, msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// writeTCPMsg writes the DNS message msg, with its two-byte length prefix, to c.
func writeTCPMsg(c net.Conn, msg []byte) error {
	if len(msg) > dns.MaxMsgSize {
		return errors.New("DNS message too long for TCP")
	}
	_, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(msg))), msg...))
	return err
}
