package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/meridian-gslb/meridian/docs"
)

// helpUsage is the start of `meridian help` and the synopsis of the man page: the commands.
var helpUsage = []struct{ synopsis, meaning string }{
	{"meridian -conf FILE", "serve the Corefile FILE (default: Corefile in the working directory)"},
	{"meridian check -conf FILE", "validate a Corefile and the YAML files it names, then exit"},
	{"meridian ctl COMMAND ...", "query and steer a running meridian through its admin API"},
	{"meridian answers FILE...", "print the responses of an answer log (a dnstap file; - for standard input), one JSON object a line, with the decision each carries"},
	{"meridian help [-man] [OPTION...]", "this text; the man page meridian(8) in troff (-man); or only the Corefile options named"},
	{"meridian -version", "print Meridian's and CoreDNS's versions"},
}

// helpFlags are the server's command-line flags (CoreDNS's), for the man page.
var helpFlags = []struct{ flag, meaning string }{
	{"-conf FILE", "The Corefile to serve (default: Corefile in the working directory)."},
	{"-dns.port PORT", "The port of the server blocks whose address names none (default 53)."},
	{"-pidfile FILE", "Write the process ID to FILE."},
	{"-quiet", "Do not print the start-up banner."},
	{"-plugins", "List the plugins compiled in, then exit."},
	{"-version", "Print Meridian's and CoreDNS's versions, then exit."},
}

// helpSignals are the signals the server handles.
const helpSignals = "SIGUSR1 reloads the Corefile and every file it names (a Corefile that does not load is " +
	"logged and the running one kept); SIGUSR2 replaces the running binary by the one at its path without " +
	"losing a query (see docs/operations.md, \"Upgrading without a lost query\"); SIGTERM and SIGINT stop the server."

// runHelp prints the commands and the Corefile options of docs/configuration.md (all of them,
// or those named in args), as text or, with -man, as the man page meridian(8). It returns the
// process exit code.
func runHelp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	fs.SetOutput(stderr)
	man := fs.Bool("man", false, "write the man page meridian(8) in troff")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sections, err := corefileOptions(docs.Configuration)
	if err != nil {
		fmt.Fprintln(stderr, "meridian help:", err)
		return 1
	}
	if names := fs.Args(); len(names) > 0 {
		var missing []string
		sections, missing = selectOptions(sections, names)
		if len(missing) > 0 {
			fmt.Fprintf(stderr, "meridian help: no Corefile option %s (meridian help lists them all)\n", strings.Join(missing, ", "))
			return 1
		}
	}
	if *man {
		writeMan(stdout, sections, Version)
	} else {
		writeHelp(stdout, sections, len(fs.Args()) == 0)
	}
	return 0
}

// mdTable is a pipe table of a markdown page, with the headings it sits under.
type mdTable struct {
	chapter string // the "## " heading
	heading string // the "### " heading, or "" before the chapter's first one
	header  []string
	rows    [][]string
}

// parseTables returns every pipe table of md (a header row, a delimiter row of dashes, then the
// rows up to the first line that does not start with "|"), in order. Lines inside fenced code
// blocks are not tables nor headings.
func parseTables(md string) []mdTable {
	var (
		tables           []mdTable
		chapter, heading string
		fenced           bool
	)
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
		case fenced:
		case strings.HasPrefix(line, "## "):
			chapter, heading = strings.TrimSpace(line[3:]), ""
		case strings.HasPrefix(line, "### "):
			heading = strings.TrimSpace(line[4:])
		case strings.HasPrefix(line, "|") && i+1 < len(lines) && isDelimiterRow(lines[i+1]):
			t := mdTable{chapter: chapter, heading: heading, header: splitRow(line)}
			for i += 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				t.rows = append(t.rows, splitRow(lines[i]))
			}
			i--
			tables = append(tables, t)
		}
	}
	return tables
}

// delimiterCell matches a cell of a table's delimiter row: dashes, with alignment colons.
var delimiterCell = regexp.MustCompile(`^:?-+:?$`)

// isDelimiterRow reports whether line is the row under a table's header.
func isDelimiterRow(line string) bool {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return false
	}
	cells := splitRow(line)
	for _, c := range cells {
		if !delimiterCell.MatchString(c) {
			return false
		}
	}
	return len(cells) > 0
}

// splitRow splits a table row into its trimmed cells, at the pipes that are not escaped
// (`\|` is a pipe inside a cell); the pipes at the start and end of the row enclose no cell.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// option is one row of an option table, its cells in markdown.
type option struct {
	label    string // the Option cell: one or more options, in backquotes
	argument string
	def      string
	meaning  string
}

// names returns the options that the label names: the first word of each code span.
func (o option) names() []string {
	var names []string
	for _, m := range codeSpan.FindAllStringSubmatch(o.label, -1) {
		if f := strings.Fields(m[1]); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

// optionSection is the options of the tables under one heading.
type optionSection struct {
	heading string
	options []option
}

// errNoOptions is corefileOptions's error when the page has no option table under
// "## Corefile" and "### Options".
var errNoOptions = errors.New(`docs/configuration.md has no option table under "## Corefile", "### Options"`)

// corefileOptions returns the options of the tables of md's "Corefile" chapter whose first
// column is "Option", grouped by heading in the page's order. A table may hold several options
// a row: its header then repeats the columns, the groups separated by a column with an empty
// header (Option | Default | | Option | Default).
func corefileOptions(md string) ([]optionSection, error) {
	var sections []optionSection
	for _, t := range parseTables(md) {
		if t.chapter != "Corefile" || len(t.header) == 0 || t.header[0] != "Option" {
			continue
		}
		if len(sections) == 0 || sections[len(sections)-1].heading != t.heading {
			sections = append(sections, optionSection{heading: t.heading})
		}
		s := &sections[len(sections)-1]
		s.options = append(s.options, tableOptions(t)...)
	}
	if len(sections) == 0 || sections[0].heading != "Options" {
		return nil, errNoOptions
	}
	return sections, nil
}

// tableOptions returns the options of the rows of t, group by group (see corefileOptions);
// a group whose Option cell is empty is no option.
func tableOptions(t mdTable) []option {
	var groups [][]int // the header's column indexes of each group
	start := 0
	for i := 0; i <= len(t.header); i++ {
		if i == len(t.header) || t.header[i] == "" {
			if i > start {
				groups = append(groups, []int{start, i})
			}
			start = i + 1
		}
	}
	var options []option
	for _, row := range t.rows {
		for _, g := range groups {
			var o option
			for col := g[0]; col < g[1] && col < len(row); col++ {
				switch t.header[col] {
				case "Option":
					o.label = row[col]
				case "Argument":
					o.argument = row[col]
				case "Default":
					o.def = row[col]
				case "Meaning":
					o.meaning = row[col]
				}
			}
			if o.label != "" {
				options = append(options, o)
			}
		}
	}
	return options
}

// selectOptions returns the options of sections that any of names names, and the names that
// none does.
func selectOptions(sections []optionSection, names []string) (selected []optionSection, missing []string) {
	found := map[string]bool{}
	for _, s := range sections {
		kept := optionSection{heading: s.heading}
		for _, o := range s.options {
			for _, n := range o.names() {
				if slices.Contains(names, n) {
					kept.options = append(kept.options, o)
					found[n] = true
					break
				}
			}
		}
		if len(kept.options) > 0 {
			selected = append(selected, kept)
		}
	}
	for _, n := range names {
		if !found[n] {
			missing = append(missing, n)
		}
	}
	return selected, missing
}

var (
	// codeSpan matches a markdown code span; its text is the submatch.
	codeSpan = regexp.MustCompile("`([^`]*)`")
	// mdLink matches a markdown link; its text is the submatch.
	mdLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	// strong matches bold text; the text is the submatch.
	strong = regexp.MustCompile(`\*\*([^*]*)\*\*`)
)

// plain returns the markdown inline text s as plain text: code spans, links and bold text
// become their text.
func plain(s string) string {
	s = mdLink.ReplaceAllString(s, "$1")
	s = strong.ReplaceAllString(s, "$1")
	return codeSpan.ReplaceAllString(s, "$1")
}

// summary is an option's argument and default in one sentence, in plain text.
func (o option) summary() string {
	var parts []string
	if o.argument != "" {
		parts = append(parts, "Argument: "+plain(o.argument)+".")
	}
	if o.def != "" {
		parts = append(parts, "Default: "+plain(o.def)+".")
	}
	return strings.Join(parts, " ")
}

// helpWidth is the width that the help text is wrapped to.
const helpWidth = 80

// writeHelp writes the help text: the commands when withUsage, then the option sections.
func writeHelp(w io.Writer, sections []optionSection, withUsage bool) {
	if withUsage {
		fmt.Fprintln(w, "USAGE")
		for _, u := range helpUsage {
			fmt.Fprintf(w, "  %s\n%s", u.synopsis, wrap(u.meaning, helpWidth, "      "))
		}
		fmt.Fprintf(w, "\nSIGNALS\n%s\n", wrap(helpSignals, helpWidth, "  "))
		fmt.Fprint(w, wrap("The options of the gslb block of a Corefile follow, from docs/configuration.md "+
			"(meridian help OPTION... prints only those named).", helpWidth, ""))
	}
	for _, s := range sections {
		fmt.Fprintf(w, "\n%s\n", strings.ToUpper(s.heading))
		for _, o := range s.options {
			fmt.Fprint(w, wrap(plain(o.label), helpWidth, "  "))
			if sum := o.summary(); sum != "" {
				fmt.Fprint(w, wrap(sum, helpWidth, "      "))
			}
			if o.meaning != "" {
				fmt.Fprint(w, wrap(plain(o.meaning), helpWidth, "      "))
			}
		}
	}
}

// wrap returns s in lines of at most width characters (a longer word stands alone), each
// starting with indent and ending with a newline.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(s) {
		if line != indent && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += word
	}
	if line != indent {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// writeMan writes the man page meridian(8) in troff (man macros).
func writeMan(w io.Writer, sections []optionSection, version string) {
	fmt.Fprintf(w, ".TH MERIDIAN 8 \"\" \"meridian %s\" \"System Administration\"\n", roff(version))
	fmt.Fprintln(w, ".SH NAME")
	fmt.Fprintln(w, `meridian \- global server load balancing DNS server (CoreDNS with the gslb plugin)`)
	fmt.Fprintln(w, ".SH SYNOPSIS")
	for _, u := range helpUsage {
		fmt.Fprintf(w, ".B %s\n.br\n", roff(u.synopsis))
	}
	fmt.Fprintln(w, ".SH DESCRIPTION")
	fmt.Fprintln(w, roff("Meridian answers DNS queries for the names of the zones its Corefile's gslb blocks serve, "+
		"with the addresses of the backends that are up, chosen by each record's mode (failover, "+
		"round robin, weighted, geographic, latency). It health-checks the backends itself, "+
		"or shares the checks with other instances through Redis or DNS."))
	fmt.Fprintln(w, ".SH COMMANDS")
	for _, u := range helpUsage {
		fmt.Fprintf(w, ".TP\n.B %s\n%s\n", roff(u.synopsis), roff(u.meaning))
	}
	fmt.Fprintln(w, ".SH OPTIONS")
	for _, f := range helpFlags {
		fmt.Fprintf(w, ".TP\n.B %s\n%s\n", roff(f.flag), roff(f.meaning))
	}
	fmt.Fprintln(w, ".SH COREFILE OPTIONS")
	fmt.Fprintln(w, roff("The options of the gslb block of a Corefile, from docs/configuration.md."))
	for _, s := range sections {
		fmt.Fprintf(w, ".SS %s\n", roff(s.heading))
		for _, o := range s.options {
			fmt.Fprintf(w, ".TP\n.B %s\n", roff(plain(o.label)))
			if sum := o.summary(); sum != "" {
				fmt.Fprintln(w, roff(sum))
			}
			if o.meaning != "" {
				fmt.Fprintf(w, ".br\n%s\n", roff(plain(o.meaning)))
			}
		}
	}
	fmt.Fprintln(w, ".SH SIGNALS")
	fmt.Fprintln(w, roff(helpSignals))
	fmt.Fprintln(w, ".SH FILES")
	fmt.Fprintln(w, ".TP\n.I /etc/meridian/Corefile\nThe configuration the systemd unit serves (meridian.service).")
	fmt.Fprintln(w, ".TP\n.I /var/lib/meridian/\nThe unit's state directory: the overrides file and the state file.")
	fmt.Fprintln(w, ".SH SEE ALSO")
	fmt.Fprintln(w, roff("systemctl(1), journalctl(1); the documentation in docs/ of Meridian's source: "+
		"configuration.md, operations.md, api.md."))
}

// roffEscaper escapes the characters troff gives a meaning to in running text.
var roffEscaper = strings.NewReplacer(`\`, `\e`, "-", `\-`)

// roff returns s escaped for a troff text line: backslashes and hyphens, a leading period or
// apostrophe (which would start a request), and every character outside ASCII as its Unicode
// escape, which troff reads whatever the locale.
func roff(s string) string {
	s = roffEscaper.Replace(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	var b strings.Builder
	for _, r := range s {
		if r > unicode.MaxASCII {
			fmt.Fprintf(&b, `\[u%04X]`, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
