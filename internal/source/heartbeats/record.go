package heartbeats

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// NamePrefix starts the first label of a site's heartbeat name in a heartbeat zone:
// health-001-<site>.<zone>.
const NamePrefix = "health-001-"

// timeLayout is how a heartbeat's time is written: UTC, to the millisecond, readable in dig.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// maxString is the longest character-string of a TXT record (RFC 1035).
const maxString = 255

// Record is what one site's heartbeat says: its site and region, when it was written (or, when
// the site heals its heartbeat, the time it vouches for: up to self_heal_interval ahead), its
// healthy addresses out of how many it serves, and, with a delegation, its name server and
// glue. As TXT strings: "v=1" "site=eu-1" "region=europe" "time=2026-12-01T11:02:03.123Z"
// "healthy=2/3" "up=192.0.2.10,2001:db8::10" ["ns=ns-eu-1.gslb.example.com." "glue=192.0.2.53"];
// a list longer than one string continues in further "up=" (or "glue=") strings.
type Record struct {
	Site, Region string
	Time         time.Time
	// Up are the site's healthy addresses, sorted; Total how many addresses it serves.
	Up    []netip.Addr
	Total int
	// NS and Glue are the site's name server for the delegation, "" and nil without one.
	NS   string
	Glue []netip.Addr
}

// Name returns the heartbeat name of site in zone.
func Name(site, zone string) string { return NamePrefix + site + "." + zone }

// TXT returns the record's TXT strings.
func (r Record) TXT() []string {
	out := []string{"v=1", "site=" + r.Site, "region=" + r.Region, "time=" + r.Time.UTC().Format(timeLayout),
		fmt.Sprintf("healthy=%d/%d", len(r.Up), r.Total)}
	out = appendList(out, "up=", r.Up)
	if r.NS != "" {
		out = append(out, "ns="+r.NS)
		out = appendList(out, "glue=", r.Glue)
	}
	return out
}

// appendList appends addrs as key-prefixed, comma-separated strings of at most maxString
// bytes; one empty string for none.
func appendList(out []string, key string, addrs []netip.Addr) []string {
	s := key
	for _, a := range addrs {
		text := a.String()
		if len(s)+len(text)+1 > maxString {
			out = append(out, strings.TrimSuffix(s, ","))
			s = key
		}
		s += text + ","
	}
	return append(out, strings.TrimSuffix(s, ","))
}

// ParseRecord reads a heartbeat from the strings of one TXT record. Unknown keys are ignored
// (a later version may add some).
func ParseRecord(txt []string) (Record, error) {
	var r Record
	var healthy int
	seen := map[string]bool{}
	for _, s := range txt {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			continue
		}
		var err error
		switch k {
		case "up":
			r.Up, err = appendAddrs(r.Up, v)
		case "glue":
			r.Glue, err = appendAddrs(r.Glue, v)
		case "v", "site", "region", "time", "healthy", "ns":
			if seen[k] {
				return r, fmt.Errorf("heartbeat: %s appears twice", k)
			}
			seen[k] = true
			err = r.set(k, v, &healthy)
		}
		if err != nil {
			return r, fmt.Errorf("heartbeat: %s=%q: %w", k, v, err)
		}
	}
	for _, k := range []string{"v", "site", "region", "time", "healthy"} {
		if !seen[k] {
			return r, fmt.Errorf("heartbeat: no %s", k)
		}
	}
	slices.SortFunc(r.Up, netip.Addr.Compare)
	r.Up = slices.Compact(r.Up)
	if len(r.Up) != healthy {
		return r, fmt.Errorf("heartbeat: healthy=%d/%d, but %d addresses are up", healthy, r.Total, len(r.Up))
	}
	return r, nil
}

// set reads the single-valued key k.
func (r *Record) set(k, v string, healthy *int) error {
	var err error
	switch k {
	case "v":
		if v != "1" {
			err = fmt.Errorf("version %s is not 1", v)
		}
	case "site":
		r.Site = v
	case "region":
		r.Region = v
	case "ns":
		r.NS = v
	case "time":
		r.Time, err = time.Parse(timeLayout, v)
	case "healthy":
		up, total, ok := strings.Cut(v, "/")
		if *healthy, err = strconv.Atoi(up); err == nil && ok {
			r.Total, err = strconv.Atoi(total)
		}
		if err == nil && (!ok || *healthy < 0 || r.Total < *healthy) {
			err = fmt.Errorf("not UP/TOTAL")
		}
	}
	return err
}

// appendAddrs appends the comma-separated addresses of v to addrs.
func appendAddrs(addrs []netip.Addr, v string) ([]netip.Addr, error) {
	if v == "" {
		return addrs, nil
	}
	for _, s := range strings.Split(v, ",") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return addrs, fmt.Errorf("%q is not an IP address", s)
		}
		addrs = append(addrs, a.Unmap())
	}
	return addrs, nil
}

// Summary returns what a heartbeat of snap's site says of it: the healthy addresses of its
// backends of this site (those of no site or of this one) with an address, and how many such
// addresses there are. A nil snapshot has none.
func Summary(snap *catalog.Snapshot) (up []netip.Addr, total int) {
	if snap == nil {
		return nil, 0
	}
	all := map[netip.Addr]bool{}
	for _, r := range snap.Records() {
		for _, b := range r.Backends {
			if b.Config.Remote || !b.Config.IP.IsValid() {
				continue
			}
			all[b.Config.IP] = all[b.Config.IP] || b.Healthy()
		}
	}
	for a, ok := range all {
		if ok {
			up = append(up, a)
		}
	}
	slices.SortFunc(up, netip.Addr.Compare)
	return up, len(all)
}
