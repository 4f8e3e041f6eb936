package gslbproxy

import (
	"fmt"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/meridian-gslb/meridian/plugin/gslb"
)

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

// setup opens the engine of the gslb_proxy block at c as the gslb plugin opens its own
// (gslb.Open: the same syntax and options, one engine through engine.Default, carried over
// Corefile reloads) and puts the handler in the chain.
func setup(c *caddy.Controller) error {
	block, eng, err := gslb.Open(c, log)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	if line, ok := block.Written["fallthrough"]; ok {
		// Every query goes to the next plugin already: there is nothing to fall through to.
		return plugin.Error(pluginName, fmt.Errorf("%s:%d - Error during parsing: fallthrough: gslb_proxy passes every query on, it takes no fallthrough", block.File, line))
	}
	if line, ok := block.Written["dnssec"]; ok {
		// The answers are the upstream servers', whose zones are theirs to sign.
		return plugin.Error(pluginName, fmt.Errorf("%s:%d - Error during parsing: dnssec: gslb_proxy rewrites the answers of the zone's own servers, which sign their zone themselves; it takes no dnssec block", block.File, line))
	}
	p := &Proxy{Engine: eng, Answer: eng.AnswerOptions()}
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		p.Next = next
		return p
	})
	return nil
}
