package main

import (
	"bytes"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/docs"
)

func TestSplitRow(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"| a | b |", []string{"a", "b"}},
		{"|a|b", []string{"a", "b"}},
		{"| `x [true\\|false]` | y |", []string{"`x [true|false]`", "y"}},
		{"| a | | b |", []string{"a", "", "b"}},
		{"| ends with an escaped pipe \\|", []string{"ends with an escaped pipe |"}},
		{"|", []string{""}},
		{"  | spaced |  ", []string{"spaced"}},
	} {
		if got := splitRow(tc.line); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitRow(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestParseTables(t *testing.T) {
	md := strings.Join([]string{
		"# Title",
		"| before | any chapter |",
		"|---|---|",
		"| r | s |",
		"## Corefile",
		"```",
		"| fenced | code |",
		"|---|---|",
		"## not a heading",
		"```",
		"### Options",
		"| Option | Default |",
		"|:---|---:|",
		"| `a` | `1` |",
		"| `b` | 2 |",
		"text after the table",
		"| not | a table |",
		"| no delimiter | row |",
		"### Sites",
		"| Option | Default |",
		"| --- | --- |",
	}, "\n")
	want := []mdTable{
		{chapter: "", heading: "", header: []string{"before", "any chapter"}, rows: [][]string{{"r", "s"}}},
		{chapter: "Corefile", heading: "Options", header: []string{"Option", "Default"}, rows: [][]string{{"`a`", "`1`"}, {"`b`", "2"}}},
		{chapter: "Corefile", heading: "Sites", header: []string{"Option", "Default"}},
	}
	if got := parseTables(md); !reflect.DeepEqual(got, want) {
		t.Errorf("parseTables:\n got %+v\nwant %+v", got, want)
	}
}

func TestCorefileOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		md      string
		want    []optionSection
		wantErr bool
	}{
		{
			name: "four columns, then one option a group",
			md: "## Corefile\n### Options\n| Option | Argument | Default | Meaning |\n|---|---|---|---|\n" +
				"| `a N` | a number | `1` | Does [a](x.md). |\n\n" +
				"| Option | Default | | Option | Default |\n|---|---|---|---|---|\n" +
				"| `b` | off | | `c` | on |\n| | | | `d` | `0` |\n",
			want: []optionSection{{heading: "Options", options: []option{
				{label: "`a N`", argument: "a number", def: "`1`", meaning: "Does [a](x.md)."},
				{label: "`b`", def: "off"}, {label: "`c`", def: "on"}, {label: "`d`", def: "`0`"},
			}}},
		},
		{
			name: "tables of other chapters and columns are left out",
			md: "## Corefile\n### Options\n| Option | Default |\n|---|---|\n| `a` | off |\n\n" +
				"| Mode | Meaning |\n|---|---|\n| failover | x |\n" +
				"### Sites\n| Option | Default |\n|---|---|\n| `site` | none |\n" +
				"## YAML zone file\n| Option | Default |\n|---|---|\n| `zone_key` | none |\n",
			want: []optionSection{
				{heading: "Options", options: []option{{label: "`a`", def: "off"}}},
				{heading: "Sites", options: []option{{label: "`site`", def: "none"}}},
			},
		},
		{
			name:    "no Options heading first",
			md:      "## Corefile\n### Sites\n| Option | Default |\n|---|---|\n| `site` | none |\n",
			wantErr: true,
		},
		{name: "no table", md: "## Corefile\n### Options\ntext\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := corefileOptions(tc.md)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want an error: %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestOptionNames(t *testing.T) {
	for _, tc := range []struct {
		label string
		want  []string
	}{
		{"`fallthrough [ZONES...]`", []string{"fallthrough"}},
		{"`geoip_custom` (or `geoip_custom_db`)", []string{"geoip_custom", "geoip_custom_db"}},
		{"`api_enable` and the other `api_*` options", []string{"api_enable", "api_*"}},
		{"no code", nil},
	} {
		if got := (option{label: tc.label}).names(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("names of %q = %q, want %q", tc.label, got, tc.want)
		}
	}
}

func TestPlainAndRoff(t *testing.T) {
	for _, tc := range []struct{ in, plain, roff string }{
		{"`a-b` see [Sites](#sites)", "a-b see Sites", `a\-b see Sites`},
		{"**NS**/**NAME**", "NS/NAME", "NS/NAME"},
		{`.starts a \ request`, `.starts a \ request`, `\&.starts a \e request`},
		{"'quoted", "'quoted", `\&'quoted`},
		{"integer ≥ 1, subnet → location", "integer ≥ 1, subnet → location", `integer \[u2265] 1, subnet \[u2192] location`},
	} {
		p := plain(tc.in)
		if p != tc.plain {
			t.Errorf("plain(%q) = %q, want %q", tc.in, p, tc.plain)
		}
		if r := roff(p); r != tc.roff {
			t.Errorf("roff(%q) = %q, want %q", p, r, tc.roff)
		}
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		s      string
		width  int
		indent string
		want   string
	}{
		{"one two three", 9, "", "one two\nthree\n"},
		{"one two three", 9, "  ", "  one two\n  three\n"},
		{"averyveryverylongword x", 5, "", "averyveryverylongword\nx\n"},
		{"", 9, "  ", ""},
	} {
		if got := wrap(tc.s, tc.width, tc.indent); got != tc.want {
			t.Errorf("wrap(%q, %d, %q) = %q, want %q", tc.s, tc.width, tc.indent, got, tc.want)
		}
	}
}

// corefileOptionLabels returns the Option cells of the option tables of configuration.md's
// Corefile chapter, read with nothing of help.go: a row's cells are split at its pipes (an
// escaped one, `\|`, is kept), and the tables that hold two options a row have the second in
// their fourth column.
func corefileOptionLabels(t *testing.T) []string {
	t.Helper()
	var labels []string
	chapter, inTable, twoPerRow := false, false, false
	for _, line := range strings.Split(docs.Configuration, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			chapter = line == "## Corefile"
		case !chapter:
		case strings.HasPrefix(line, "| Option |"):
			inTable, twoPerRow = true, strings.Count(line, "| Option |") == 2
		case !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable && !strings.HasPrefix(line, "|---"):
			cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")[1:]
			for i, c := range cells {
				if c = strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")); c != "" && (i == 0 || twoPerRow && i == 3) {
					labels = append(labels, c)
				}
			}
		}
	}
	if len(labels) < 40 {
		t.Fatalf("configuration.md's Corefile chapter has %d options, not the tens it documents", len(labels))
	}
	return labels
}

func TestHelpListsEveryOption(t *testing.T) {
	labels := corefileOptionLabels(t)
	for _, tc := range []struct {
		name   string
		args   []string
		prefix string // what starts the line of an option's label in the output
	}{
		{"text", nil, "  "},
		{"man page", []string{"-man"}, ".B "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runHelp(tc.args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			out := stdout.String()
			for _, l := range labels {
				text := plain(l)
				if tc.prefix == ".B " {
					text = roff(text)
				}
				first := strings.Fields(text)[0]
				if !strings.Contains(out, "\n"+tc.prefix+first) {
					t.Errorf("the %s has no line starting with option %q", tc.name, text)
				}
			}
		})
	}
}

// TestManPageFormats runs the man page through groff with every warning on, where groff is
// installed: troff must read all of it.
func TestManPageFormats(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("no groff")
	}
	var page, stderr bytes.Buffer
	if code := runHelp([]string{"-man"}, &page, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	cmd := exec.Command(groff, "-man", "-ww", "-z")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdin = &page
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff: %v\n%s", err, out)
	}
}

func TestHelpSelectsOptions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		want, skip []string
	}{
		{"one option", []string{"redis_db"}, 0, []string{"  redis_db\n      Default: 0."}, []string{"fallthrough", "USAGE"}},
		{"options of two sections", []string{"api_enable", "site"}, 0, []string{"\nOPTIONS\n", "\nSITES\n  site NAME"}, []string{"redis_db"}},
		{"an unknown option", []string{"redis_db", "no_such_option"}, 1, nil, []string{"redis_db"}},
		{"a bad flag", []string{"-nosuchflag"}, 2, nil, []string{"USAGE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runHelp(tc.args, &stdout, &stderr); code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tc.wantCode, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, s := range tc.skip {
				if strings.Contains(stdout.String(), s) {
					t.Errorf("output has %q:\n%s", s, stdout.String())
				}
			}
			if tc.wantCode == 1 && !strings.Contains(stderr.String(), "no_such_option") {
				t.Errorf("stderr does not name the unknown option: %s", stderr.String())
			}
		})
	}
}

func FuzzParseTables(f *testing.F) {
	f.Add(docs.Configuration[:4000])
	f.Add("## Corefile\n### Options\n| Option | Default | | Option | Default |\n|---|---|---|---|---|\n| `a` | b | | `c` | d |\n")
	f.Add("|\n|-|\n|\\|")
	f.Fuzz(func(t *testing.T, md string) {
		for _, tb := range parseTables(md) {
			if len(tb.header) == 0 {
				t.Fatalf("a table without a header: %+v", tb)
			}
			for _, row := range tb.rows {
				if len(row) == 0 {
					t.Fatalf("a row without cells: %+v", tb)
				}
			}
		}
		sections, err := corefileOptions(md)
		if err == nil && (len(sections) == 0 || sections[0].heading != "Options") {
			t.Fatalf("no error and no Options section: %+v", sections)
		}
		for _, s := range sections {
			for _, o := range s.options {
				if o.label == "" {
					t.Fatalf("an option without a label in %+v", s)
				}
			}
		}
	})
}
