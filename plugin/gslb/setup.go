package gslb

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

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
	g := &GSLB{Engine: eng, Answer: eng.AnswerOptions(), Fall: block.Fall, PlainDNS: plainDNS(c.ServerBlockKeys)}
	if k := block.Options.Sites.TSIG; k != nil {
		g.PeerKey = k.Name
	}
	hookStrictReplies(cfg)
	if g.AnswerLog = block.Options.AnswerLog.Enable; g.AnswerLog {
		hookAnswerLog(c, g, cfg)
	}
	if block.Options.FastPath.Enable {
		fp := newFastPaths(g, block.Options.FastPath, cfg)
		c.OnStartup(fp.check)
		onShutdown(c, fp.stop)
	}
	if len(block.Options.DNSSEC) > 0 {
		c.OnStartup(func() error {
			if cfg.Handler("dnssec") != nil {
				return plugin.Error(pluginName, errors.New("dnssec: the server block has CoreDNS's dnssec plugin, which signs gslb's answers too: remove it, or gslb's dnssec block"))
			}
			return nil
		})
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
	if err := serverTLS(c.ServerBlockKeys, cfg, eng, log); err != nil {
		_ = eng.Stop()
		return block, nil, block.errorAt(max(block.Written["tls_cert"], block.Line), err)
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
	var keyErr *engine.DNSSECError
	if errors.As(err, &keyErr) && keyErr.Line > 0 {
		return b.errorAt(keyErr.Line, err)
	}
	return b.errorAt(b.Line, err)
}

// ParseBlock parses the gslb directive at c. Relative file names are resolved against root
// (the root plugin's directory) when it is set. port is the port the server block listens on
// (0: unknown, the default DNS port). Errors name the Corefile line.
func ParseBlock(c *caddy.Controller, root string, port int) (Block, error) {
	b := Block{Options: config.DefaultOptions(), Written: make(map[string]int), port: port}
	groups := b.optionGroups(root)
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
			if err := b.parseOption(c, groups); err != nil {
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
	if err := b.checkSecurity(); err != nil {
		return b, err
	}
	for i, d := range b.Options.DNSSEC {
		if _, err := config.SignedZones(b.Options.DNSSEC[:i+1], b.Options.ZoneOrigins()); err != nil {
			return b, b.errorAt(d.Line, err)
		}
	}
	if err := engine.CheckAPIOptions(b.Options.API); err != nil {
		return b, b.errorAt(max(b.apiLine, b.Line), err)
	}
	if err := b.Options.Safety.Check(b.Options.API.Enable, b.Options.ZoneOrigins()); err != nil {
		return b, b.errorAt(max(b.Written["drill"], b.Written["canary_name"], b.Written["canary_resolver"], b.Line), err)
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
