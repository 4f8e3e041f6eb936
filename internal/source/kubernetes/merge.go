package kubernetes

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/meridian-gslb/meridian/internal/config"
)

// use is what a merge expanded one kubernetes backend of a record to: its addresses, and the
// catalog keys of the backends they became, whose verdicts the watcher reports.
type use struct {
	ref    config.KubernetesRef
	record string
	addrs  []netip.Addr
	keys   []string
}

// checkAddrs stand, in Check, for the addresses a kubernetes backend has at run time: one per
// family, from the documentation ranges (RFC 5737, RFC 3849).
var checkAddrs = []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}

// Check returns zones with every kubernetes backend standing for one address of each family
// (checkAddrs), so that their health checks are compiled and checked as they will be once the
// objects' addresses are read; and reports the backends whose namespace opts does not watch.
// The zones are for validation only.
func Check(zones []*config.Zone, opts config.KubernetesOptions) ([]*config.Zone, error) {
	out, _, err := expand(zones, opts, func(config.KubernetesRef, string) []netip.Addr { return checkAddrs })
	return out, err
}

// expand returns zones with each kubernetes backend replaced by one backend per address that
// addrs gives for its object (and record), each with the backend's settings, marked External
// (judged by this source) and sharing its weight with the others of its address family; and
// what each backend was expanded to, by record and reference. Zones without kubernetes
// backends are returned as they are. A backend whose namespace opts does not watch is an error.
func expand(zones []*config.Zone, opts config.KubernetesOptions, addrs func(config.KubernetesRef, string) []netip.Addr) ([]*config.Zone, map[string]*use, error) {
	uses := map[string]*use{}
	var errs []error
	out := slices.Clone(zones)
	for zi, z := range zones {
		var recs []config.Record
		for ri := range z.Records {
			r := &z.Records[ri]
			if !slices.ContainsFunc(r.Backends, func(b config.Backend) bool { return b.IsKubernetes() }) {
				continue
			}
			if recs == nil {
				recs = slices.Clone(z.Records)
			}
			rec := &recs[ri]
			rec.Backends = make([]config.Backend, 0, len(r.Backends))
			for _, b := range r.Backends {
				if !b.IsKubernetes() {
					rec.Backends = append(rec.Backends, b)
					continue
				}
				ref := *b.Kubernetes()
				if !opts.Watches(ref.Namespace) {
					errs = append(errs, fmt.Errorf("%s: backend of %s: the %s is in a namespace that kubernetes_namespaces does not watch", b.Pos, r.Name, ref))
					continue
				}
				key := r.Name + "|" + ref.Key()
				u := uses[key]
				if u == nil {
					u = &use{ref: ref, record: r.Name, addrs: addrs(ref, r.Name)}
					uses[key] = u
				}
				v4 := slices.IndexFunc(u.addrs, func(a netip.Addr) bool { return !a.Is4() }) // sorted: IPv4 first
				if v4 < 0 {
					v4 = len(u.addrs)
				}
				for _, a := range u.addrs {
					t := b
					t.Address, t.IP, t.External = a.String(), a, true
					t.SetShare(len(u.addrs) - v4)
					if a.Is4() {
						t.SetShare(v4)
					}
					u.keys = append(u.keys, config.BackendKey(r.Name, &t))
					rec.Backends = append(rec.Backends, t)
				}
			}
		}
		if recs != nil {
			zc := *z
			zc.Records = recs
			out[zi] = &zc
		}
	}
	return out, uses, errors.Join(errs...)
}
