package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/shift"
)

// ctlShift starts a staged shift: "meridian ctl shift -record R -from SEL -to SEL ...".
func ctlShift(fs *flag.FlagSet) ctlRun {
	var req admin.ShiftRequest
	fs.StringVar(&req.Record, "record", "", "the record whose traffic moves")
	fs.Var((*selectorList)(&req.From), "from", "the backends the traffic leaves (key, address, site:NAME, location:NAME); repeatable")
	fs.Var((*selectorList)(&req.To), "to", "the backends the traffic goes to; repeatable")
	steps := fs.String("steps", "10,25,50,100", "the percentages of the weight on -to at each step")
	fs.StringVar(&req.Every, "every", "5m", "how long each step holds")
	kind := fs.String("signal", "", "what to watch: failure_rate, metric or prometheus (none: the clock alone)")
	query := fs.String("query", "", "the PromQL query of a prometheus signal")
	above := fs.String("above", "", "roll back when the signal is above this")
	below := fs.String("below", "", "roll back when the signal is below this")
	fs.StringVar(&req.Reason, "reason", "", "a note kept with the shift")
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if err := noArgs(args); err != nil {
			return nil, err
		}
		for _, p := range strings.Split(*steps, ",") {
			v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(p), "%"), 64)
			if err != nil {
				return nil, fmt.Errorf("%w: -steps: %q is not a percentage", errUsage, p)
			}
			req.Steps = append(req.Steps, v)
		}
		if *kind != "" {
			req.Signal = &shift.Signal{Kind: *kind, Query: *query}
			for _, t := range []struct {
				flag, v string
				dst     **float64
			}{{"-above", *above, &req.Signal.Above}, {"-below", *below, &req.Signal.Below}} {
				if t.v == "" {
					continue
				}
				f, err := strconv.ParseFloat(t.v, 64)
				if err != nil {
					return nil, fmt.Errorf("%w: %s: %q is not a number", errUsage, t.flag, t.v)
				}
				*t.dst = &f
			}
		}
		return c.StartShift(ctx, req)
	}
}

// ctlShifts lists the shifts: "meridian ctl shifts".
func ctlShifts(*flag.FlagSet) ctlRun {
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if err := noArgs(args); err != nil {
			return nil, err
		}
		return c.Shifts(ctx)
	}
}

// ctlShiftCancel ends a shift: "meridian ctl shift-cancel ID".
func ctlShiftCancel(*flag.FlagSet) ctlRun {
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("%w: want one shift ID", errUsage)
		}
		if err := c.CancelShift(ctx, args[0]); err != nil {
			return nil, err
		}
		return nil, nil
	}
}

// printShifts lists shifts, a line each, with their step and what their controller noted.
func printShifts(w io.Writer, list []admin.ShiftStatus) {
	fmt.Fprintln(w, "SHIFT\tRECORD\tFROM\tTO\tSTEP\tON TO\tSTATE\tEVERY\tNOTE")
	for _, s := range list {
		note := s.Note
		if s.Why != "" {
			note = s.Why
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d of %d\t%s\t%s\t%s\t%s\n", s.ID, s.Record, strings.Join(s.From, ","), strings.Join(s.To, ","),
			s.Step+1, len(s.Steps), config.FormatShare(s.Share), s.State, time.Duration(s.Every), cmp.Or(note, "-"))
	}
}

// printShift writes a shift just started.
func printShift(w io.Writer, s admin.ShiftStatus) {
	printShifts(w, []admin.ShiftStatus{s})
}
