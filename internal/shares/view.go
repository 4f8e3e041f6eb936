package shares

import (
	"cmp"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// Record is where one record's traffic went.
type Record struct {
	Name, Mode string
	// Start is the start of the first bucket of the series, Bucket long each.
	Start    time.Time
	Backends []Share
	// Countries are the traffic by client country of a geo record, since the start (the
	// records whose selection looks the client up); empty for the others.
	Countries []Country
}

// Share is one backend's share of its record's traffic of its address family.
type Share struct {
	Key, Backend, Family string
	// Configured is the share its weight gives it among the record's enabled backends of its
	// family (weight 1 each by default); what the mode does with it (priorities, locations)
	// is what Actual shows.
	Configured float64
	// Actual is its share over the last five minutes, -1 when the family had no traffic.
	Actual float64
	// Series is its share in each bucket of the last hour, oldest first, -1 where the family
	// had none.
	Series []float64
	// Seconds is its traffic since the start: the TTLs of the answers that carried it.
	Seconds uint64
}

// Country is the traffic of a geo record's clients of one country.
type Country struct {
	Country string
	// Seconds is the country's traffic; Backends each backend's part of it, by key.
	Seconds  uint64
	Backends map[string]uint64
}

// Shares returns where the traffic of each record with some went over the hour that ends at
// now, sorted by record.
func (k *Keeper) Shares(now time.Time) []Record {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.served == nil || k.served() == nil {
		return nil
	}
	last := slotOf(now)
	var out []Record
	for _, r := range k.served().Records() {
		h := k.records[r.Name()]
		if h == nil {
			continue
		}
		rec := Record{Name: r.Name(), Mode: string(r.Config.Mode), Start: time.Unix((last-Buckets+1)*int64(Bucket/time.Second), 0).UTC()}
		configured := configuredShares(r)
		for i, b := range r.Backends {
			f := family(b)
			s := Share{Key: b.Key(), Backend: backendName(b), Family: familyName(f), Configured: configured[i],
				Series: make([]float64, Buckets), Seconds: r.Traffic(b)}
			var mine, all uint64
			for j := range Buckets {
				slot := last - Buckets + 1 + int64(j)
				own, sum := h.traffic(slot, r, b, f)
				s.Series[j] = ratio(own, sum)
				if slot > last-recent {
					mine, all = mine+own, all+sum
				}
			}
			s.Actual = ratio(mine, all)
			rec.Backends = append(rec.Backends, s)
		}
		rec.Countries = countries(r)
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// traffic returns, for the bucket of slot, b's traffic and that of its record's backends of
// family f.
func (h *history) traffic(slot int64, r *catalog.Record, b *catalog.Backend, f catalog.Family) (own, sum uint64) {
	bk := &h.ring[slot%Buckets]
	if bk.slot != slot {
		return 0, 0
	}
	for _, o := range r.Backends {
		if family(o) == f {
			sum += bk.seconds[o.Key()]
		}
	}
	return bk.seconds[b.Key()], sum
}

// configuredShares returns, by backend, the share its weight gives it among the record's
// enabled backends of its family; 0 for a disabled one.
func configuredShares(r *catalog.Record) []float64 {
	var sums [2]float64
	for _, b := range r.Backends {
		if b.Enabled() {
			sums[family(b)] += weight(b)
		}
	}
	out := make([]float64, len(r.Backends))
	for i, b := range r.Backends {
		if s := sums[family(b)]; b.Enabled() && s > 0 {
			out[i] = weight(b) / s
		}
	}
	return out
}

// weight returns b's configured weight, 1 when it sets none.
func weight(b *catalog.Backend) float64 {
	if b.Config.Weight <= 0 {
		return 1
	}
	return float64(b.Config.Weight)
}

// familyName names f as the API does.
func familyName(f catalog.Family) string {
	if f == catalog.IPv6 {
		return "IPv6"
	}
	return "IPv4"
}

// family returns the address family of b's answers: IPv4 for a host name (a CNAME).
func family(b *catalog.Backend) catalog.Family {
	if b.Config.IP.Is6() {
		return catalog.IPv6
	}
	return catalog.IPv4
}

// countries returns r's traffic by client country, the largest first.
func countries(r *catalog.Record) []Country {
	by := map[string]*Country{}
	r.TrafficByCountry(func(country string, b *catalog.Backend, seconds uint64) {
		c := by[country]
		if c == nil {
			c = &Country{Country: country, Backends: map[string]uint64{}}
			by[country] = c
		}
		c.Seconds += seconds
		c.Backends[b.Key()] += seconds
	})
	out := make([]Country, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Country) int {
		if a.Seconds != b.Seconds {
			return cmp.Compare(b.Seconds, a.Seconds)
		}
		return cmp.Compare(a.Country, b.Country)
	})
	return out
}

// ratio returns part/whole, -1 when whole is 0.
func ratio(part, whole uint64) float64 {
	if whole == 0 {
		return -1
	}
	return float64(part) / float64(whole)
}
