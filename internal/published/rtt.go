package published

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// maxPublishedRTT bounds the RTTs that ParseRTT accepts: a probe's timeout is far shorter.
const maxPublishedRTT = time.Minute

// FormatRTT returns the string of a localrtt TXT record for one backend: its address, "=", and
// its RTT in milliseconds to the microsecond ("192.0.2.10=12.345ms").
func FormatRTT(addr netip.Addr, rtt time.Duration) string {
	return addr.String() + "=" + strconv.FormatFloat(float64(rtt.Microseconds())/1000, 'f', -1, 64) + "ms"
}

// ParseRTT parses a string that FormatRTT wrote: an IP address (without a zone), "=", and a
// positive duration of at most a minute.
func ParseRTT(s string) (netip.Addr, time.Duration, error) {
	a, d, ok := strings.Cut(s, "=")
	if !ok {
		return netip.Addr{}, 0, fmt.Errorf("%q is not ADDRESS=RTT", s)
	}
	addr, err := netip.ParseAddr(a)
	if err != nil || addr.Zone() != "" {
		return netip.Addr{}, 0, fmt.Errorf("%q: %q is not an IP address", s, a)
	}
	rtt, err := time.ParseDuration(d)
	if err != nil || rtt < time.Microsecond || rtt > maxPublishedRTT {
		return netip.Addr{}, 0, fmt.Errorf("%q: %q is not a duration from 1µs to %v", s, d, maxPublishedRTT)
	}
	return addr.Unmap(), rtt, nil
}

// ParseRTTs parses the strings of a localrtt answer's TXT records into RTTs by address: the
// first of an address that appears twice counts. Bad strings are skipped and reported.
func ParseRTTs(strs []string) (map[netip.Addr]time.Duration, error) {
	out := make(map[netip.Addr]time.Duration, len(strs))
	var errs []error
	for _, s := range strs {
		addr, rtt, err := ParseRTT(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, seen := out[addr]; !seen {
			out[addr] = rtt
		}
	}
	return out, errors.Join(errs...)
}
