package config

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Defaults of the signer (a dnssec block inside gslb; docs/dnssec.md).
const (
	DefaultSignatureValidity = 14 * 24 * time.Hour
	DefaultSignatureRefresh  = 5 * 24 * time.Hour
	DefaultInceptionOffset   = time.Hour
	DefaultDNSKEYTTL         = time.Hour
	// DefaultSignCacheCapacity is how many RRsets' signatures made on demand are kept;
	// DefaultSignRate how many such signatures a second a zone makes at most.
	DefaultSignCacheCapacity = 65536
	DefaultSignRate          = 2000
)

// DNSSECOptions are one dnssec block of a gslb block: Meridian's own signer of some of the
// block's zones, with keys read from BIND-format key files (docs/dnssec.md).
type DNSSECOptions struct {
	// Zones are the zones the block signs (canonical); none: every zone of the gslb block.
	Zones []string
	// Keys are the key files (base names, or .key or .private files), as key file lines list
	// them.
	Keys []string
	// Validity is how long a signature is valid; Refresh how long before it expires it is
	// made again; InceptionOffset how far its inception is back-dated.
	Validity, Refresh, InceptionOffset time.Duration
	// DNSKEYTTL is the TTL of the DNSKEY, CDS and CDNSKEY RRsets.
	DNSKEYTTL time.Duration
	// CacheCapacity is how many RRsets' signatures made on demand are kept (cache_capacity);
	// SignRate how many on-demand signatures a second a zone makes at most (sign_rate).
	CacheCapacity, SignRate int
	// Line is the Corefile line of the block, which the errors of its keys name.
	Line int
}

// DefaultDNSSECOptions returns a dnssec block's options with every default set, and no zone
// and no key.
func DefaultDNSSECOptions() DNSSECOptions {
	return DNSSECOptions{
		Validity:        DefaultSignatureValidity,
		Refresh:         DefaultSignatureRefresh,
		InceptionOffset: DefaultInceptionOffset,
		DNSKEYTTL:       DefaultDNSKEYTTL,
		CacheCapacity:   DefaultSignCacheCapacity,
		SignRate:        DefaultSignRate,
	}
}

// Check returns what is inconsistent in a dnssec block: no key, a refresh that is not shorter
// than the validity, a TTL the DNS cannot carry.
func (o DNSSECOptions) Check() error {
	var errs []error
	if len(o.Keys) == 0 {
		errs = append(errs, errors.New("dnssec: no key: add a 'key file KEY...' line"))
	}
	if o.Refresh >= o.Validity {
		errs = append(errs, fmt.Errorf("dnssec: signature_refresh (%s) must be shorter than signature_validity (%s)", o.Refresh, o.Validity))
	}
	if o.DNSKEYTTL > time.Duration(1<<31-1)*time.Second {
		errs = append(errs, fmt.Errorf("dnssec: dnskey_ttl %s is longer than a TTL can be", o.DNSKEYTTL))
	}
	return errors.Join(errs...)
}

// SignedZones returns, for each zone of origins that a dnssec block of blocks signs, that
// block's index. It fails when a block names a zone that is not in origins, or when two
// blocks sign one zone.
func SignedZones(blocks []DNSSECOptions, origins []string) (map[string]int, error) {
	signed := map[string]int{}
	for i, b := range blocks {
		zones := b.Zones
		if len(zones) == 0 {
			zones = origins
		}
		for _, z := range zones {
			if !slices.Contains(origins, z) {
				return nil, fmt.Errorf("dnssec: %s is not a zone of this gslb block", z)
			}
			if j, dup := signed[z]; dup {
				return nil, fmt.Errorf("dnssec: the zone %s is signed by two dnssec blocks (lines %d and %d)", z, blocks[j].Line, b.Line)
			}
			signed[z] = i
		}
	}
	return signed, nil
}
