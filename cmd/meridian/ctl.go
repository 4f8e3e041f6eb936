package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/canary"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/drill"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// ctlUsage is printed for "meridian ctl" without a valid command.
const ctlUsage = `usage: meridian ctl COMMAND [flags]

Commands:
  status   [selector] [-state up|down|unknown]      list backends, their health and overrides
  enable   selector [-for DURATION] [-reason TEXT]  serve the backends, even if the YAML disables them
  disable  selector [-for DURATION] [-reason TEXT]  take the backends out of every answer
  drain    selector [-for DURATION] [-reason TEXT]  disable for maintenance, usually with -for;
           [-at TIME | -in DURATION]                scheduled: served until then, with drain_ttl
                                                    from one record_ttl before (-for counts from then)
  force-up selector [-for DURATION] [-reason TEXT]  serve as healthy whatever the probes say
  clear    selector                                 remove the overrides: the YAML decides again
           Each takes -force (with -reason): make a change that the drain guard refuses, because
           it would leave records below their drain_guard; the refusal lists them.
  explain  NAME [-type A] [-client IP] [-ecs PREFIX] [-down SEL] [-drained SEL]
                    the answer to a query, and how it was chosen; -down and -drained (a
                    backend key, an address, site:NAME or location:NAME; repeatable) ask what it would be
  drills   the drills, their next runs and last results
  drill    [NAME] [-down SEL] [-drained SEL] [-primaries]
                    run a drill now (a live one drains for real), or a what-if over every record;
                    prints what each record touched would answer, its failover time against its
                    target and whether it breaks its drain guard; exits 1 when it fails
  shift    -record NAME -from SEL -to SEL [-steps 10,25,50,100] [-every 5m]
           [-signal failure_rate|metric|prometheus [-query PROMQL] -above X|-below X] [-reason TEXT]
                    move the record's weight from the -from backends to the -to ones in steps,
                    rolling back to the last good step by itself when the signal degrades
  shifts   the shifts, their steps and states
  shift-cancel ID   end a shift: the record's configured weights serve again
  canaries [-run]   what the resolvers and parent servers the canaries ask answer, against this
                    instance (the last round, or one now); exits 1 on a mismatch
  reload   reload the YAML files
  validate FILE [-zone ZONE] [-strict]              check a zone file, without a running meridian

CoreDNS-GSLB's gslbctl forms work too: "backends enable|disable [--tags T] [--address A]
[--location L]" is enable|disable, and --address is -address-prefix.

Selector (every flag given must match):
  -key RECORD|ADDRESS|PORT (repeatable)  -zone ZONE  -record NAME  -location LOCATION
  -address-prefix PREFIX (CIDR, or the beginning of the address)  -tags TAG[,TAG...] (any of them)

Connection (flags, or the environment):
  -api URL          MERIDIAN_API           default http://127.0.0.1:8080
  -user NAME        MERIDIAN_API_USER      basic authentication
  -password SECRET  MERIDIAN_API_PASSWORD
  -token SECRET     MERIDIAN_API_TOKEN     bearer authentication
  -cacert FILE      MERIDIAN_API_CACERT    CA certificate that signed the API's certificate
  -insecure                                do not verify the API's certificate
  -timeout 10s
Without -api and MERIDIAN_API, the Corefile that CORE_DNS_COREFILE names (as for gslbctl)
gives the address and credentials of its first gslb block with api_enable.
Output: -o table (default) or -o json.

Run "meridian ctl COMMAND -h" for a command's flags.
`

// ctlCommand is one subcommand: it adds its flags to fs, and returns the function that runs it.
type ctlCommand func(fs *flag.FlagSet) ctlRun

// ctlRun runs a subcommand with its positional arguments, and returns what to print.
type ctlRun func(ctx context.Context, c *admin.Client, args []string) (any, error)

// ctlCommandNamed returns the subcommand called name, or nil.
func ctlCommandNamed(name string) ctlCommand {
	switch name {
	case "status":
		return ctlStatus
	case "enable", "disable", "drain", "force-up", "clear":
		return ctlAction(overlay.Action(name))
	case "explain":
		return ctlExplain
	case "reload":
		return ctlReload
	case "drills":
		return ctlDrills
	case "drill":
		return ctlDrill
	case "shift":
		return ctlShift
	case "shifts":
		return ctlShifts
	case "shift-cancel":
		return ctlShiftCancel
	case "canaries":
		return ctlCanaries
	}
	return nil
}

// gslbctlArgs rewrites the command forms of CoreDNS-GSLB's gslbctl that differ from ours:
// "backends enable ..." and "backends disable ..." are "enable ..." and "disable ...".
func gslbctlArgs(args []string) []string {
	if len(args) >= 2 && args[0] == "backends" && (args[1] == "enable" || args[1] == "disable") {
		return args[1:]
	}
	return args
}

// errUsage marks a command line that cannot run.
var errUsage = errors.New("usage")

// runCtl runs "meridian ctl COMMAND ..." with args (after "ctl"), reading the connection
// settings left out of the flags from getenv. It returns the process exit code: 0, 1 when the
// API refused or failed, 2 for a wrong command line.
func runCtl(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	args = gslbctlArgs(args)
	if len(args) > 0 && args[0] == "validate" {
		return runValidate(args[1:], stdout, stderr)
	}
	var cmd ctlCommand
	if len(args) > 0 {
		cmd = ctlCommandNamed(args[0])
	}
	if cmd == nil {
		if len(args) > 0 && args[0] != "help" && args[0] != "-h" && args[0] != "--help" {
			fmt.Fprintf(stderr, "meridian ctl: unknown command %q\n", args[0])
		}
		fmt.Fprint(stderr, ctlUsage)
		return 2
	}
	fs := flag.NewFlagSet("meridian ctl "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := addConnFlags(fs)
	run := cmd(fs)
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return 2
	}
	client, err := conn.client(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "meridian ctl: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), conn.timeout)
	defer cancel()
	res, err := run(ctx, client, pos)
	if errors.Is(err, errUsage) {
		fmt.Fprintf(stderr, "meridian ctl %s: %v\n", args[0], err)
		return 2
	}
	if res != nil {
		if perr := printResult(stdout, res, conn.output); perr != nil {
			fmt.Fprintf(stderr, "meridian ctl: %v\n", perr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "meridian ctl %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// parseInterleaved parses fs from args, allowing flags after positional arguments, and
// returns the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// connFlags are the connection and output flags every command takes.
type connFlags struct {
	api, user, password, token, cacert, output string
	insecure                                   bool
	timeout                                    time.Duration
}

func addConnFlags(fs *flag.FlagSet) *connFlags {
	c := &connFlags{}
	fs.StringVar(&c.api, "api", "", "admin API URL (env MERIDIAN_API, default http://127.0.0.1:8080)")
	fs.StringVar(&c.user, "user", "", "basic authentication user (env MERIDIAN_API_USER)")
	fs.StringVar(&c.password, "password", "", "basic authentication password (env MERIDIAN_API_PASSWORD)")
	fs.StringVar(&c.token, "token", "", "bearer token (env MERIDIAN_API_TOKEN)")
	fs.StringVar(&c.cacert, "cacert", "", "PEM file of the CA that signed the API's certificate (env MERIDIAN_API_CACERT)")
	fs.BoolVar(&c.insecure, "insecure", false, "do not verify the API's TLS certificate")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "time limit of the request")
	fs.StringVar(&c.output, "o", "table", "output: table or json")
	return c
}

// client returns the API client the flags, or else the environment, describe.
func (c *connFlags) client(getenv func(string) string) (*admin.Client, error) {
	if c.output != "table" && c.output != "json" {
		return nil, fmt.Errorf("-o %s: want table or json", c.output)
	}
	or := func(flag, env, def string) string {
		if flag != "" {
			return flag
		}
		if v := getenv(env); v != "" {
			return v
		}
		return def
	}
	def := admin.Client{BaseURL: "http://127.0.0.1:8080"}
	if file := getenv("CORE_DNS_COREFILE"); file != "" {
		var err error
		if def, err = corefileAPI(file); err != nil {
			return nil, fmt.Errorf("CORE_DNS_COREFILE: %w", err)
		}
	}
	base := or(c.api, "MERIDIAN_API", def.BaseURL)
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: c.insecure}
	if file := or(c.cacert, "MERIDIAN_API_CACERT", ""); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("-cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-cacert: no certificate in %s", file)
		}
		tlsConfig.RootCAs = pool
	}
	return &admin.Client{
		BaseURL:  base,
		HTTP:     &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment}},
		User:     or(c.user, "MERIDIAN_API_USER", def.User),
		Password: or(c.password, "MERIDIAN_API_PASSWORD", def.Password),
		Token:    or(c.token, "MERIDIAN_API_TOKEN", def.Token),
	}, nil
}

// corefileAPI returns the address and credentials of the admin API that the first gslb block
// with api_enable in the Corefile at path serves, as gslbctl finds its API (it reads the file
// that CORE_DNS_COREFILE names). An unspecified listen address (0.0.0.0, ::) is reached on
// loopback.
func corefileAPI(path string) (admin.Client, error) {
	blocks, errs := gslbBlocks(path)
	if len(errs) > 0 {
		return admin.Client{}, errors.Join(errs...)
	}
	for _, b := range blocks {
		o := b.Options.API
		if !o.Enable {
			continue
		}
		host, port, err := net.SplitHostPort(o.Addr())
		if err != nil {
			return admin.Client{}, fmt.Errorf("%s: api address %s: %w", path, o.Addr(), err)
		}
		if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		scheme := "http"
		if o.TLSCert != "" {
			scheme = "https"
		}
		return admin.Client{BaseURL: scheme + "://" + net.JoinHostPort(host, port), User: o.BasicUser, Password: o.BasicPass, Token: o.Token}, nil
	}
	return admin.Client{}, fmt.Errorf("%s: no gslb block has api_enable", path)
}

// listFlag is a flag that may repeat, each value a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

func addSelectorFlags(fs *flag.FlagSet, sel *admin.Selector) {
	fs.Var((*listFlag)(&sel.Keys), "key", "backend key record|address|port (repeatable)")
	fs.StringVar(&sel.Zone, "zone", "", "zone")
	fs.StringVar(&sel.Record, "record", "", "record name")
	fs.StringVar(&sel.Location, "location", "", "location, exactly")
	fs.StringVar(&sel.AddressPrefix, "address-prefix", "", "CIDR prefix, or the beginning of the address as written")
	fs.StringVar(&sel.AddressPrefix, "address", "", "the same as -address-prefix (gslbctl's name)")
	fs.Var((*listFlag)(&sel.Tags), "tags", "comma-separated tags: a backend with any of them matches")
}

func noArgs(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, args[0])
	}
	return nil
}

func ctlStatus(fs *flag.FlagSet) ctlRun {
	var sel admin.Selector
	addSelectorFlags(fs, &sel)
	state := fs.String("state", "", "only backends in this state: up, down or unknown")
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if err := noArgs(args); err != nil {
			return nil, err
		}
		b, err := c.Backends(ctx, sel, admin.State(*state))
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}

func ctlAction(action overlay.Action) ctlCommand {
	return func(fs *flag.FlagSet) ctlRun {
		var req admin.ActionRequest
		addSelectorFlags(fs, &req.Selector)
		if action != overlay.Clear {
			fs.StringVar(&req.Duration, "for", "", "how long the override lasts (30m, 2h), from its start; for ever when left out")
		}
		fs.StringVar(&req.Reason, "reason", "", "a note kept with the override (needed with -force)")
		fs.BoolVar(&req.Force, "force", false, "go past the drain guard of the records the change leaves below it (needs -reason)")
		var at string
		if action == overlay.Drain {
			fs.StringVar(&at, "at", "", "start the drain at TIME: RFC 3339, or local \"2006-01-02 15:04[:05]\" or \"15:04[:05]\" (today)")
			fs.StringVar(&req.StartsIn, "in", "", "start the drain after DURATION (10m)")
		}
		return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
			if err := noArgs(args); err != nil {
				return nil, err
			}
			if at != "" {
				if req.StartsIn != "" {
					return nil, fmt.Errorf("%w: give -at or -in, not both", errUsage)
				}
				t, err := parseAt(at, time.Now())
				if err != nil {
					return nil, fmt.Errorf("%w: -at: %v", errUsage, err)
				}
				req.Starts = t
			}
			res, err := c.Act(ctx, action, req)
			if se, ok := errors.AsType[*admin.StatusError](err); ok && len(se.Breaches) > 0 {
				return se.Breaches, fmt.Errorf("refused by the drain guard: the change would leave these records below their drain_guard; -force -reason TEXT to go ahead")
			}
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	}
}

// parseAt parses the -at time of a scheduled drain: RFC 3339, or a local date and time, or a
// local time of today's date (now's).
func parseAt(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			y, m, d := now.Date()
			return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, now.Location()), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not RFC 3339 (2030-01-02T10:00:00Z), a local \"2006-01-02 15:04\" or \"15:04\"", s)
}

func ctlExplain(fs *flag.FlagSet) ctlRun {
	qtype := fs.String("type", "A", "query type")
	client := fs.String("client", "", "source address of the query (default: this machine's address as the API sees it)")
	ecs := fs.String("ecs", "", "EDNS Client Subnet, a CIDR prefix")
	var down, drained selectorList
	fs.Var(&down, "down", "what if this backend (key, address, site:NAME or location:NAME) were down; repeatable")
	fs.Var(&drained, "drained", "what if this backend (key, address, site:NAME or location:NAME) were drained; repeatable")
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("%w: want one NAME, got %d arguments", errUsage, len(args))
		}
		q := admin.Query{Name: args[0], Type: *qtype, Down: down, Drained: drained}
		var err error
		if *client != "" {
			if q.Client, err = netip.ParseAddr(*client); err != nil {
				return nil, fmt.Errorf("%w: -client: %v", errUsage, err)
			}
		}
		if *ecs != "" {
			if q.ECS, err = netip.ParsePrefix(*ecs); err != nil {
				return nil, fmt.Errorf("%w: -ecs: %v", errUsage, err)
			}
		}
		exp, err := c.Explain(ctx, q)
		if err != nil {
			return nil, err
		}
		return exp, nil
	}
}

// selectorList is a repeatable flag of what-if selectors.
type selectorList []string

// String implements flag.Value.
func (l *selectorList) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value.
func (l *selectorList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func ctlReload(*flag.FlagSet) ctlRun {
	return func(ctx context.Context, c *admin.Client, args []string) (any, error) {
		if err := noArgs(args); err != nil {
			return nil, err
		}
		res, err := c.Reload(ctx)
		if len(res.Blocks) == 0 {
			return nil, err
		}
		return res, err
	}
}

// printResult writes res as JSON or as a table.
func printResult(w io.Writer, res any, output string) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	switch v := res.(type) {
	case []admin.BackendStatus:
		printStatus(tw, v)
	case admin.ActionResult:
		printAction(tw, v)
	case []admin.Breach:
		printBreaches(tw, v)
	case []drill.Status:
		printDrills(tw, v)
	case drill.Report:
		printDrillReport(tw, v)
	case []admin.ShiftStatus:
		printShifts(tw, v)
	case admin.ShiftStatus:
		printShift(tw, v)
	case canary.Report:
		printCanaries(tw, v)
	case admin.Explanation:
		printExplanation(tw, v)
	case admin.ReloadResult:
		fmt.Fprintln(tw, "ZONES\tRESULT")
		for _, b := range v.Blocks {
			fmt.Fprintf(tw, "%s\t%s\n", strings.Join(b.Zones, " "), cmp.Or(b.Error, "reloaded"))
		}
	}
	return tw.Flush()
}

func printStatus(w io.Writer, backends []admin.BackendStatus) {
	fmt.Fprintln(w, "RECORD\tBACKEND\tSTATE\tSERVED\tOVERRIDE\tLATENCY\tCHANGED\tREASON")
	for _, b := range backends {
		served := "no"
		if b.Healthy {
			served = "yes"
		}
		latency := "-"
		if b.Latency > 0 {
			latency = time.Duration(b.Latency).Round(10 * time.Microsecond).String()
		}
		override := overrideText(b.Override)
		if b.Held != "" {
			override += " (held by the drain guard)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Record, hostPort(b.Address, b.Port), b.State, served,
			override, latency, ago(b.LastChange), cmp.Or(b.Reason, "-"))
	}
}

// printBreaches lists the records a change would leave below their drain guard.
func printBreaches(w io.Writer, breaches []admin.Breach) {
	fmt.Fprintln(w, "RECORD\tFAMILY\tSERVED AFTER\tSERVED NOW\tSHARE AFTER\tDRAIN GUARD")
	for _, b := range breaches {
		fmt.Fprintf(w, "%s\t%s\t%d of %d\t%d\t%.1f%%\t%s\n", b.Record, b.Family, b.Served, b.Backends, b.ServedBefore, b.Share*100, config.DrainGuard{MinHealthy: b.Guard.MinHealthy, MinShare: b.Guard.MinShare})
	}
}

func printAction(w io.Writer, res admin.ActionResult) {
	fmt.Fprintln(w, "RECORD\tBACKEND\tKEY")
	for _, t := range res.Backends {
		fmt.Fprintf(w, "%s\t%s\t%s\n", t.Record, hostPort(t.Address, t.Port), t.Key)
	}
	until := ""
	if !res.Starts.IsZero() {
		until = " from " + res.Starts.Local().Format(time.RFC3339)
	}
	if !res.Expires.IsZero() {
		until += " until " + res.Expires.Local().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "%s: %d backends%s\n", res.Action, len(res.Backends), until)
}

func printExplanation(w io.Writer, e admin.Explanation) {
	q := e.Query
	fmt.Fprintf(w, "%s %s from %s", q.Name, q.Type, q.Client)
	if q.ECS.IsValid() {
		fmt.Fprintf(w, " (ECS %s)", q.ECS)
	}
	fmt.Fprintf(w, ": %s, zone %s, record %s\n\nANSWER\n", e.Rcode, e.Zone, cmp.Or(e.Record, "none"))
	for _, rr := range e.Answer {
		fmt.Fprintln(w, rr)
	}
	fmt.Fprintln(w, "\nSTEPS")
	for i, s := range e.Steps {
		fmt.Fprintf(w, "%d.\t%s\t%s\n", i+1, s.Stage, s.Text)
		if len(s.Fields) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(s.Fields)) {
				parts = append(parts, k+"="+s.Fields[k])
			}
			fmt.Fprintf(w, "\t\t%s\n", strings.Join(parts, " "))
		}
		if len(s.Backends) > 0 {
			fmt.Fprintf(w, "\t\tbackends: %s\n", strings.Join(s.Backends, ", "))
		}
	}
}

func hostPort(addr string, port int) string {
	if port == 0 {
		return addr
	}
	return net.JoinHostPort(addr, strconv.Itoa(port))
}

func overrideText(o *overlay.Override) string {
	if o == nil {
		return "-"
	}
	s := string(o.Action)
	if !o.Starts.IsZero() {
		s += " from " + o.Starts.Local().Format(time.DateTime)
	}
	if !o.Expires.IsZero() {
		s += " until " + o.Expires.Local().Format(time.DateTime)
	}
	if o.Forced {
		s += " (forced)"
	}
	return s
}

// ago tells how long ago t was, to the second; "-" for the zero time.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}
