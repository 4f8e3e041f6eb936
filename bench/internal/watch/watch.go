// Package watch holds what the propagation benchmarks (bench/cluster, bench/sites) share: a
// backend listener they open and close, and a poller that queries one Meridian instance every
// millisecond and notes when its answer changes.
package watch

import (
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Toggle is a backend: a TCP listener on a fixed address, opened and closed on demand.
type Toggle struct {
	// Port is the listener's port, the same after every reopening.
	Port int
	host string
	l    net.Listener
}

// NewToggle opens a listener on host at a free port.
func NewToggle(host string) (*Toggle, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("open a backend on %s: %w", host, err)
	}
	go AcceptAndClose(l)
	return &Toggle{Port: l.Addr().(*net.TCPAddr).Port, host: host, l: l}, nil
}

// Set opens (up) or closes the listener.
func (t *Toggle) Set(up bool) error {
	if !up {
		return t.l.Close()
	}
	l, err := net.Listen("tcp", net.JoinHostPort(t.host, strconv.Itoa(t.Port)))
	if err != nil {
		return fmt.Errorf("reopen the backend %s:%d: %w", t.host, t.Port, err)
	}
	t.l = l
	go AcceptAndClose(l)
	return nil
}

// AcceptAndClose accepts connections on l and closes them at once, until l is closed.
func AcceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call.
func FreePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Watcher queries one instance for one name's A record and notes each change of its answer:
// the times it notes are within about a millisecond of the change.
type Watcher struct {
	// Addr is the instance's DNS address (host:port).
	Addr    string
	name    string
	mu      sync.Mutex
	changes []change
}

type change struct {
	at     time.Time
	answer string
}

// NewWatcher returns a watcher of name A at addr; Watch starts it.
func NewWatcher(addr, name string) *Watcher {
	return &Watcher{Addr: addr, name: dns.Fqdn(name)}
}

// query returns the one A address the instance answers, or "" for an error or any other answer.
func (w *Watcher) query(c *dns.Client, m *dns.Msg) string {
	r, _, err := c.Exchange(m, w.Addr)
	if err != nil || len(r.Answer) != 1 {
		return ""
	}
	if a, ok := r.Answer[0].(*dns.A); ok {
		return a.A.String()
	}
	return ""
}

func (w *Watcher) question() *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(w.name, dns.TypeA)
	return m
}

// WaitFor polls until the instance answers want.
func (w *Watcher) WaitFor(want string, timeout time.Duration) error {
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	m := w.question()
	deadline := time.Now().Add(timeout)
	for w.query(c, m) != want {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer %s with %s", w.Addr, w.name, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Watch queries the instance every millisecond, for ever; run it in a goroutine of its own.
// Errors and answers other than one A record are not changes.
func (w *Watcher) Watch() {
	c := &dns.Client{Timeout: time.Second}
	m := w.question()
	last := ""
	for {
		a := w.query(c, m)
		at := time.Now()
		if a != "" && a != last {
			w.mu.Lock()
			w.changes = append(w.changes, change{at, a})
			w.mu.Unlock()
			last = a
		}
		time.Sleep(time.Millisecond) // leave the CPU to the instances
	}
}

// ChangedTo waits until the instance answered want after mark, and returns when it did.
func (w *Watcher) ChangedTo(want string, mark time.Time, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		for _, c := range slices.Backward(w.changes) {
			if c.at.Before(mark) {
				break
			}
			if c.answer == want {
				w.mu.Unlock()
				return c.at, nil
			}
		}
		w.mu.Unlock()
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s did not answer %s within %s", w.Addr, want, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// Percentile returns the p-quantile (0 to 1) of sorted, the nearest rank below.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// Ms formats d in milliseconds with two decimals.
func Ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}
