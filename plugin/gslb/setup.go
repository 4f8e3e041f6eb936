package gslb

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/transfer"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

// setup opens the engine of the gslb block at c and hooks it into the server's lifecycle. The
// engine of a reloaded Corefile takes its health manager and admin API from the previous
// load's through engine.Default, so that health state, probes and the listener carry over.
func setup(c *caddy.Controller) error {
	block, eng, err := Open(c, log)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	cfg := dnsserver.GetConfig(c)
	// With peer_tsig, the server verifies the TSIG of incoming queries signed with the key:
	// miekg/dns checks each signed query against the server's secrets, gives the handler the
	// result (which the engine reads to refuse the queries of the published names that are not
	// signed with the key), and signs a reply that carries a TSIG record.
	if k := block.Options.Sites.TSIG; k != nil {
		if cfg.TsigSecret == nil {
			cfg.TsigSecret = make(map[string]string)
		}
		cfg.TsigSecret[k.Name] = k.Secret
	}
	g := &GSLB{Engine: eng, Answer: eng.AnswerOptions(), Fall: block.Fall}
	if k := block.Options.Sites.TSIG; k != nil {
		g.PeerKey = k.Name
	}
	hookStrictReplies(cfg)
	if block.Options.FastPath.Enable {
		fp := newFastPaths(g, block.Options.FastPath, cfg)
		c.OnStartup(fp.check)
		onShutdown(c, fp.stop)
	}
	c.OnStartup(func() error {
		// With the transfer plugin in the server block, the zones' serials follow what a
		// transfer carries (g is its Transferer), and the secondaries get a NOTIFY when it
		// changes.
		if t, ok := cfg.Handler("transfer").(*transfer.Transfer); ok {
			eng.EnableTransfers(t.Notify)
		}
		return nil
	})
	cfg.AddPlugin(func(next plugin.Handler) plugin.Handler {
		g.Next = next
		return g
	})
	return nil
}

// Open parses the directive at c (the gslb syntax, which gslb_proxy shares), opens its engine
// through engine.Default and hooks the engine into the server's lifecycle: started with the
// server, stopped with it, resynced when a Corefile reload fails. Its errors name the Corefile
// line; the caller adds its plugin's name. The engine logs to log.
func Open(c *caddy.Controller, log engine.Logger) (Block, *engine.Engine, error) {
	cfg := dnsserver.GetConfig(c)
	block, err := ParseBlock(c, cfg.Root, serverPort(cfg))
	if err != nil {
		return block, nil, err
	}
	awaitHandover()
	eng, err := engine.Default.Open(c.Context(), block.Options, log)
	if err != nil {
		return block, nil, block.openError(err)
	}
	c.OnStartup(eng.Start)
	c.OnStartup(prepareUpgrades)
	onShutdown(c, eng.Stop)
	// A failed Corefile reload keeps this instance: give the manager its backends back, and
	// release what the failed load's engines took.
	c.OnRestartFailed(eng.Resync)
	return block, eng, nil
}

// Block is a parsed gslb directive.
type Block struct {
	Options config.Options
	Fall    fall.F
	// File and Line are where the directive is.
	File string
	Line int
	// Written holds the line of the first occurrence of each option the block writes.
	Written map[string]int
	// apiLine is the line of the block's first api_* option, which errors of the admin API
	// name.
	apiLine int
	// sitesLine is the line of the block's first sites option, which the errors of their
	// consistency name.
	sitesLine int
	// port is the port of the server block, which the peers found from NS are asked on.
	port int
}

// errorAt returns err as an error of the Corefile at line, in the form caddy gives the errors
// it finds while parsing.
func (b Block) errorAt(line int, err error) error {
	return fmt.Errorf("%s:%d - Error during parsing: %w", b.File, line, err)
}

// openError names the Corefile line that err, an error of opening the block's engine, is about:
// the api_* option for the admin API's errors, the gslb directive for the others (the errors of
// a zone file name its file and line too).
func (b Block) openError(err error) error {
	var apiErr *engine.APIError
	if errors.As(err, &apiErr) && b.apiLine > 0 {
		return b.errorAt(b.apiLine, err)
	}
	return b.errorAt(b.Line, err)
}

// ParseBlock parses the gslb directive at c. Relative file names are resolved against root
// (the root plugin's directory) when it is set. port is the port the server block listens on
// (0: unknown, the default DNS port). Errors name the Corefile line.
func ParseBlock(c *caddy.Controller, root string, port int) (Block, error) {
	b := Block{Options: config.DefaultOptions(), Written: make(map[string]int), port: port}
	seen := false
	zoneLines := make(map[string]int) // the line of each zone's first listing
	for c.Next() {
		if seen {
			return b, plugin.ErrOnce
		}
		seen = true
		b.File, b.Line = c.File(), c.Line()
		if err := parseShortForm(c, root, &b); err != nil {
			return b, err
		}
		for _, z := range b.Options.Zones {
			zoneLines[z.Origin] = b.Line
		}
		for c.NextBlock() {
			zones, line := len(b.Options.Zones), c.Line()
			if _, ok := b.Written[c.Val()]; !ok {
				b.Written[c.Val()] = line
			}
			if b.apiLine == 0 && strings.HasPrefix(c.Val(), "api_") {
				b.apiLine = line
			}
			if err := parseOption(c, root, &b); err != nil {
				return b, err
			}
			for _, z := range b.Options.Zones[zones:] {
				if first, ok := zoneLines[z.Origin]; ok {
					return b, c.Errf("zone %s is listed twice (first at line %d)", z.Origin, first)
				}
				zoneLines[z.Origin] = line
			}
		}
	}
	if len(b.Options.Zones) == 0 {
		return b, c.Err("no zones: use 'gslb FILE [ZONE]' or a 'zone ORIGIN FILE' line")
	}
	if err := engine.CheckAPIOptions(b.Options.API); err != nil {
		return b, b.errorAt(max(b.apiLine, b.Line), err)
	}
	if err := errors.Join(b.Options.Sites.Check(), b.Options.Heartbeats.Check(b.Options.Sites), b.Options.Kubernetes.ExternalDNS.Check(b.Options.Sites)); err != nil {
		return b, b.errorAt(max(b.sitesLine, b.Line), err)
	}
	return b, nil
}

// serverPort returns the port of the server block of cfg, the DNS port when it is not a number.
func serverPort(cfg *dnsserver.Config) int {
	if p, err := strconv.Atoi(cfg.Port); err == nil {
		return p
	}
	return dnsPort
}

// parseShortForm reads "gslb FILE [ZONES...]"; without ZONES the server block's zone is used.
func parseShortForm(c *caddy.Controller, root string, b *Block) error {
	args := c.RemainingArgs()
	if len(args) == 0 {
		return nil
	}
	file := resolve(root, args[0])
	origins := plugin.OriginsFromArgsOrServerBlock(args[1:], c.ServerBlockKeys)
	if len(origins) != 1 {
		return c.Errf("'gslb %s' needs exactly one zone, got %d: name it, or use 'zone ORIGIN FILE' lines", args[0], len(origins))
	}
	b.Options.Zones = append(b.Options.Zones, config.ZoneSource{Origin: config.CanonicalName(origins[0]), File: file})
	return nil
}

func resolve(root, file string) string {
	if root == "" || filepath.IsAbs(file) {
		return file
	}
	return filepath.Join(root, file)
}

func parseOption(c *caddy.Controller, root string, b *Block) error {
	o := &b.Options
	switch name := c.Val(); name {
	case "zone":
		args := c.RemainingArgs()
		if len(args) != 2 {
			return c.Errf("zone: want 'zone ORIGIN FILE', got %d arguments", len(args))
		}
		o.Zones = append(o.Zones, config.ZoneSource{Origin: config.CanonicalName(args[0]), File: resolve(root, args[1])})
	case "zones":
		// The block form of CoreDNS-GSLB: zones { ORIGIN FILE ... }
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
	case "fallthrough":
		b.Fall.SetZonesFromArgs(c.RemainingArgs())
	case "use_edns_csubnet":
		return flag(c, &o.UseEDNSClientSubnet, true)
	case "fastpath":
		return fastPathOption(c, &o.FastPath)
	case "fastpath_log_sample":
		return positive(c, &o.FastPath.LogSample)
	case "enable_txt":
		return flag(c, &o.EnableTXT, true)
	case "disable_txt":
		return flag(c, &o.EnableTXT, false)
	case "coredns_gslb_metrics":
		return flag(c, &o.CoreDNSGSLBMetrics, true)
	case "max_stagger_start":
		return duration(c, &o.MaxStaggerStart, 0)
	case "resolution_idle_timeout":
		return duration(c, &o.ResolutionIdleTimeout, time.Second)
	case "batch_size_start":
		return positive(c, &o.BatchSizeStart)
	case "healthcheck_idle_multiplier":
		return positive(c, &o.HealthcheckIdleMultiplier)
	case "state_persist_enable":
		return flag(c, &o.State.Enable, true)
	case "state_persist_path":
		return path(c, root, &o.State.Path)
	case "state_persist_interval":
		return duration(c, &o.State.Interval, time.Second)
	case "state_max_age":
		return duration(c, &o.State.MaxAge, time.Second)
	case "max_file_size":
		return size(c, &o.MaxFileSize)
	case "geoip_maxmind":
		return parseMaxMind(c, root, &o.GeoIP)
	case "geoip_city_maxmind_db", "geoip_asn_maxmind_db":
		// CoreDNS-GSLB's one-line spellings of geoip_maxmind city_db|asn_db PATH.
		v, err := single(c)
		if err != nil {
			return err
		}
		return setMaxMind(c, root, &o.GeoIP, strings.TrimSuffix(strings.TrimPrefix(name, "geoip_"), "_maxmind_db"), v)
	case "geoip_custom", "geoip_custom_db":
		return path(c, root, &o.GeoIP.CustomMap)
	case "healthcheck_profiles":
		return path(c, root, &o.HealthcheckProfilesFile)
	default:
		if ok, err := parseClusterOption(c, root, &o.Cluster); ok || err != nil {
			return err
		}
		if ok, err := parseAPIOption(c, root, &o.API); ok || err != nil {
			return err
		}
		if ok, err := parseKubernetesOption(c, root, &o.Kubernetes); ok || err != nil {
			return err
		}
		if ok, err := parseWebhookOption(c, &o.Webhooks); ok || err != nil {
			return err
		}
		line := c.Line()
		if ok, err := parseSitesOption(c, &o.Sites, b.port); ok || err != nil {
			b.sitesLine = cmp.Or(b.sitesLine, line)
			return err
		}
		if ok, err := parseHeartbeatOption(c, &o.Heartbeats); ok || err != nil {
			b.sitesLine = cmp.Or(b.sitesLine, line)
			return err
		}
		return c.Errf("unknown option %q", name)
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

// single returns the one argument of the current option.
func single(c *caddy.Controller) (string, error) {
	name := c.Val()
	args := c.RemainingArgs()
	if len(args) != 1 {
		return "", c.Errf("%s: want one argument, got %d", name, len(args))
	}
	return args[0], nil
}

// path sets a file option: its one argument, resolved against root.
func path(c *caddy.Controller, root string, dst *string) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	*dst = resolve(root, v)
	return nil
}

// flag sets a switch option that takes no argument (or an explicit true/false).
func flag(c *caddy.Controller, dst *bool, on bool) error {
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

// duration parses a Go duration, or a bare number of seconds, of at least floor.
func duration(c *caddy.Controller, dst *time.Duration, floor time.Duration) error {
	name := c.Val()
	v, err := single(c)
	if err != nil {
		return err
	}
	d, err := config.ParseDuration(v)
	if err != nil {
		return c.Errf("%s: %v", name, err)
	}
	if d < floor {
		return c.Errf("%s: %s is shorter than %s", name, d, floor)
	}
	*dst = d
	return nil
}

// size reads a size in bytes, with an optional K, M or G suffix (config.ParseSize).
func size(c *caddy.Controller, dst *int64) error {
	name := c.Val()
	v, err := single(c)
	if err != nil {
		return err
	}
	n, err := config.ParseSize(v)
	if err != nil {
		return c.Errf("%s: %v", name, err)
	}
	*dst = n
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

func positive(c *caddy.Controller, dst *int) error {
	name := c.Val()
	v, err := single(c)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return c.Errf("%s: %q is not a positive integer", name, v)
	}
	*dst = n
	return nil
}
