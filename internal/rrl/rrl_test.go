package rrl

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// run sends n responses of q spread evenly over one second from start and returns the
// decisions.
func run(l *Limiter, q Query, start time.Time, n int) (allowed, slipped, dropped int) {
	for i := range n {
		switch l.Check(q, start.Add(time.Duration(i)*time.Second/time.Duration(n))) {
		case Allow:
			allowed++
		case Slip:
			slipped++
		case Drop:
			dropped++
		}
	}
	return
}

func cfg(rate int) Config {
	c := DefaultConfig()
	for k := range c.Rates {
		c.Rates[k] = rate
	}
	c.TableSize = 1 << 12
	return c
}

func TestFloodIsHeldToTheRate(t *testing.T) {
	l := New(cfg(10), nil)
	flood := Query{Client: netip.MustParseAddr("192.0.2.7"), Kind: Positive, Name: "www.example.org.", Qtype: 1}
	t0 := l.epoch
	// The first second: the account's credit, 10 responses, then the rest limited; about half
	// of those slip (slip 2).
	a, s, d := run(l, flood, t0, 1000)
	if a != 10 || s+d != 990 || s < 400 || s > 590 {
		t.Errorf("first second: %d allowed, %d slipped, %d dropped", a, s, d)
	}
	// While it goes on, the debt is never paid: nothing more is allowed.
	for sec := 1; sec < 20; sec++ {
		if a, _, _ := run(l, flood, t0.Add(time.Duration(sec)*time.Second), 200); a != 0 {
			t.Fatalf("second %d of the flood: %d allowed", sec, a)
		}
	}
	// Other clients, other names, other kinds are answered in full meanwhile.
	for _, q := range []Query{
		{Client: netip.MustParseAddr("192.0.3.7"), Kind: Positive, Name: "www.example.org.", Qtype: 1},
		{Client: flood.Client, Kind: Positive, Name: "api.example.org.", Qtype: 1},
		{Client: flood.Client, Kind: Positive, Name: "www.example.org.", Qtype: 28},
		{Client: flood.Client, Kind: NXDomain, Name: "www.example.org."},
	} {
		if a, _, _ := run(l, q, t0.Add(20*time.Second), 10); a != 10 {
			t.Errorf("%+v: %d of 10 allowed during the flood", q, a)
		}
	}
	// The network shares the account: another address of the /24 is limited too.
	same := flood
	same.Client = netip.MustParseAddr("192.0.2.200")
	if a, _, _ := run(l, same, t0.Add(20*time.Second), 10); a != 0 {
		t.Errorf("another address of the flooding /24: %d allowed", a)
	}
	// Once the flood stops for the window, the account is whole again.
	if a, _, _ := run(l, flood, t0.Add(20*time.Second+DefaultConfig().Window+time.Second), 10); a != 10 {
		t.Errorf("after the window: %d of 10 allowed", a)
	}
}

func TestUnderTheRateNothingIsLimited(t *testing.T) {
	l := New(cfg(10), nil)
	q := Query{Client: netip.MustParseAddr("2001:db8:1:2::53"), Kind: Positive, Name: "www.example.org.", Qtype: 28}
	for sec := range 60 {
		if a, _, _ := run(l, q, l.epoch.Add(time.Duration(sec)*time.Second), 10); a != 10 {
			t.Fatalf("second %d: %d of 10 allowed", sec, a)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b Query
		same bool
	}{
		{"IPv6 /56 shares", Query{Client: netip.MustParseAddr("2001:db8:0:100::1"), Kind: Positive, Name: "a."},
			Query{Client: netip.MustParseAddr("2001:db8:0:1ff::2"), Kind: Positive, Name: "a."}, true},
		{"another /56", Query{Client: netip.MustParseAddr("2001:db8:0:100::1"), Kind: Positive, Name: "a."},
			Query{Client: netip.MustParseAddr("2001:db8:0:200::1"), Kind: Positive, Name: "a."}, false},
		{"IPv4-mapped is IPv4", Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: Positive, Name: "a."},
			Query{Client: netip.MustParseAddr("::ffff:192.0.2.99"), Kind: Positive, Name: "a."}, true},
		{"errors by network alone", Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: Error, Name: "a.", Qtype: 1},
			Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: Error, Name: "b.", Qtype: 28}, true},
		{"NXDOMAIN by name, not type", Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: NXDomain, Name: "zone.", Qtype: 1},
			Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: NXDomain, Name: "zone.", Qtype: 28}, true},
		{"kinds apart", Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: NoData, Name: "zone."},
			Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: NXDomain, Name: "zone."}, false},
	} {
		l := New(cfg(5), nil)
		run(l, c.a, l.epoch, 5)
		a, _, _ := run(l, c.b, l.epoch, 1)
		if shared := a == 0; shared != c.same {
			t.Errorf("%s: shared %t, want %t", c.name, shared, c.same)
		}
	}
}

func TestExemptLogOnlyAndUnlimitedKinds(t *testing.T) {
	c := cfg(2)
	c.Exempt = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:5::/48"), netip.MustParsePrefix("::ffff:203.0.113.0/120")}
	c.Rates[Referral] = 0
	l := New(c, nil)
	for _, q := range []Query{
		{Client: netip.MustParseAddr("198.51.100.9"), Kind: Positive, Name: "a."},
		{Client: netip.MustParseAddr("2001:db8:5:ffff::1"), Kind: Positive, Name: "a."},
		{Client: netip.MustParseAddr("203.0.113.5"), Kind: Positive, Name: "a."},
		{Client: netip.MustParseAddr("192.0.2.1"), Kind: Referral, Name: "sub.example."},
	} {
		if a, _, _ := run(l, q, l.epoch, 100); a != 100 {
			t.Errorf("%+v: %d of 100 allowed", q, a)
		}
	}
	if a, _, _ := run(l, Query{Client: netip.MustParseAddr("2001:db8:6::1"), Kind: Positive, Name: "a."}, l.epoch, 100); a != 2 {
		t.Errorf("outside the exempt networks: %d allowed", a)
	}

	var events []Event
	c.LogOnly = true
	l = New(c, func(e Event) { events = append(events, e) })
	q := Query{Client: netip.MustParseAddr("2001:db8:6::1"), Kind: Positive, Name: "www.example.org.", Qtype: 28}
	if a, _, _ := run(l, q, l.epoch, 100); a != 100 {
		t.Errorf("log only: %d of 100 sent", a)
	}
	want := Event{Network: netip.MustParsePrefix("2001:db8:6::/56"), Kind: Positive, Name: "www.example.org.", Qtype: 28, Rate: 2, LogOnly: true}
	if len(events) != 1 || events[0] != want {
		t.Errorf("events %+v, want one %+v", events, want)
	}
}

func TestLogsAreBounded(t *testing.T) {
	n := 0
	l := New(cfg(1), func(Event) { n++ })
	for i := range 1000 {
		q := Query{Client: netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}), Kind: Error}
		run(l, q, l.epoch, 2)
	}
	if n != maxLogs {
		t.Errorf("%d events logged in a second, want %d", n, maxLogs)
	}
}

// TestConcurrentFlood floods one account from many goroutines at once: the compare-and-swap
// loses no debit, so no more than the rate is allowed.
func TestConcurrentFlood(t *testing.T) {
	l := New(cfg(50), nil)
	q := Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: Positive, Name: "www.example.org.", Qtype: 1}
	now := l.epoch.Add(time.Second / 2)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				if l.Check(q, now) == Allow {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	// A debit that lost its compare-and-swap more than retries times is allowed: rare.
	if n := allowed.Load(); n < 50 || n > 60 {
		t.Errorf("%d allowed from a flood of 16000, want 50", n)
	}
}

// TestTableFullEvictsTheIdlest fills a small table with more accounts than it has: the flood
// that keeps its account busy keeps it, idle accounts make way.
func TestTableFullEvictsTheIdlest(t *testing.T) {
	c := cfg(5)
	c.TableSize = 64
	l := New(c, nil)
	flood := Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: Positive, Name: "victim.example.org.", Qtype: 255}
	run(l, flood, l.epoch, 100)
	for sec := 1; sec <= 10; sec++ {
		at := l.epoch.Add(time.Duration(sec) * time.Second)
		for i := range 200 { // once each: new accounts, idle the next second
			l.Check(Query{Client: netip.AddrFrom4([4]byte{10, 0, byte(i), 1}), Kind: Positive, Name: fmt.Sprint(sec, ".x.")}, at)
		}
		if a, _, _ := run(l, flood, at.Add(time.Millisecond), 50); a != 0 {
			t.Fatalf("second %d: the flood's account was evicted: %d allowed", sec, a)
		}
	}
	if l.Slots() != 64 {
		t.Errorf("%d slots", l.Slots())
	}
}

func TestNoAllocation(t *testing.T) {
	l := New(cfg(1000000), nil)
	q := Query{Client: netip.MustParseAddr("2001:db8::1"), Kind: Positive, Name: "www.example.org.", Qtype: 28}
	now := time.Now()
	if n := testing.AllocsPerRun(1000, func() { l.Check(q, now) }); n != 0 {
		t.Errorf("%v allocations a check", n)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, c := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Window = 0 }, "shorter than a second"},
		{func(c *Config) { c.Rates[NXDomain] = 100000 }, "nxdomain rate 100000"},
		{func(c *Config) { c.Slip = 11 }, "slip 11"},
		{func(c *Config) { c.IPv4Prefix = 33 }, "/33"},
		{func(c *Config) { c.IPv6Prefix = 65 }, "/65"},
		{func(c *Config) { c.TableSize = -1 }, "table size"},
	} {
		cf := DefaultConfig()
		c.change(&cf)
		if err := cf.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	if err := DefaultConfig().Check(); err != nil {
		t.Error(err)
	}
	if l := New(Config{RRLAccounts: config.RRLAccounts{TableSize: 1000, Window: time.Second}}, nil); l.Slots() != 1024 {
		t.Errorf("1000 slots rounded to %d", l.Slots())
	}
}

func BenchmarkCheck(b *testing.B) {
	l := New(cfg(1<<19/15), nil)
	q := Query{Client: netip.MustParseAddr("192.0.2.1"), Kind: Positive, Name: "www.example.org.", Qtype: 1}
	now := time.Now()
	for b.Loop() {
		l.Check(q, now)
	}
}

// BenchmarkCheckParallel is many clients under their limits, on every processor.
func BenchmarkCheckParallel(b *testing.B) {
	l := New(cfg(1<<19/15), nil)
	var id atomic.Uint32
	b.RunParallel(func(pb *testing.PB) {
		n := id.Add(1)
		q := Query{Client: netip.AddrFrom4([4]byte{10, byte(n), 0, 1}), Kind: Positive, Name: "www.example.org.", Qtype: 1}
		now := time.Now()
		for pb.Next() {
			l.Check(q, now)
		}
	})
}
