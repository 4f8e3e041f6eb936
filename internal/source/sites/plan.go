package sites

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
)

// plan is what the current configuration asks of the other sites, from the last Merge.
type plan struct {
	// zones are the origins of the zones with other sites' backends, in configuration order;
	// heartbeats are read in the first.
	zones []string
	// reads are, by site, the records whose localtargets are read from it.
	reads map[string][]read
	// remote are the other sites' backends written with an address (the same YAML in every
	// site), whose health this site takes from their site's localtargets.
	remote []remoteBackend
	// placeholders are, by record, the sites that its placeholder backends stand for.
	placeholders map[string][]string
	// rtts are the records whose RTTs (localrtt) are read from every other site, with
	// measure_remote: those that steer by RTT; measured are their backends with an address,
	// whose RTTs by site this site takes from what the others publish.
	rtts     []string
	measured []measuredBackend
	// vantages are the other sites that the rtts records' backends name (site, or location
	// when they have no site), whose peers' heartbeats are recognised although no record
	// has backends of theirs to read.
	vantages []string
}

// measuredBackend is one backend of a record whose RTTs are read from the other sites.
type measuredBackend struct {
	key, record string
	ip          netip.Addr
}

// read is one record whose localtargets are read from a site, and the query types they are
// read with: those of its backends of that site, both for a placeholder (which stands for
// whatever the site publishes).
type read struct {
	record string
	qtypes []uint16
}

// addQtype adds qtype to the types r is read with.
func (r *read) addQtype(qtype uint16) {
	if !slices.Contains(r.qtypes, qtype) {
		r.qtypes = append(r.qtypes, qtype)
	}
}

// remoteBackend is another site's backend: written with an address, or a target learned for
// a placeholder.
type remoteBackend struct {
	key, site, record string
	ip                netip.Addr
	learned           bool
	// threshold is the record's split-brain threshold, 0 for the block's.
	threshold time.Duration
}

// sites returns every site the plan reads from, sorted: those it reads targets from, and the
// vantages.
func (p *plan) sites() []string {
	out := slices.Concat(slices.Collect(maps.Keys(p.reads)), p.vantages)
	slices.Sort(out)
	return slices.Compact(out)
}

// merge returns zones with this site's view of sites applied, and the plan it implies:
// backends of other sites are marked Remote, placeholders are replaced by the targets their
// site last published (learned, by site and record), every record with backends of this site
// (a site: of this site, or none) publishes them, and a backend's site is its location tag
// (the geo modes' location) when it has none. With measure (measure_remote), the records that
// steer by RTT publish this site's RTTs to their backends, their other sites' backends are
// measured here (config.Backend.MeasureOnly), and the plan reads the other sites' RTTs.
// Zones and records that change are copies; the input is not modified.
func merge(zones []*config.Zone, own string, measure bool, learned func(site, record string) []netip.Addr) ([]*config.Zone, *plan) {
	p := &plan{reads: map[string][]read{}, placeholders: map[string][]string{}}
	out := slices.Clone(zones)
	for zi, z := range zones {
		var recs []config.Record
		involved := false
		for ri := range z.Records {
			r := &z.Records[ri]
			if recs == nil {
				recs = slices.Clone(z.Records)
			}
			rec := &recs[ri]
			rtt := measure && r.SteersByRTT()
			if rtt {
				rec.PublishRTT, involved = true, true
				p.rtts = append(p.rtts, r.Name)
			}
			if !hasSites(r) {
				rec.Publish = slices.ContainsFunc(r.Backends, func(b config.Backend) bool { return b.IP.IsValid() })
				if rtt {
					p.noteMeasured(rec, own)
				}
				continue
			}
			rec.Backends = nil
			reads := map[string]*read{}
			for _, b := range r.Backends {
				home := b.Site()
				if l := b.Labels(); l.Location == "" {
					l.Location = home // the site is the backend's geo tag, unless it has one
					b.SetLabels(l)
				}
				b.MeasureOnly = rtt && home != "" && home != own
				switch {
				case home == "" || home == own:
					rec.Publish = rec.Publish || !b.IsPlaceholder()
					if !b.IsPlaceholder() {
						rec.Backends = append(rec.Backends, b)
					}
					continue
				case b.IsPlaceholder():
					targets := expand(b, learned(home, r.Name))
					for i := range targets {
						p.remote = append(p.remote, remoteBackend{key: config.BackendKey(r.Name, &targets[i]), site: home, record: r.Name, ip: targets[i].IP, learned: true, threshold: r.Settings().SplitBrainThreshold})
					}
					rec.Backends = append(rec.Backends, targets...)
					p.placeholders[r.Name] = appendOnce(p.placeholders[r.Name], home)
				default:
					b.Remote, b.External = true, true
					rec.Backends = append(rec.Backends, b)
					p.remote = append(p.remote, remoteBackend{key: config.BackendKey(r.Name, &b), site: home, record: r.Name, ip: b.IP, threshold: r.Settings().SplitBrainThreshold})
				}
				involved = true
				rd := reads[home]
				if rd == nil {
					rd = &read{record: r.Name}
					reads[home] = rd
				}
				switch {
				case b.IsPlaceholder():
					rd.addQtype(dns.TypeA)
					rd.addQtype(dns.TypeAAAA)
				case b.IP.Is4():
					rd.addQtype(dns.TypeA)
				case b.IP.Is6():
					rd.addQtype(dns.TypeAAAA)
				}
			}
			for _, site := range slices.Sorted(maps.Keys(reads)) {
				p.reads[site] = append(p.reads[site], *reads[site])
			}
			if rtt {
				p.noteMeasured(rec, own)
			}
		}
		if recs != nil {
			zc := *z
			zc.Records = recs
			out[zi] = &zc
		}
		if involved {
			p.zones = append(p.zones, z.Origin)
		}
	}
	return out, p
}

// noteMeasured adds rec's backends with an address to the backends measured by the other
// sites, and the sites other than own that they name to the vantages.
func (p *plan) noteMeasured(rec *config.Record, own string) {
	for i := range rec.Backends {
		b := &rec.Backends[i]
		if site := cmp.Or(b.Site(), b.Labels().Location); site != "" && site != own {
			p.vantages = appendOnce(p.vantages, site)
		}
		if b.IP.IsValid() {
			p.measured = append(p.measured, measuredBackend{key: config.BackendKey(rec.Name, b), record: rec.Name, ip: b.IP})
		}
	}
}

// hasSites reports whether any backend of r names a site.
func hasSites(r *config.Record) bool {
	return slices.ContainsFunc(r.Backends, func(b config.Backend) bool { return b.Site() != "" })
}

// expand returns the backends that placeholder stands for: one per address its site
// published, each with the placeholder's settings, sharing its weight with the others of its
// address family.
func expand(placeholder config.Backend, addrs []netip.Addr) []config.Backend {
	var v4 int
	for _, a := range addrs {
		if a.Is4() {
			v4++
		}
	}
	out := make([]config.Backend, 0, len(addrs))
	for _, a := range addrs {
		b := placeholder
		b.Address, b.IP, b.Remote, b.External = a.String(), a, true, true
		b.SetShare(len(addrs) - v4)
		if a.Is4() {
			b.SetShare(v4)
		}
		out = append(out, b)
	}
	return out
}

// appendOnce appends s to list unless it is already there.
func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
