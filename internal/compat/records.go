package compat

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/config"
)

// ipHashOrder: both hash the client's address the same way and take the backend at
// hash mod n, but CoreDNS-GSLB orders the healthy backends by their addresses as text and
// Meridian by value (unless the record asks for hash_order: text); where the two orders
// differ, clients are remapped on the move.
func ipHashOrder(_ Block, zones []*config.Zone) []Difference {
	var out []Difference
	for _, z := range zones {
		for _, r := range z.Records {
			if r.Mode != config.ModeIPHash || r.Steering().HashOrder == config.HashOrderText || !textOrderDiffers(r.Backends) {
				continue
			}
			out = append(out, Difference{
				Where: fmt.Sprintf("%s:%d", r.Pos.File(), r.Pos.Line), Topic: r.Name + " mode ip-hash",
				CG:       "orders the backends by their addresses as text before it takes hash mod n",
				Meridian: "orders them by value, so most clients get another backend after the move",
				Change:   "write hash_order: text on the record to keep every client on its backend (docs/modes.md says which order to choose)",
			})
		}
	}
	return out
}

// textOrderDiffers reports whether the IP backends of one family sort differently as text and
// by value.
func textOrderDiffers(backends []config.Backend) bool {
	var v4, v6 []netip.Addr
	for _, b := range backends {
		ip, err := netip.ParseAddr(b.Address)
		switch {
		case err != nil:
		case ip.Is4():
			v4 = append(v4, ip)
		default:
			v6 = append(v6, ip)
		}
	}
	return ordersDiffer(v4) || ordersDiffer(v6)
}

func ordersDiffer(ips []netip.Addr) bool {
	byValue := slices.Clone(ips)
	slices.SortFunc(byValue, netip.Addr.Compare)
	byText := slices.Clone(ips)
	slices.SortFunc(byText, func(a, b netip.Addr) int { return strings.Compare(a.String(), b.String()) })
	return !slices.Equal(byValue, byText)
}

// alpnDefault: CoreDNS-GSLB's HTTPS and SVCB answers carry alpn=h3,h2 when a record sets no
// alpn; Meridian's carry none, since it cannot know what the backends speak.
func alpnDefault(_ Block, zones []*config.Zone) []Difference {
	var out []Difference
	for _, z := range zones {
		var first *config.Record
		n := 0
		for i, r := range z.Records {
			if len(r.Settings().ALPN) == 0 {
				n++
				if first == nil {
					first = &z.Records[i]
				}
			}
		}
		if first == nil {
			continue
		}
		out = append(out, Difference{
			Where: fmt.Sprintf("%s:%d", first.Pos.File(), first.Pos.Line), Topic: fmt.Sprintf("alpn (%d records of %s)", n, z.Origin),
			CG:       "answers HTTPS and SVCB queries with alpn=h3,h2 when the record sets no alpn",
			Meridian: "sends no alpn then",
			Change:   "write alpn: [h3, h2] under defaults (or on the records) to answer as CoreDNS-GSLB does",
		})
	}
	return out
}

// httpChecks: two defaults of CoreDNS-GSLB's http checks that Meridian does not share. Its
// checks send "Host: localhost" unless they set host, where Meridian's send the backend's
// address; and with enable_tls: false and no port they still connect to 443, where Meridian's
// connect to 80.
func httpChecks(_ Block, zones []*config.Zone) []Difference {
	var out []Difference
	eachCheck(zones, func(r *config.Record, b *config.Backend, hc *config.HealthCheck) {
		if hc.Type == "http" {
			out = append(out, httpCheck(r.Name, *b, *hc)...)
		}
	})
	return out
}

// eachCheck calls f for every health check of every backend of zones.
func eachCheck(zones []*config.Zone, f func(*config.Record, *config.Backend, *config.HealthCheck)) {
	for _, z := range zones {
		for ri := range z.Records {
			r := &z.Records[ri]
			for bi := range r.Backends {
				b := &r.Backends[bi]
				checks := b.Checks().HealthChecks // shared by backends: f only reads them
				for ci := range checks {
					f(r, b, &checks[ci])
				}
			}
		}
	}
}

// httpCheck returns the differences of one http check of backend b of record name.
func httpCheck(name string, b config.Backend, hc config.HealthCheck) []Difference {
	where := fmt.Sprintf("%s:%d", hc.Pos.File(), hc.Pos.Line)
	topic := fmt.Sprintf("%s backend %s http check", name, b.Address)
	var out []Difference
	if _, ok := hc.Params.Get("host"); !ok {
		out = append(out, Difference{
			Where: where, Topic: topic + " host",
			CG:       "sends Host: localhost",
			Meridian: "sends the backend's address as Host",
			Change:   "write params.host: localhost to send what CoreDNS-GSLB sends",
		})
	}
	_, port := hc.Params.Get("port")
	v, _ := hc.Params.Get("enable_tls")
	if tls, ok := v.(bool); ok && !tls && !port && b.Port == 0 {
		out = append(out, Difference{
			Where: where, Topic: topic + " port",
			CG:       "connects to port 443 (in plain HTTP) when enable_tls is false and no port is set",
			Meridian: "connects to port 80",
			Change:   "write params.port: 443 to probe what CoreDNS-GSLB probes",
		})
	}
	return out
}

// luaSandboxed are the names a CoreDNS-GSLB script may call that Meridian's Lua sandbox does not
// have: CoreDNS-GSLB opens Lua's whole standard library.
var luaSandboxed = regexp.MustCompile(`\b(os|io|debug|package)\s*\.|\b(require|dofile|loadfile|load|loadstring)\s*\(`)

// luaScripts: a lua check whose script (inline; a script_file is read by the check itself)
// calls what the sandbox leaves out fails in Meridian.
func luaScripts(_ Block, zones []*config.Zone) []Difference {
	var out []Difference
	eachCheck(zones, func(r *config.Record, b *config.Backend, hc *config.HealthCheck) {
		v, _ := hc.Params.Get("script")
		src, _ := v.(string)
		if hc.Type != "lua" || !luaSandboxed.MatchString(src) {
			return
		}
		out = append(out, Difference{
			Where: fmt.Sprintf("%s:%d", hc.Pos.File(), hc.Pos.Line), Topic: fmt.Sprintf("%s backend %s lua check", r.Name, b.Address),
			CG:       "runs scripts with Lua's whole standard library",
			Meridian: "runs them without os, io, debug, package, require and load: this script fails",
			Change:   "do the work with ssh_exec or http_get, or in a custom check (docs/health-checks.md)",
		})
	})
	return out
}
