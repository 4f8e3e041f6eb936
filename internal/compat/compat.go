// Package compat compares a configuration written for CoreDNS-GSLB with what Meridian does
// with it. Meridian accepts CoreDNS-GSLB's Corefile options and YAML files; where it behaves
// differently on purpose (a safer default, a more exact algorithm), `meridian check --compat`
// lists each difference with where it comes from and what to write to get CoreDNS-GSLB's
// behaviour. Every rule here has a section in docs/migrating-from-coredns-gslb.md.
package compat

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Block is what the rules read of one parsed gslb block: its options, where it is, and which
// options the Corefile writes (an option left out takes CoreDNS-GSLB's default there and
// Meridian's here).
type Block struct {
	Options config.Options
	// File and Line are where the gslb directive is.
	File string
	Line int
	// Written holds the line of the first occurrence of each option the block writes.
	Written map[string]int
}

// Difference is one thing Meridian does differently from CoreDNS-GSLB with the same
// configuration.
type Difference struct {
	// Where is the file and line the difference comes from ("Corefile:3", "zone.yml:12").
	Where string
	// Topic is the option or field concerned.
	Topic string
	// CG says what CoreDNS-GSLB does, Meridian what Meridian does.
	CG, Meridian string
	// Change says what to write to get CoreDNS-GSLB's behaviour, or why there is no such way.
	Change string
}

// String formats d on one line.
func (d Difference) String() string {
	return fmt.Sprintf("%s: %s: CoreDNS-GSLB %s; Meridian %s; %s", d.Where, d.Topic, d.CG, d.Meridian, d.Change)
}

// rule finds the differences of one topic.
type rule func(b Block, zones []*config.Zone) []Difference

// rules are every known difference, one function a topic.
var rules = []rule{apiDefault, metricsDefault, txtDefault, ipHashOrder, alpnDefault, httpChecks, luaScripts}

// Check returns every difference between what CoreDNS-GSLB and Meridian do with the block b
// and its loaded zones, sorted by where they come from. None means the configuration behaves
// the same.
func Check(b Block, zones []*config.Zone) []Difference {
	var out []Difference
	for _, r := range rules {
		out = append(out, r(b, zones)...)
	}
	slices.SortStableFunc(out, func(x, y Difference) int { return cmp.Compare(x.Where, y.Where) })
	return out
}

// at returns the Corefile position of option in b, or of the gslb directive when the block
// does not write it.
func (b Block) at(option string) string {
	if line, ok := b.Written[option]; ok {
		return fmt.Sprintf("%s:%d", b.File, line)
	}
	return fmt.Sprintf("%s:%d", b.File, b.Line)
}

// written reports whether b writes any of options.
func (b Block) written(options ...string) bool {
	for _, o := range options {
		if _, ok := b.Written[o]; ok {
			return true
		}
	}
	return false
}
