package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docExample is a fenced block of a Markdown file marked complete: its info string is
// "corefile complete" or "yaml complete [file=NAME] [zone=ORIGIN [profiles=NAME]]" (see
// docs/contributing.md).
type docExample struct {
	where    string // file:line of the opening fence
	lang     string // "corefile" or "yaml"
	file     string // yaml: the name the other examples of the same document refer to it by
	zone     string // yaml: the zone it is loaded as on its own, with a Corefile of its own
	profiles string // yaml with zone: the healthcheck_profiles file of that Corefile
	text     string
}

// fence matches the opening or closing line of a fenced code block.
var fence = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})\\s*(.*)$")

// extractExamples returns the blocks of the Markdown md (named name) marked complete. It fails
// on a marked block of another language, an unknown attribute, a YAML block that is neither a
// file nor a zone, or a block that is not closed.
func extractExamples(name string, md []byte) ([]docExample, error) {
	var out []docExample
	sc := bufio.NewScanner(bytes.NewReader(md))
	line := 0
	for sc.Scan() {
		line++
		m := fence.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		open, words := m[1], strings.Fields(m[2])
		start := line
		var body strings.Builder
		closed := false
		for sc.Scan() {
			line++
			if c := fence.FindStringSubmatch(sc.Text()); c != nil && c[2] == "" && c[1][0] == open[0] && len(c[1]) >= len(open) {
				closed = true
				break
			}
			body.WriteString(sc.Text() + "\n")
		}
		where := fmt.Sprintf("%s:%d", name, start)
		if !closed {
			return nil, fmt.Errorf("%s: the code block is not closed", where)
		}
		if len(words) < 2 || words[1] != "complete" {
			continue
		}
		ex := docExample{where: where, lang: words[0], text: body.String()}
		for _, attr := range words[2:] {
			k, v, _ := strings.Cut(attr, "=")
			switch {
			case k == "file" && v != "":
				ex.file = v
			case k == "zone" && v != "":
				ex.zone = v
			case k == "profiles" && v != "":
				ex.profiles = v
			default:
				return nil, fmt.Errorf("%s: unknown attribute %q of a complete example", where, attr)
			}
		}
		switch {
		case ex.lang != "corefile" && ex.lang != "yaml":
			return nil, fmt.Errorf("%s: a complete example is corefile or yaml, not %q", where, ex.lang)
		case ex.lang == "corefile" && (ex.file != "" || ex.zone != "" || ex.profiles != ""):
			return nil, fmt.Errorf("%s: a Corefile example takes no attributes", where)
		case ex.lang == "yaml" && ex.file == "" && ex.zone == "":
			return nil, fmt.Errorf("%s: a complete YAML example needs file=NAME or zone=ORIGIN", where)
		case ex.profiles != "" && ex.zone == "":
			return nil, fmt.Errorf("%s: profiles=NAME goes with zone=ORIGIN", where)
		}
		out = append(out, ex)
	}
	return out, sc.Err()
}

// rootDirective matches the root directive of a Corefile, whose directory checkDocExamples
// replaces with its own.
var rootDirective = regexp.MustCompile(`(?m)^(\s*root\s+)\S+`)

// checkDocExamples loads the examples of one document as `meridian check` does, in dir, which
// becomes the working directory and the root of every Corefile: each YAML example with a file
// name is written there first; then each Corefile, and each YAML example with a zone under a
// Corefile of its own (with its profiles file), is checked. It returns every error, each prefixed with its example.
func checkDocExamples(t *testing.T, dir string, examples []docExample) []error {
	t.Chdir(dir)
	for _, ex := range examples {
		if ex.file == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(ex.file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ex.file, []byte(ex.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var errs []error
	for i, ex := range examples {
		corefile := ""
		switch {
		case ex.lang == "corefile":
			corefile = rootDirective.ReplaceAllString(ex.text, "${1}"+dir)
		case ex.zone != "":
			zoneFile := fmt.Sprintf("zone-%d.yml", i)
			if err := os.WriteFile(zoneFile, []byte(ex.text), 0o644); err != nil {
				t.Fatal(err)
			}
			corefile = fmt.Sprintf("%s {\n    gslb %s {\n", ex.zone, zoneFile)
			if ex.profiles != "" {
				corefile += "        healthcheck_profiles " + ex.profiles + "\n"
			}
			corefile += "    }\n}\n"
		default:
			continue
		}
		path := fmt.Sprintf("Corefile-%d", i)
		if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
			t.Fatal(err)
		}
		_, found := checkCorefile(path) // an example may show what warns
		for _, err := range found {
			errs = append(errs, fmt.Errorf("%s: %w", ex.where, err))
		}
	}
	return errs
}

func TestExtractExamples(t *testing.T) {
	md := "# Doc\n\n" +
		"```corefile complete\nexample.org {\n    gslb example.org.yml\n}\n```\n\n" +
		"~~~ yaml complete file=example.org.yml\nrecords:\n  www.example.org.:\n    backends: [{address: 192.0.2.1}]\n~~~\n\n" +
		"```yaml\nnot: marked\n```\n\n" +
		"````yaml complete zone=example.net.\nrecords:\n  www.example.net.:\n    mode: failovr\n    backends: [{address: 192.0.2.2}]\n````\n"
	examples, err := extractExamples("doc.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ex := range examples {
		got = append(got, fmt.Sprintf("%s %s file=%s zone=%s", ex.where, ex.lang, ex.file, ex.zone))
	}
	want := []string{
		"doc.md:3 corefile file= zone=",
		"doc.md:9 yaml file=example.org.yml zone=",
		"doc.md:19 yaml file= zone=example.net.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("extracted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The Corefile loads with its file; the zone with a misspelt mode does not.
	errs := checkDocExamples(t, t.TempDir(), examples)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "doc.md:19: ") || !strings.Contains(errs[0].Error(), `unknown mode "failovr"`) {
		t.Fatalf("errors %v, want one, the mode of doc.md:19", errs)
	}

	bad := []struct{ name, md, want string }{
		{"unclosed", "```corefile complete\nexample.org {\n", "not closed"},
		{"other language", "```sh complete\nls\n```\n", "not \"sh\""},
		{"unknown attribute", "```yaml complete name=x.yml\na: 1\n```\n", "unknown attribute"},
		{"yaml without a name", "```yaml complete\na: 1\n```\n", "file=NAME or zone=ORIGIN"},
		{"corefile with a name", "```corefile complete file=Corefile\n. {}\n```\n", "takes no attributes"},
		{"profiles without a zone", "```yaml complete file=a.yml profiles=p.yml\na: 1\n```\n", "goes with zone"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := extractExamples("bad.md", []byte(tt.md)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// TestDocExamplesLoad loads every complete example of the documentation, and the Corefiles of
// examples/, as `meridian check` does.
func TestDocExamplesLoad(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob(filepath.Join(root, "examples", "*", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, more...)
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "plugin", "gslb", "README.md"))
	n := 0
	for _, doc := range docs {
		md, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, doc)
		examples, err := extractExamples(name, md)
		if err != nil {
			t.Error(err)
			continue
		}
		n += len(examples)
		for _, err := range checkDocExamples(t, t.TempDir(), examples) {
			t.Error(err)
		}
	}
	if n == 0 {
		t.Fatal("no complete example in the documentation")
	}
	t.Logf("%d complete examples", n)

	// The Corefiles of examples/ name their files from the repository's root, where `make run`
	// starts them.
	corefiles, err := filepath.Glob(filepath.Join(root, "examples", "*", "Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for _, path := range corefiles {
		rel, _ := filepath.Rel(root, path)
		warnings, errs := checkCorefile(rel)
		for _, err := range append(warnings, errs...) {
			t.Error(err)
		}
	}
	if len(corefiles) == 0 {
		t.Fatal("no Corefile in examples/")
	}
}
