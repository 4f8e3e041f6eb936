package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/plugin/gslb"
)

// runCheck validates a Corefile: its syntax, that every directive is one this build has, and
// every gslb block with all the YAML files it names. It prints every error found and returns
// the process exit code.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conf := fs.String("conf", "Corefile", "Corefile to check")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if errs := checkCorefile(*conf); len(errs) > 0 {
		return reportErrors(stderr, *conf, errs)
	}
	fmt.Fprintf(stdout, "%s: OK\n", *conf)
	return 0
}

// reportErrors prints errs, one a line, and their count for file, and returns exit code 1.
func reportErrors(w io.Writer, file string, errs []error) int {
	for _, err := range errs {
		fmt.Fprintln(w, err)
	}
	fmt.Fprintf(w, "%s: %d error(s)\n", file, len(errs))
	return 1
}

func checkCorefile(path string) []error {
	blocks, errs := gslbBlocks(path)
	for _, block := range blocks {
		if err := engine.Check(block.Options); err != nil {
			errs = append(errs, unjoin(err)...)
		}
	}
	return errs
}

// gslbBlocks parses the gslb blocks of the Corefile at path. It returns the blocks that parse
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
		tokens, ok := sb.Tokens["gslb"]
		if !ok {
			continue
		}
		root := ""
		if rt := sb.Tokens["root"]; len(rt) > 1 {
			root = rt[1].Text
		}
		c := &caddy.Controller{Dispenser: caddyfile.NewDispenserTokens(path, tokens), ServerBlockKeys: sb.Keys}
		block, err := gslb.ParseBlock(c, root)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		blocks = append(blocks, block)
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
