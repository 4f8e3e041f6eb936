// Package lint gives the advice of the GSLB practice guide on a configuration's timers, as
// warnings that meridian check prints: the site's check interval against the local balancer's,
// the TTL against the failover target through the TTL floors of resolvers, a single failed
// probe taking a site out, long TTLs, and drain guards that no drain can pass. A configuration with
// findings loads and serves the same: they are advice, each naming its rule.
package lint

import (
	"fmt"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// ResolverTTLFloor is the lowest TTL that common public resolvers keep an answer for, whatever
// the authoritative TTL: an answer with a lower record_ttl may be cached this long.
const ResolverTTLFloor = 30 * time.Second

// LongTTL is the record_ttl above which a resolver keeps a dead site's answer for longer than
// the practice guide's advice (30 to 60 seconds) by far.
const LongTTL = 300 * time.Second

// The rules, as findings name them.
const (
	// RuleLocalInterval: scrape_interval is less than twice a backend's local_interval.
	RuleLocalInterval = "local-interval"
	// RuleTTLFloor: with a resolver's TTL floor, the record's worst case misses its target.
	RuleTTLFloor = "ttl-floor"
	// RuleFallOne: one failed probe takes a backend out.
	RuleFallOne = "fall-one"
	// RuleLongTTL: record_ttl above LongTTL on a record that fails over.
	RuleLongTTL = "long-ttl"
	// RuleGuard: the drain guard asks for more than the record has.
	RuleGuard = "drain-guard"
)

// Finding is one piece of advice about a record.
type Finding struct {
	Pos    config.Position
	Record string
	Rule   string
	Text   string
}

// String is the finding as meridian check prints it: file:line:column: record: text (rule).
func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s (%s)", f.Pos, f.Record, f.Text, f.Rule)
}

// Zones returns the findings of every record of zones, under the block options o, in zone and
// record order.
func Zones(zones []*config.Zone, o config.Options) []Finding {
	var out []Finding
	for _, z := range zones {
		for i := range z.Records {
			out = append(out, Record(&z.Records[i], o)...)
		}
	}
	return out
}

// Record returns the findings of one record.
func Record(rec *config.Record, o config.Options) []Finding {
	var out []Finding
	add := func(pos config.Position, rule, format string, args ...any) {
		out = append(out, Finding{Pos: pos, Record: rec.Name, Rule: rule, Text: fmt.Sprintf(format, args...)})
	}
	s := rec.Settings()
	probed := slices.ContainsFunc(rec.Backends, func(b config.Backend) bool { return !b.Remote && b.Probed() && len(b.Checks().HealthChecks) > 0 })
	for i := range rec.Backends {
		b := &rec.Backends[i]
		c := b.Checks()
		if len(c.HealthChecks) == 0 || b.AssumeHealthy || b.Remote {
			continue
		}
		if c.LocalInterval > 0 && s.ScrapeInterval < 2*c.LocalInterval {
			add(b.Pos, RuleLocalInterval, "backend %s: scrape_interval %v is less than twice its local_interval %v: a server the site's own balancer replaces may take the whole site out; make scrape_interval at least %v",
				b.Address, s.ScrapeInterval, c.LocalInterval, 2*c.LocalInterval)
		}
		if c.Fall == 1 && len(rec.Backends) > 1 {
			add(b.Pos, RuleFallOne, "backend %s: fall 1 takes it out of the answers on one failed probe (a packet lost, a server restarted): give fall 2 or more", b.Address)
		}
	}
	ttl := time.Duration(rec.TTL) * time.Second
	// A target the timers miss is the failover budget's warning; this is the one they meet
	// only when resolvers honour a TTL that low.
	if t := s.FailoverTarget; t > 0 && ttl < ResolverTTLFloor {
		if budget := rec.FailoverBudget(o); budget.Holds() {
			if floored := budget.Worst - ttl + ResolverTTLFloor; floored > t {
				add(rec.Pos, RuleTTLFloor, "record_ttl %v is below the %v that many resolvers keep answers at least: through them the worst case is %v, over failover_target %v",
					ttl, ResolverTTLFloor, floored, t)
			}
		}
	}
	if ttl > LongTTL && probed && len(rec.Backends) > 1 {
		add(rec.Pos, RuleLongTTL, "record_ttl %v: a resolver keeps a dead site's answer up to that long; the practice is 30 to 60 seconds for records that fail over", ttl)
	}
	if g := s.Guard; g.MinHealthy > 0 && rec.Discovery == nil && !slices.ContainsFunc(rec.Backends, func(b config.Backend) bool { return b.Address == "" }) {
		families := map[string]int{}
		for _, b := range rec.Backends {
			switch {
			case !b.IP.IsValid():
				families["A"]++
				families["AAAA"]++
			case b.IP.Is4():
				families["A"]++
			default:
				families["AAAA"]++
			}
		}
		for _, f := range []string{"A", "AAAA"} {
			if n := families[f]; n > 0 && n <= g.MinHealthy {
				add(rec.Pos, RuleGuard, "drain_guard min_healthy %d with %d %s backends: no drain of them can pass without force", g.MinHealthy, n, f)
			}
		}
	}
	return out
}
