package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/drill"
)

// errDrillFailed is the error of a drill run that failed: its report is printed, and the
// command exits 1.
var errDrillFailed = errors.New("the drill failed")

// ctlDrills lists the drills: "meridian ctl drills".
func ctlDrills(*flag.FlagSet) ctlRun {
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if err := noArgs(args); err != nil {
			return nil, err
		}
		return c.Drills(ctx)
	}
}

// ctlDrill runs a drill now: "meridian ctl drill NAME", or a hypothesis with -down, -drained
// and -primaries.
func ctlDrill(fs *flag.FlagSet) ctlRun {
	var req admin.DrillRequest
	fs.Var((*selectorList)(&req.Down), "down", "suppose these backends down (key, address, site:NAME, location:NAME); repeatable")
	fs.Var((*selectorList)(&req.Drained), "drained", "suppose these backends drained; repeatable")
	fs.BoolVar(&req.Primaries, "primaries", false, "suppose the best-priority backends of every failover record down")
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		switch {
		case len(args) > 1:
			return nil, fmt.Errorf("%w: want at most one drill NAME", errUsage)
		case len(args) == 1:
			req.Name = args[0]
		}
		if req.Name == "" && req.Hypothesis.Empty() {
			return nil, fmt.Errorf("%w: give a drill NAME, or -down, -drained or -primaries", errUsage)
		}
		rep, err := c.RunDrill(ctx, req)
		if err != nil {
			return nil, err
		}
		if rep.Failed {
			return rep, errDrillFailed
		}
		return rep, nil
	}
}

// printDrills lists drills with their last results.
func printDrills(w io.Writer, list []drill.Status) {
	fmt.Fprintln(w, "DRILL\tEVERY\tSUPPOSES\tNEXT\tLAST RUN\tRESULT")
	for _, d := range list {
		last, result := "-", "-"
		if d.Last != nil {
			last = d.Last.Time.Local().Format(time.DateTime)
			result = "passed"
			if d.Last.Failed {
				result = "FAILED: " + d.Last.Summary
			}
		}
		supposes := d.Hypothesis.String()
		if d.Live != "" {
			supposes += " (live " + d.Live + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Name, d.Every, supposes, d.Next.Local().Format(time.DateTime), last, result)
	}
}

// printDrillReport writes a drill's report: a line per record and family, then the failures.
func printDrillReport(w io.Writer, rep drill.Report) {
	fmt.Fprintf(w, "%s\n\n", rep.Summary)
	fmt.Fprintln(w, "RECORD\tFAMILY\tWOULD ANSWER\tFAILOVER WORST CASE\tTARGET\tRESULT")
	var failures []string
	for _, r := range rep.Records {
		target := "-"
		if r.Failover.TargetMS > 0 {
			target = millis(r.Failover.TargetMS).String()
		}
		worst := millis(r.Failover.WorstMS).String()
		if r.Failover.Unbounded {
			worst = "unbounded"
		}
		result := "pass"
		if len(r.Failures) > 0 {
			result = "FAIL"
		}
		for _, f := range slices.Sorted(maps.Keys(r.Answers)) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Record, f, strings.Join(r.Answers[f], " "), worst, target, result)
		}
		for _, why := range r.Failures {
			failures = append(failures, r.Record+": "+why)
		}
	}
	if len(failures) > 0 {
		fmt.Fprintf(w, "\nFAILURES\n%s\n", strings.Join(failures, "\n"))
	}
	if l := rep.Live; l != nil {
		fmt.Fprintf(w, "\nlive drain of %d backends until %s", len(l.Backends), l.Until.Local().Format(time.DateTime))
		if l.Error != "" {
			fmt.Fprintf(w, ": not made: %s", l.Error)
		}
		fmt.Fprintln(w)
	}
}

// millis is a number of milliseconds as a duration.
func millis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
