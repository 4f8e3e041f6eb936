package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/canary"
)

// errMismatches is the error of a canary report with mismatches: it is printed, and the
// command exits 1.
var errMismatches = errors.New("the canaries found mismatches")

// ctlCanaries shows the canaries' last round, or with -run runs one now: "meridian ctl canaries".
func ctlCanaries(fs *flag.FlagSet) ctlRun {
	now := fs.Bool("run", false, "ask the resolvers and parents now rather than show the last round")
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if err := noArgs(args); err != nil {
			return nil, err
		}
		rep, err := c.Canaries(ctx, *now)
		if err != nil {
			return nil, err
		}
		for _, ch := range rep.Checks {
			if len(ch.Mismatches) > 0 {
				return rep, errMismatches
			}
		}
		for _, d := range rep.Delegations {
			if len(d.Mismatches) > 0 {
				return rep, errMismatches
			}
		}
		return rep, nil
	}
}

// printCanaries writes a canary report: a line per question and per delegation, then the
// mismatches.
func printCanaries(w io.Writer, rep canary.Report) {
	fmt.Fprintln(w, "RESOLVER\tNAME\tECS\tANSWER\tTTL\tSCOPE\tTHIS INSTANCE\tRESULT")
	var found []string
	result := func(ms []canary.Mismatch, where string) string {
		if len(ms) == 0 {
			return "ok"
		}
		kinds := make([]string, len(ms))
		for i, m := range ms {
			kinds[i] = m.Kind
			found = append(found, where+": "+m.Text)
		}
		return strings.Join(kinds, ",")
	}
	for _, c := range rep.Checks {
		scope := "-"
		if c.Scope >= 0 {
			scope = "/" + strconv.Itoa(c.Scope)
		}
		where := c.Resolver + " " + c.Name
		if c.ECS != "" {
			where += " (ECS " + c.ECS + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s (ttl %d)\t%s\n", c.Resolver, c.Name, cmp.Or(c.ECS, "-"), cmp.Or(strings.Join(c.Answer, " "), c.Rcode),
			c.TTL, scope, strings.Join(c.Expected.Answer, " "), c.Expected.TTL, result(c.Mismatches, where))
	}
	if len(rep.Delegations) > 0 {
		fmt.Fprintln(w, "\nPARENT\tZONE\tNS\tTHE ZONE'S NS\tRESULT")
		for _, d := range rep.Delegations {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", d.Parent, d.Zone, strings.Join(d.NS, " "), strings.Join(d.ExpectedNS, " "),
				result(d.Mismatches, d.Parent+" "+d.Zone))
		}
	}
	if len(found) > 0 {
		fmt.Fprintf(w, "\nMISMATCHES\n%s\n", strings.Join(found, "\n"))
	}
}
