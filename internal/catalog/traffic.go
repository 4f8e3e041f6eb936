package catalog

import "sync/atomic"

// The traffic each backend brings in, as the answers say (traffic_shares): each answer that
// carries a backend adds its TTL to the backend's count, an estimate of the traffic the answer
// sends it (a resolver holds it that long), and for the answers whose client's country is known
// (the geo modes look it up) to the count of that country. Queries write them beside the
// answer counts (CountSelected), allocated with them.

// countrySlots is the number of two-letter country codes: A-Z × A-Z.
const countrySlots = 26 * 26

// countryIndex returns the slot of an ISO 3166 alpha-2 code, false for anything else.
func countryIndex(code string) (int, bool) {
	if len(code) != 2 || code[0] < 'A' || code[0] > 'Z' || code[1] < 'A' || code[1] > 'Z' {
		return 0, false
	}
	return int(code[0]-'A')*26 + int(code[1]-'A'), true
}

// countryCode returns the code of slot i.
func countryCode(i int) string { return string([]byte{byte('A' + i/26), byte('A' + i%26)}) }

// countTraffic adds ttl to b's traffic, and to its country's when known. A ttl of 0 adds
// nothing: the answer carries no traffic, or it is not weighed (traffic_shares off).
func (c *queryCounts) countTraffic(r *Record, b *Backend, ttl uint32, country string) {
	if ttl == 0 {
		return
	}
	c.ttl[b.index].Add(uint64(ttl))
	i, ok := countryIndex(country)
	if !ok {
		return
	}
	t := c.countries.Load()
	if t == nil {
		fresh := make([]atomic.Uint64, countrySlots*len(r.Backends))
		if !c.countries.CompareAndSwap(nil, &fresh) {
			t = c.countries.Load()
		} else {
			t = &fresh
		}
	}
	(*t)[i*len(r.Backends)+int(b.index)].Add(uint64(ttl))
}

// Traffic returns b's traffic: the TTLs of the answers that carried it, summed, in seconds.
func (r *Record) Traffic(b *Backend) uint64 {
	if c := r.counts.Load(); c != nil && int(b.index) < len(c.ttl) && r.Backends[b.index] == b {
		return c.ttl[b.index].Load()
	}
	return 0
}

// TrafficByCountry calls fn with the traffic of each backend and client country that has some.
func (r *Record) TrafficByCountry(fn func(country string, b *Backend, seconds uint64)) {
	c := r.counts.Load()
	if c == nil {
		return
	}
	t := c.countries.Load()
	if t == nil {
		return
	}
	n := len(r.Backends)
	for i := range countrySlots {
		for j, b := range r.Backends {
			if v := (*t)[i*n+j].Load(); v > 0 {
				fn(countryCode(i), b, v)
			}
		}
	}
}
