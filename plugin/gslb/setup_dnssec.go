package gslb

import (
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// dnssecOptions is the table of the dnssec block (Meridian's own signer): "dnssec [ZONES...]
// { key file KEY...; ... }", CoreDNS's dnssec syntax inside gslb, which may repeat for zones
// signed with other keys.
func dnssecOptions(o *config.Options, root string) optionTable {
	return optionTable{
		"dnssec": func(c *caddy.Controller) error { return dnssecBlock(c, root, o) },
	}
}

// dnssecBlock reads one dnssec block into o.DNSSEC.
func dnssecBlock(c *caddy.Controller, root string, o *config.Options) error {
	d := config.DefaultDNSSECOptions()
	d.Line = c.Line()
	for _, z := range c.RemainingArgs() {
		d.Zones = append(d.Zones, config.CanonicalName(z))
	}
	table := optionTable{
		"key":                func(c *caddy.Controller) error { return dnssecKey(c, root, &d) },
		"signature_validity": setDuration(&d.Validity, time.Minute),
		"signature_refresh":  setDuration(&d.Refresh, time.Second),
		"inception_offset":   setDuration(&d.InceptionOffset, 0),
		"dnskey_ttl":         setDuration(&d.DNSKEYTTL, 0),
		"cache_capacity":     setPositive(&d.CacheCapacity),
		"sign_rate":          setPositive(&d.SignRate),
	}
	for c.NextBlock() {
		parse, ok := table[c.Val()]
		if !ok {
			return c.Errf("dnssec: unknown option %q (valid: key, signature_validity, signature_refresh, inception_offset, dnskey_ttl, cache_capacity, sign_rate)", c.Val())
		}
		if err := parse(c); err != nil {
			return err
		}
	}
	if err := d.Check(); err != nil {
		return c.Errf("%v", err)
	}
	o.DNSSEC = append(o.DNSSEC, d)
	return nil
}

// dnssecKey reads "key file KEY...", the key files relative to root.
func dnssecKey(c *caddy.Controller, root string, d *config.DNSSECOptions) error {
	args := c.RemainingArgs()
	if len(args) < 2 || args[0] != "file" {
		return c.Err("dnssec: want 'key file KEY...' (BIND key files: the base name, or the .key or .private file)")
	}
	for _, k := range args[1:] {
		d.Keys = append(d.Keys, resolve(root, k))
	}
	return nil
}
