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
	warnings, errs := checkCorefile(*conf)
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	for _, err := range errs {
		fmt.Fprintln(stderr, err)
	}
	if len(errs) > 0 {
		fmt.Fprintf(stderr, "%s: %d error(s)\n", *conf, len(errs))
		return 1
	}
	fmt.Fprintf(stdout, "%s: OK\n", *conf)
	return 0
}

// checkCorefile returns the warnings and the errors of the Corefile at path and its files.
func checkCorefile(path string) (warnings, errs []error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, []error{err}
	}
	defer f.Close()
	blocks, err := caddyfile.Parse(path, f, directives)
	if err != nil {
		return nil, []error{err}
	}
	for _, sb := range blocks {
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
		w, err := engine.Check(block.Options)
		warnings = append(warnings, w...)
		if err != nil {
			errs = append(errs, unjoin(err)...)
		}
	}
	return warnings, errs
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
