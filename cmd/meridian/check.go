package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"

	"github.com/meridian-gslb/meridian/internal/compat"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/lint"
	"github.com/meridian-gslb/meridian/internal/source/files"
	"github.com/meridian-gslb/meridian/plugin/gslb"
)

// runCheck validates a Corefile: its syntax, that every directive is one this build has, and
// every gslb block with all the YAML files it names. It prints every error found and returns
// the process exit code. With -compat it also lists, item by item, what Meridian does
// differently from CoreDNS-GSLB with the same files, and nothing when they behave the same.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conf := fs.String("conf", "Corefile", "Corefile to check")
	compatible := fs.Bool("compat", false, "list what Meridian does differently from CoreDNS-GSLB with this configuration")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	blocks, warnings, errs := checkBlocks(*conf, *compatible)
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if len(errs) > 0 {
		return reportErrors(stderr, *conf, errs)
	}
	held, missed := failoverTargets(blocks)
	for _, l := range missed {
		fmt.Fprintln(stderr, "warning:", l)
	}
	for _, b := range blocks {
		for _, f := range lint.Zones(b.zones, b.compat.Options) {
			fmt.Fprintln(stderr, "warning:", f)
		}
	}
	for _, l := range held {
		fmt.Fprintln(stdout, l)
	}
	if *compatible {
		var diffs []compat.Difference
		for _, b := range blocks {
			diffs = append(diffs, compat.Check(b.compat, b.zones)...)
		}
		for _, d := range diffs {
			fmt.Fprintln(stdout, d)
		}
		if len(diffs) > 0 {
			fmt.Fprintf(stdout, "%s: OK, %d difference(s) from CoreDNS-GSLB (docs/migrating-from-coredns-gslb.md)\n", *conf, len(diffs))
			return 0
		}
	}
	fmt.Fprintf(stdout, "%s: OK\n", *conf)
	return 0
}

// failoverTargets checks the failover_target of every record of blocks that sets one
// (config.Record.FailoverBudget), and returns a line for each: those that hold, and those
// that do not (warnings: the configuration loads, the target is the operator's goal).
func failoverTargets(blocks []checkedBlock) (held, missed []string) {
	for _, b := range blocks {
		for _, z := range b.zones {
			for i := range z.Records {
				rec := &z.Records[i]
				if rec.Settings().FailoverTarget == 0 {
					continue
				}
				budget := rec.FailoverBudget(b.compat.Options)
				line := fmt.Sprintf("%s: %s failover_target: %s", rec.Pos, rec.Name, budget)
				if budget.Holds() {
					held = append(held, line)
				} else {
					missed = append(missed, line)
				}
			}
		}
	}
	return held, missed
}

// reportErrors prints errs, one a line, and their count for file, and returns exit code 1.
func reportErrors(w io.Writer, file string, errs []error) int {
	for _, err := range errs {
		fmt.Fprintln(w, err)
	}
	fmt.Fprintf(w, "%s: %d error(s)\n", file, len(errs))
	return 1
}

// checkedBlock is a gslb block that passed the check, as the compatibility rules read it.
type checkedBlock struct {
	compat compat.Block
	zones  []*config.Zone
}

// checkCorefile returns the warnings and the errors of the Corefile at path and of the files
// its gslb blocks name.
func checkCorefile(path string) (warnings, errs []error) {
	_, warnings, errs = checkBlocks(path, false)
	return warnings, errs
}

// checkBlocks checks the Corefile at path and returns its gslb blocks that passed, the
// warnings, and every error found. With whole, the blocks' zones are loaded again whole, with
// the health checks' parameters that the check consumes (the compatibility rules read them);
// without, they are the zones the check loaded, which is all the failover budgets need.
func checkBlocks(path string, whole bool) (blocks []checkedBlock, warnings, errs []error) {
	parsed, errs := gslbBlocks(path)
	for _, block := range parsed {
		zones, w, err := engine.Check(block.Options)
		warnings = append(warnings, w...)
		if err == nil && whole {
			zones, err = files.Load(block.Options) // engine.Check loaded them a moment ago
		}
		if err != nil {
			errs = append(errs, unjoin(err)...)
			continue
		}
		blocks = append(blocks, checkedBlock{
			compat: compat.Block{Options: block.Options, File: block.File, Line: block.Line, Written: block.Written},
			zones:  zones,
		})
	}
	return blocks, warnings, errs
}

// gslbBlocks parses the gslb and gslb_proxy blocks of the Corefile at path. It returns the blocks that parse
// and the errors of the others (or of the Corefile).
func gslbBlocks(path string) ([]gslb.Block, []error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, []error{err}
	}
	defer f.Close()
	sbs, err := caddyfile.Parse(path, f, directives)
	if err != nil {
		return nil, []error{err}
	}
	var blocks []gslb.Block
	var errs []error
	for _, sb := range sbs {
		root := ""
		if rt := sb.Tokens["root"]; len(rt) > 1 {
			root = rt[1].Text
		}
		for _, directive := range []string{"gslb", "gslb_proxy"} { // the same syntax
			tokens, ok := sb.Tokens[directive]
			if !ok {
				continue
			}
			c := &caddy.Controller{Dispenser: caddyfile.NewDispenserTokens(path, tokens), ServerBlockKeys: sb.Keys}
			// Port 0: check contacts no peer, and the port is only where the peers found from NS are asked.
			block, err := gslb.ParseBlock(c, root, 0)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			blocks = append(blocks, block)
		}
	}
	return blocks, errs
}

// unjoin splits errors joined with errors.Join (and lists of errors) into their parts, so
// that each is printed on its own line.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}
