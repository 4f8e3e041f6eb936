package gslb

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// The options of a gslb block are tables: one row per option name, whose parser sets the
// option's field of the block's config.Options. A subsystem's table is in its setup_*.go file
// beside the parsers of its own kinds of argument; the rows of the common kinds are made here,
// each checking how many arguments its kind takes: setFlag for a switch, setParsed for one
// argument and a function that parses it (setString, setPath, setDuration, setSize,
// setPositive...). Adding an option is one row, and its line in docs/configuration.md
// (TestOptionsDocumented).

// optionFunc parses one line of an option; c stands at the option's name.
type optionFunc func(c *caddy.Controller) error

// optionTable maps option names to their parsers. A name and its alias are two rows.
type optionTable map[string]optionFunc

// optionGroup is the table of one subsystem's options.
type optionGroup struct {
	table optionTable
	// sites is set for the sites and heartbeats options: the errors of their consistency name
	// the block's first line of one of them (Block.sitesLine).
	sites bool
}

// optionGroups returns the tables of every option of the block, whose rows set b's options;
// relative file names are resolved against root. No name is in two tables.
func (b *Block) optionGroups(root string) []optionGroup {
	o := &b.Options
	return []optionGroup{
		{table: b.generalOptions(root)},
		{table: clusterOptions(&o.Cluster, root)},
		{table: apiOptions(&o.API, root)},
		{table: kubernetesOptions(&o.Kubernetes, root)},
		{table: webhookOptions(&o.Webhooks)},
		{table: safetyOptions(&o.Safety)},
		{table: sitesOptions(&o.Sites, b.port), sites: true},
		{table: heartbeatOptions(&o.Heartbeats), sites: true},
		{table: securityOptions(o, root)},
		{table: observeOptions(&o.AnswerLog, &o.TrafficShares, &o.Traces)},
		{table: dnssecOptions(o, root)},
	}
}

// parseOption parses the option line at c with its row of groups.
func (b *Block) parseOption(c *caddy.Controller, groups []optionGroup) error {
	name := c.Val()
	for _, g := range groups {
		if parse, ok := g.table[name]; ok {
			if g.sites {
				b.sitesLine = cmp.Or(b.sitesLine, c.Line())
			}
			return parse(c)
		}
	}
	return c.Errf("unknown option %q", name)
}

// generalOptions is the table of the options that belong to no subsystem: the zones, the
// answers, the health scheduler, the state file, GeoIP.
func (b *Block) generalOptions(root string) optionTable {
	o := &b.Options
	return optionTable{
		"zone":  func(c *caddy.Controller) error { return zoneLine(c, root, o) },
		"zones": func(c *caddy.Controller) error { return zonesBlock(c, root, o) },
		"fallthrough": func(c *caddy.Controller) error {
			b.Fall.SetZonesFromArgs(c.RemainingArgs())
			return nil
		},
		"use_edns_csubnet":                        setFlag(&o.UseEDNSClientSubnet, true),
		"fastpath":                                func(c *caddy.Controller) error { return fastPathOption(c, &o.FastPath) },
		"fastpath_log_sample":                     setPositive(&o.FastPath.LogSample),
		"fastpath_tcp_max_connections":            setPositive(&o.FastPath.TCPMaxConns),
		"fastpath_tcp_max_connections_per_client": setPositive(&o.FastPath.TCPMaxConnsPerClient),
		"enable_txt":                              setFlag(&o.EnableTXT, true),
		"disable_txt":                             setFlag(&o.EnableTXT, false),
		"coredns_gslb_metrics":                    setFlag(&o.CoreDNSGSLBMetrics, true),
		"max_stagger_start":                       setDuration(&o.MaxStaggerStart, 0),
		"resolution_idle_timeout":                 setDuration(&o.ResolutionIdleTimeout, time.Second),
		"batch_size_start":                        setPositive(&o.BatchSizeStart),
		"healthcheck_idle_multiplier":             setPositive(&o.HealthcheckIdleMultiplier),
		"healthcheck_profiles":                    setPath(root, &o.HealthcheckProfilesFile),
		"state_persist_enable":                    setFlag(&o.State.Enable, true),
		"state_persist_path":                      setPath(root, &o.State.Path),
		"state_persist_interval":                  setDuration(&o.State.Interval, time.Second),
		"state_max_age":                           setDuration(&o.State.MaxAge, time.Second),
		"max_file_size":                           setSize(&o.MaxFileSize),
		"geoip_maxmind":                           func(c *caddy.Controller) error { return parseMaxMind(c, root, &o.GeoIP) },
		// CoreDNS-GSLB's one-line spellings of geoip_maxmind city_db|asn_db PATH.
		"geoip_city_maxmind_db": func(c *caddy.Controller) error { return oneMaxMind(c, root, &o.GeoIP) },
		"geoip_asn_maxmind_db":  func(c *caddy.Controller) error { return oneMaxMind(c, root, &o.GeoIP) },
		"geoip_custom":          setPath(root, &o.GeoIP.CustomMap),
		"geoip_custom_db":       setPath(root, &o.GeoIP.CustomMap),
	}
}

// zoneLine reads "zone ORIGIN FILE".
func zoneLine(c *caddy.Controller, root string, o *config.Options) error {
	args := c.RemainingArgs()
	if len(args) != 2 {
		return c.Errf("zone: want 'zone ORIGIN FILE', got %d arguments", len(args))
	}
	o.Zones = append(o.Zones, config.ZoneSource{Origin: config.CanonicalName(args[0]), File: resolve(root, args[1])})
	return nil
}

// zonesBlock reads the block form of CoreDNS-GSLB: zones { ORIGIN FILE ... }.
func zonesBlock(c *caddy.Controller, root string, o *config.Options) error {
	if len(c.RemainingArgs()) != 0 {
		return c.Err("zones: takes a block of 'ORIGIN FILE' lines")
	}
	for c.NextBlock() {
		origin := c.Val()
		args := c.RemainingArgs()
		if len(args) != 1 {
			return c.Errf("zones: want 'ORIGIN FILE', got %d arguments after %s", len(args), origin)
		}
		o.Zones = append(o.Zones, config.ZoneSource{Origin: config.CanonicalName(origin), File: resolve(root, args[0])})
	}
	return nil
}

// parseMaxMind reads "geoip_maxmind TYPE PATH" and the block form "geoip_maxmind { TYPE PATH
// ... }". TYPE is city_db, country_db or asn_db, or CoreDNS-GSLB's city, country or asn. The
// line form repeats, once per database type.
func parseMaxMind(c *caddy.Controller, root string, g *config.GeoIPOptions) error {
	const usage = "want 'geoip_maxmind city_db|country_db|asn_db PATH' or a block of such lines"
	args := c.RemainingArgs()
	if len(args) == 2 {
		return setMaxMind(c, root, g, args[0], args[1])
	}
	if len(args) != 0 {
		return c.Errf("geoip_maxmind: %s, got %d arguments", usage, len(args))
	}
	n := 0
	for c.NextBlock() {
		typ := c.Val()
		rest := c.RemainingArgs()
		if len(rest) != 1 {
			return c.Errf("geoip_maxmind: want 'TYPE PATH' in the block, got %d arguments after %s", len(rest), typ)
		}
		if err := setMaxMind(c, root, g, typ, rest[0]); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return c.Errf("geoip_maxmind: %s", usage)
	}
	return nil
}

// oneMaxMind reads geoip_city_maxmind_db or geoip_asn_maxmind_db PATH, the database type
// being in the option's name.
func oneMaxMind(c *caddy.Controller, root string, g *config.GeoIPOptions) error {
	typ := strings.TrimSuffix(strings.TrimPrefix(c.Val(), "geoip_"), "_maxmind_db")
	v, err := single(c)
	if err != nil {
		return err
	}
	return setMaxMind(c, root, g, typ, v)
}

// maxMindTypes maps each database type name, ours and CoreDNS-GSLB's, to ours.
var maxMindTypes = map[string]string{
	"city_db": "city_db", "country_db": "country_db", "asn_db": "asn_db",
	"city": "city_db", "country": "country_db", "asn": "asn_db",
}

// setMaxMind sets the path of the MaxMind database of type typ, once.
func setMaxMind(c *caddy.Controller, root string, g *config.GeoIPOptions, typ, path string) error {
	var dst *string
	switch maxMindTypes[typ] {
	case "city_db":
		dst = &g.CityDB
	case "country_db":
		dst = &g.CountryDB
	case "asn_db":
		dst = &g.ASNDB
	default:
		return c.Errf("geoip_maxmind: unknown database type %q (valid: city_db, country_db, asn_db, or city, country, asn)", typ)
	}
	if *dst != "" {
		return c.Errf("geoip_maxmind: the %s database is given twice", maxMindTypes[typ])
	}
	*dst = resolve(root, path)
	return nil
}

// maxFastPathLoops bounds the fastpath option's loops per address.
const maxFastPathLoops = 256

// fastPathOption reads "fastpath [LOOPS]".
func fastPathOption(c *caddy.Controller, o *config.FastPathOptions) error {
	o.Enable = true
	switch args := c.RemainingArgs(); len(args) {
	case 0:
	case 1:
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 1 || n > maxFastPathLoops {
			return c.Errf("fastpath: %q is not a number of loops from 1 to %d", args[0], maxFastPathLoops)
		}
		o.Loops = n
	default:
		return c.Errf("fastpath: want at most one argument (the loops per address), got %d", len(args))
	}
	return nil
}

// single returns the one argument of the current option.
func single(c *caddy.Controller) (string, error) {
	name := c.Val()
	args := c.RemainingArgs()
	if len(args) != 1 {
		return "", c.Errf("%s: want one argument, got %d", name, len(args))
	}
	return args[0], nil
}

// setParsed is the row of an option of one argument, which parse turns into the value of dst;
// the error of parse is the option's.
func setParsed[T any](dst *T, parse func(arg string) (T, error)) optionFunc {
	return func(c *caddy.Controller) error {
		name := c.Val()
		v, err := single(c)
		if err != nil {
			return err
		}
		x, err := parse(v)
		if err != nil {
			return c.Errf("%s: %v", name, err)
		}
		*dst = x
		return nil
	}
}

// setString is the row of an option of one argument, a string.
func setString(dst *string) optionFunc {
	return setParsed(dst, func(v string) (string, error) { return v, nil })
}

// setNonEmpty is setString for a string that must not be empty; what names it in the error.
func setNonEmpty(dst *string, what string) optionFunc {
	return setParsed(dst, func(v string) (string, error) {
		if v == "" {
			return "", fmt.Errorf("the %s must not be empty", what)
		}
		return v, nil
	})
}

// setChecked is setString for a name that check must accept (a site, a region): the error of
// check is the option's, as it is.
func setChecked(dst *string, check func(string) error) optionFunc {
	return func(c *caddy.Controller) error {
		v, err := single(c)
		if err != nil {
			return err
		}
		*dst = v
		if err := check(v); err != nil {
			return c.Errf("%v", err)
		}
		return nil
	}
}

// setPath is the row of a file option: its one argument, resolved against root.
func setPath(root string, dst *string) optionFunc {
	return setParsed(dst, func(v string) (string, error) { return resolve(root, v), nil })
}

// setFlag is the row of a switch that takes no argument (or an explicit true/false): it sets
// dst to on, or to on when the argument is true and to !on when it is false.
func setFlag(dst *bool, on bool) optionFunc {
	return func(c *caddy.Controller) error {
		name := c.Val()
		switch args := c.RemainingArgs(); len(args) {
		case 0:
			*dst = on
		case 1:
			v, err := strconv.ParseBool(args[0])
			if err != nil {
				return c.Errf("%s: %q is not true or false", name, args[0])
			}
			*dst = v == on
		default:
			return c.Errf("%s: want at most one argument, got %d", name, len(args))
		}
		return nil
	}
}

// setDuration is the row of a duration: a Go duration, or a bare number of seconds, of at
// least floor.
func setDuration(dst *time.Duration, floor time.Duration) optionFunc {
	return setParsed(dst, func(v string) (time.Duration, error) {
		d, err := config.ParseDuration(v)
		if err == nil && d < floor {
			err = fmt.Errorf("%s is shorter than %s", d, floor)
		}
		return d, err
	})
}

// setSize is the row of a size in bytes, with an optional K, M or G suffix (config.ParseSize).
func setSize(dst *int64) optionFunc { return setParsed(dst, config.ParseSize) }

// setPositive is the row of a positive integer.
func setPositive(dst *int) optionFunc {
	return setParsed(dst, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%q is not a positive integer", v)
		}
		return n, nil
	})
}
