package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
)

// ctlAudit is "meridian ctl audit [-n N]": the latest entries of the audit log.
func ctlAudit(fs *flag.FlagSet) ctlRun {
	n := fs.Int("n", 20, "how many entries, newest first (at most 1000)")
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if err := noArgs(args); err != nil {
			return nil, err
		}
		if *n < 1 {
			return nil, fmt.Errorf("%w: -n %d is not positive", errUsage, *n)
		}
		res, err := c.Audit(ctx, *n)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
}

// ctlWhoAmI is "meridian ctl whoami": who the API takes the credentials for.
func ctlWhoAmI(*flag.FlagSet) ctlRun {
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if err := noArgs(args); err != nil {
			return nil, err
		}
		id, err := c.WhoAmI(ctx)
		if err != nil {
			return nil, err
		}
		return id, nil
	}
}

// printAudit writes audit entries as a table, one line each.
func printAudit(w io.Writer, entries []admin.AuditEntry) {
	fmt.Fprintln(w, "TIME\tWHO\tROLE\tFROM\tACTION\tBACKENDS\tREASON\tRESULT")
	for _, e := range entries {
		result := fmt.Sprint(e.Status)
		if e.Error != "" {
			result += " " + e.Error
		}
		what := e.Selector
		if len(e.Backends) > 0 {
			what = fmt.Sprintf("%d (%s)", len(e.Backends), strings.Join(e.Backends[:min(2, len(e.Backends))], ", "))
			if len(e.Backends) > 2 {
				what = strings.TrimSuffix(what, ")") + ", ...)"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format(time.DateTime), cmp.Or(e.Who, "anonymous"), e.Role,
			e.From, e.Action, cmp.Or(what, "-"), cmp.Or(e.Reason, "-"), result)
	}
}
