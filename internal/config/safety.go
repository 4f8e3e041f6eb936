package config

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
)

// SafetyOptions are the options of the tools that make changes of traffic safe: the drills
// (drill) and the Prometheus server that staged shifts query (prometheus). The drain guard is
// the records' own (DrainGuard).
type SafetyOptions struct {
	// Drills are the scheduled what-if runs of the block, in Corefile order.
	Drills []Drill
	// Prometheus is the base URL of the Prometheus server whose queries the shifts' signals
	// may be (http://127.0.0.1:9090); empty for none.
	Prometheus string
	// Canary is what the canaries ask, and of whom (canary_*).
	Canary CanaryOptions
}

// DefaultResolverCanaryInterval is how often the canaries through resolvers ask unless
// canary_interval says otherwise. (The canaries of cluster mode's quorum are another thing.)
const DefaultResolverCanaryInterval = time.Minute

// CanaryOptions are the canaries of a block (canary_resolver, canary_name, canary_ecs,
// canary_parent, canary_interval): each round, every resolver is asked every name, without
// and with each ECS subnet, and every parent server the delegation of every zone, and what
// they answer is compared with what this instance answers.
type CanaryOptions struct {
	// Resolvers are recursive resolvers we do not control, host:port.
	Resolvers []string
	// Names are the names asked (canonical), in the block's zones.
	Names []string
	// ECS are the client subnets sent, one query each, beside the query without.
	ECS []netip.Prefix
	// Parents are the servers of the zones' parent, host:port, asked for the delegations.
	Parents []string
	// Interval is how often (DefaultResolverCanaryInterval when 0).
	Interval time.Duration
}

// Enabled reports whether the block has canaries.
func (o CanaryOptions) Enabled() bool { return len(o.Resolvers) > 0 || len(o.Parents) > 0 }

// check reports canary options that ask nothing, or names outside the block's zones.
func (o CanaryOptions) check(zones []string) error {
	switch {
	case len(o.Resolvers) > 0 && len(o.Names) == 0:
		return errors.New("canary_resolver asks no name: give canary_name")
	case len(o.Names) > 0 && len(o.Resolvers) == 0:
		return errors.New("canary_name is asked of no resolver: give canary_resolver")
	case len(o.ECS) > 0 && len(o.Resolvers) == 0:
		return errors.New("canary_ecs is sent to no resolver: give canary_resolver")
	}
	for _, n := range o.Names {
		if !slices.ContainsFunc(zones, func(z string) bool { return inZone(n, z) }) {
			return fmt.Errorf("canary_name %s is in none of the block's zones", n)
		}
	}
	return nil
}

// Check reports what the safety options need of the rest of the block: a live drill drains
// through the admin API, which must be on (apiEnabled); the canaries ask names of its zones.
func (o SafetyOptions) Check(apiEnabled bool, zones []string) error {
	for _, d := range o.Drills {
		if d.Live > 0 && !apiEnabled {
			return fmt.Errorf("drill %s is live: it drains through the admin API, which needs api_enable", d.Name)
		}
	}
	return o.Canary.check(zones)
}

// MinDrillInterval is the shortest interval of a scheduled drill.
const MinDrillInterval = time.Second

// Drill is a what-if run on a schedule against the live configuration (drill): it supposes
// backends down or drained and reports, for every record the supposition touches, what would
// be answered, whether its drain guard would be broken, and its failover time against its
// target. A live drill also drains the Drained backends for real, for Live, through the admin
// API with the drain guard on.
type Drill struct {
	Name string
	// Every is the interval of the runs, aligned on the Unix clock: every instance runs a
	// drill at the same moments.
	Every time.Duration
	// Down and Drained are what-if selectors (a backend key, an address, site:NAME,
	// location:NAME); Primaries supposes the best-priority backends of every failover record
	// down.
	Down, Drained []string
	Primaries     bool
	// Live, when not 0, drains the Drained backends for real for that long at each run.
	Live time.Duration
}

// drillName is the form of a drill's name.
var drillName = regexp.MustCompile(`^[a-z0-9]([a-z0-9_.-]{0,62})$`)

// ParseDrill parses the arguments of a drill option: NAME EVERY, then any of down SEL,
// drained SEL, primaries, live DURATION.
func ParseDrill(args []string) (Drill, error) {
	if len(args) < 3 {
		return Drill{}, fmt.Errorf("want NAME EVERY and what to suppose (down SEL, drained SEL, primaries), got %d arguments", len(args))
	}
	d := Drill{Name: args[0]}
	if !drillName.MatchString(d.Name) {
		return d, fmt.Errorf("name %q: lower-case letters, digits, '.', '_' and '-', at most 64", d.Name)
	}
	every, err := ParseDuration(args[1])
	if err != nil || every < MinDrillInterval {
		return d, fmt.Errorf("every %q: want a duration of at least %v", args[1], MinDrillInterval)
	}
	d.Every = every
	for i := 2; i < len(args); i++ {
		word := args[i]
		if word == "primaries" {
			d.Primaries = true
			continue
		}
		if i+1 == len(args) {
			return d, fmt.Errorf("%s: want a value after it", word)
		}
		i++
		switch v := args[i]; word {
		case "down":
			d.Down = append(d.Down, v)
		case "drained":
			d.Drained = append(d.Drained, v)
		case "live":
			if d.Live, err = ParseDuration(v); err != nil || d.Live <= 0 {
				return d, fmt.Errorf("live %q: want a positive duration", v)
			}
		default:
			return d, fmt.Errorf("unknown word %q (valid: down, drained, primaries, live)", word)
		}
	}
	switch {
	case len(d.Down) == 0 && len(d.Drained) == 0 && !d.Primaries:
		return d, fmt.Errorf("drill %s supposes nothing: give down SEL, drained SEL or primaries", d.Name)
	case d.Live > 0 && len(d.Drained) == 0:
		return d, fmt.Errorf("live drill %s drains nothing: give drained SEL", d.Name)
	case d.Live > 0 && d.Live >= d.Every:
		return d, fmt.Errorf("live drill %s lasts %v, not less than its interval %v", d.Name, d.Live, d.Every)
	}
	return d, nil
}

// String writes the drill as its option's arguments.
func (d Drill) String() string {
	parts := []string{d.Name, d.Every.String()}
	for _, s := range d.Down {
		parts = append(parts, "down", s)
	}
	for _, s := range d.Drained {
		parts = append(parts, "drained", s)
	}
	if d.Primaries {
		parts = append(parts, "primaries")
	}
	if d.Live > 0 {
		parts = append(parts, "live", d.Live.String())
	}
	return strings.Join(parts, " ")
}
