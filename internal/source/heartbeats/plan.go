package heartbeats

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/source"
)

// plan is what the current configuration asks of the other sites' heartbeats.
type plan struct {
	// remote are the other sites' backends with an address.
	remote []remoteBackend
}

// remoteBackend is another site's backend.
type remoteBackend struct {
	key, site string
	ip        netip.Addr
}

// sites returns the sites of the plan's backends, sorted.
func (p *plan) sites() []string {
	var out []string
	for _, b := range p.remote {
		out = append(out, b.site)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Source returns the keeper as a source of backend sets for one engine.
func (k *Keeper) Source() source.BackendSets { return &Source{k: k} }

// Source is a Keeper as a source of backend sets (source.BackendSets). It changes no backend:
// it notes which are other sites', whose heartbeats it reads. It must come before the sites
// source, which replaces placeholders.
type Source struct{ k *Keeper }

// Name implements source.BackendSets.
func (s *Source) Name() string { return "heartbeats" }

// Merge implements source.BackendSets: it returns zones unchanged, and remembers the other
// sites' backends for the next round. A placeholder (a site without an address) is an error:
// a heartbeat lists a site's healthy addresses, not which record each serves.
func (s *Source) Merge(zones []*config.Zone) ([]*config.Zone, error) {
	k := s.k
	p := &plan{}
	var errs []error
	for _, z := range zones {
		for _, r := range z.Records {
			for _, b := range r.Backends {
				switch {
				case b.IsPlaceholder():
					errs = append(errs, fmt.Errorf("%s: backend of %s: site %s without an address needs peers: a heartbeat says which addresses are up, not which record each serves", b.Pos, r.Name, b.Site()))
				case b.Site() != "" && b.Site() != k.site && b.IP.IsValid():
					p.remote = append(p.remote, remoteBackend{key: config.BackendKey(r.Name, &b), site: b.Site(), ip: b.IP})
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.plan = p
	k.mu.Unlock()
	return zones, nil
}

// Watch implements source.BackendSets: heartbeats never change the backend sets.
func (s *Source) Watch(func(), source.Logger) (func(), error) { return func() {}, nil }
