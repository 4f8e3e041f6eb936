package compat

import (
	"fmt"
	"net/netip"
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
			if r.Mode != config.ModeIPHash || r.HashOrder == config.HashOrderText || !textOrderDiffers(r.Backends) {
				continue
			}
			out = append(out, Difference{
				Where: fmt.Sprintf("%s:%d", r.Pos.File, r.Pos.Line), Topic: r.Name + " mode ip-hash",
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
