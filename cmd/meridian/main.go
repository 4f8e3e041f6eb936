// Command meridian is Meridian's DNS server: CoreDNS with a chosen set of its own plugins and the
// gslb plugin, placed before cache so that GSLB answers are never cached by name alone.
//
//	meridian -conf Corefile        serve
//	meridian -version              print Meridian's and CoreDNS's versions
//	meridian check -conf Corefile  validate a Corefile and the YAML files it names, then exit
//	meridian ctl COMMAND ...       query and steer a running meridian through its admin API
//	meridian answers FILE...       print the responses of an answer log (dnstap) with their decisions
//	meridian help [-man] [OPTION]  the commands and the Corefile options (-man: the man page)
//
// SIGUSR1 reloads the Corefile; SIGUSR2 replaces the running binary by the one at its path
// without losing a query (see upgrade.go).
package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/acl"
	_ "github.com/coredns/coredns/plugin/any"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/debug"
	_ "github.com/coredns/coredns/plugin/dnssec"
	_ "github.com/coredns/coredns/plugin/dnstap"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/file"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/https"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metadata"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/multisocket"
	_ "github.com/coredns/coredns/plugin/pprof"
	_ "github.com/coredns/coredns/plugin/quic"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/root"
	_ "github.com/coredns/coredns/plugin/template"
	_ "github.com/coredns/coredns/plugin/timeouts"
	_ "github.com/coredns/coredns/plugin/transfer"
	_ "github.com/coredns/coredns/plugin/tsig"
	_ "github.com/coredns/coredns/plugin/whoami"

	"github.com/meridian-gslb/meridian/internal/cgmetrics"
	"github.com/meridian-gslb/meridian/internal/gctune"
	_ "github.com/meridian-gslb/meridian/plugin/gslb"
	_ "github.com/meridian-gslb/meridian/plugin/gslbproxy"
)

// Version is Meridian's version, set at build time with -ldflags "-X main.Version=...".
var Version = "dev"

// directives is the plugin chain order: CoreDNS's own order for the plugins compiled in, with
// gslb and gslb_proxy inserted right before cache (gslb_proxy rewrites what forward answers),
// and transfer (which hands gslb's zones to secondaries) and dnssec (which signs their answers
// on the fly, as in CoreDNS-GSLB's builds) before them. quic, https and timeouts only set the
// limits of the server block's DNS over QUIC, HTTPS, TCP and TLS servers; the certificate of
// tls://, quic:// and https:// addresses is gslb's tls_cert, read again when it changes
// (CoreDNS's tls plugin, with its ACME client, is not compiled in).
var directives = []string{
	"root", "metadata", "quic", "https", "timeouts", "multisocket", "reload", "bind", "debug", "ready", "health", "pprof", "prometheus",
	"errors", "log", "dnstap", "any", "loadbalance", "tsig", "rewrite", "acl", "transfer", "dnssec", "gslb", "gslb_proxy", "cache",
	"template", "file", "forward", "whoami",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	if os.Getenv("GOGC") == "" {
		// The GC percentage follows the live heap (see gctune): a small deployment collects
		// less often, one with tens of thousands of health checks does not double its heap.
		gctune.Start()
	}
	if len(os.Args) > 1 && os.Args[1] == "check" {
		os.Exit(runCheck(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "help" {
		os.Exit(runHelp(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "answers" {
		os.Exit(runAnswers(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "ctl" {
		os.Exit(runCtl(os.Args[2:], os.Getenv, os.Stdout, os.Stderr))
	}
	for _, arg := range os.Args[1:] {
		if arg == "version" || arg == "-version" || arg == "--version" {
			printVersion()
			return
		}
	}
	cgmetrics.PublishVersion(Version)
	announceStarts()
	coremain.Run()
	handOver()
}

func printVersion() {
	fmt.Printf("meridian %s\ncoredns %s\n%s %s/%s\n", Version, coremain.CoreVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
