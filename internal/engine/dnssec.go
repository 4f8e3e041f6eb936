package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnssec"
)

// DNSSECError is an error of a dnssec block's keys; Line is the block's Corefile line.
type DNSSECError struct {
	Line int
	Err  error
}

func (e *DNSSECError) Error() string { return e.Err.Error() }
func (e *DNSSECError) Unwrap() error { return e.Err }

// newSigners reads the keys of the block's dnssec blocks and returns the signer of each zone
// they sign, by origin (none without a dnssec block). It fails when a key does not read, or
// when a block's keys leave some RRsets without an active key now.
func newSigners(opts config.Options, now time.Time) (map[string]*dnssec.Signer, error) {
	signed, err := config.SignedZones(opts.DNSSEC, opts.ZoneOrigins())
	if err != nil {
		return nil, err
	}
	keysets := make([]*dnssec.Keyset, len(opts.DNSSEC))
	var errs []error
	for i, d := range opts.DNSSEC {
		if keysets[i], err = readKeyset(d, now); err != nil {
			errs = append(errs, &DNSSECError{Line: d.Line, Err: err})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make(map[string]*dnssec.Signer, len(signed))
	for zone, i := range signed {
		d := opts.DNSSEC[i]
		out[zone] = dnssec.NewSigner(zone, keysets[i], dnssec.Options{
			Validity: d.Validity, Refresh: d.Refresh, InceptionOffset: d.InceptionOffset,
			KeyTTL: uint32(d.DNSKEYTTL / time.Second), CacheCapacity: d.CacheCapacity, SignRate: d.SignRate,
		})
	}
	return out, nil
}

// readKeyset reads the key files of a dnssec block into its keyset, which must have an active
// key for every RRset at now.
func readKeyset(d config.DNSSECOptions, now time.Time) (*dnssec.Keyset, error) {
	var keys []*dnssec.Key
	var errs []error
	for _, path := range d.Keys {
		k, err := dnssec.ReadKey(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keys = append(keys, k)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ks, err := dnssec.NewKeyset(keys)
	if err != nil {
		return nil, err
	}
	if err := ks.Check(now); err != nil {
		return nil, fmt.Errorf("%w (keys %s)", err, describeKeys(ks, now))
	}
	return ks, nil
}

// describeKeys lists the keys of ks with their role and state at now, for errors.
func describeKeys(ks *dnssec.Keyset, now time.Time) string {
	var parts []string
	for _, k := range ks.Keys() {
		parts = append(parts, fmt.Sprintf("%d %s %s", k.Tag, ks.Role(k), k.StateAt(now)))
	}
	slices.Sort(parts)
	return fmt.Sprint(parts)
}

// signerList returns the signers of signers, in the order of their zones.
func signerList(signers map[string]*dnssec.Signer) []*dnssec.Signer {
	out := make([]*dnssec.Signer, 0, len(signers))
	for _, s := range signers {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *dnssec.Signer) int {
		switch {
		case a.Zone() < b.Zone():
			return -1
		case a.Zone() > b.Zone():
			return 1
		}
		return 0
	})
	return out
}

// parentDS returns the DS set the parent should hold for origin, and whether the engine signs
// it (the heartbeats' delegation keeper keeps it).
func (e *Engine) parentDS(origin string) ([]*dns.DS, bool) {
	s := e.signers[origin]
	if s == nil {
		return nil, false
	}
	return s.Keys().DS(origin, s.Options().KeyTTL, time.Now()), true
}
