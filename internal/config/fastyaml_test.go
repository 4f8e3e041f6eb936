package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// treeDiff describes the first difference between two node trees, or returns "" when they
// are the same in everything the parser reads: kind, tag, style, value, position, children.
func treeDiff(got, want *yaml.Node, path string) string {
	if got.Kind != want.Kind || got.Tag != want.Tag || got.Style != want.Style || got.Value != want.Value ||
		got.Line != want.Line || got.Column != want.Column || len(got.Content) != len(want.Content) {
		return fmt.Sprintf("%s: got {kind %d tag %s style %d value %q at %d:%d, %d children}, want {kind %d tag %s style %d value %q at %d:%d, %d children}",
			path, got.Kind, got.Tag, got.Style, got.Value, got.Line, got.Column, len(got.Content),
			want.Kind, want.Tag, want.Style, want.Value, want.Line, want.Column, len(want.Content))
	}
	for i := range got.Content {
		if d := treeDiff(got.Content[i], want.Content[i], fmt.Sprintf("%s/%d", path, i)); d != "" {
			return d
		}
	}
	return ""
}

// checkFastDecode fails t when fastDecode accepts data and its tree differs from yaml.v3's (or
// yaml.v3 refuses data); it returns whether fastDecode accepted it.
func checkFastDecode(t *testing.T, data []byte) bool {
	t.Helper()
	got, arena, ok := fastDecode(data)
	if !ok {
		return false
	}
	defer arena.release()
	var want yaml.Node
	if err := yaml.Unmarshal(data, &want); err != nil {
		t.Fatalf("fastDecode accepted what yaml.v3 refuses (%v):\n%s", err, data)
	}
	if d := treeDiff(got, &want, ""); d != "" {
		t.Fatalf("fastDecode differs from yaml.v3: %s\n%s", d, data)
	}
	return true
}

func TestFastDecode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   string
		accept bool
	}{
		{"records of the benchmarks", "records:\n  a.example.org.:\n    mode: failover\n    backends:\n      - {address: 192.0.2.1, priority: 1, healthchecks: [web]}\n      - {address: 192.0.2.2, priority: 2}\n", true},
		{"block backends", "records:\n  a.example.org.:\n    backends:\n      - address: 192.0.2.1\n        weight: 3\n        healthchecks: [{type: tcp, params: {port: 9, timeout: 2s}}]\n      - address: 2001:db8::1\n", true},
		{"nested mappings and spacing", "a:\n   b:   c d  \n   e:\n     - x\n     - y\n\n   f: {}\n   g: [ ]\n", true},
		{"scalars of every tag", "a: [1, 1.5, true, null, ~, 0x1F, 2001-01-01, text]\nb: -1\n", false},
		{"a top-level sequence", "- a\n- b: c\n  d: e\n- [f]\n", true},
		{"sequence as indented as its key", "a:\n- b\n", false},
		{"comment", "a: b # c\n", false},
		{"quoted", "a: \"b\"\n", false},
		{"anchor", "a: &x b\n", false},
		{"empty value", "a:\nb: c\n", false},
		{"multi-line plain scalar", "a: b\n  c\n", false},
		{"multi-line flow", "a: {b: c,\n  d: e}\n", false},
		{"trailing comma", "a: [b, ]\n", false},
		{"colon in a flow scalar", "a: [b:c]\n", false},
		{"merge key", "a:\n  <<: {b: c}\n", false},
		{"tab", "a:\tb\n", false},
		{"non-ASCII", "a: é\n", false},
		{"indented first line", "  a: b\n", false},
		{"dash alone", "a:\n  -\n    b\n", false},
		{"less indented continuation", "a:\n    b: c\n  d: e\n", false},
		{"empty", "\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkFastDecode(t, []byte(tc.data)); got != tc.accept {
				t.Errorf("fastDecode accepted %v, want %v", got, tc.accept)
			}
		})
	}
}

// TestFastDecodeChunks holds fastDecode to yaml.v3 on the chunks of the test zones and of a
// generated one, and checks that it takes the generated one's chunks.
func TestFastDecodeChunks(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, data)
	}
	var gen bytes.Buffer
	gen.WriteString("records:\n")
	for i := range 600 {
		fmt.Fprintf(&gen, "  r%d.example.org.:\n    mode: weighted\n    backends:\n      - {address: 10.0.%d.1, weight: 2, healthchecks: [web]}\n      - address: 10.1.%d.1\n        country: US\n", i, i%250, i%250)
	}
	docs = append(docs, gen.Bytes())
	for i, data := range docs {
		checkFastDecode(t, data)
		_, chunks, _, ok := splitRecords(data)
		for _, c := range chunks {
			doc, _ := c.document()
			if accepted := checkFastDecode(t, doc); !accepted && i == len(docs)-1 {
				t.Fatalf("fastDecode refused a chunk of the generated zone:\n%s", doc)
			}
		}
		if i == len(docs)-1 && (!ok || len(chunks) < 2) {
			t.Fatalf("the generated zone was not split (%v, %d chunks)", ok, len(chunks))
		}
	}
}

// TestPlainTag holds plainTag to the tag yaml.v3 resolves a plain scalar to, where it gives one.
func TestPlainTag(t *testing.T) {
	for _, tc := range []struct {
		value string
		known bool // plainTag names a tag
	}{
		{"n000001.bench.test.", true}, {"web", true}, {"true", false}, {"True", false}, {"TRUE", false},
		{"false", false}, {"null", false}, {"NULL", false}, {"Nul", true}, {"nothing", true}, {"yes", true},
		{"/healthz", true}, {"_x", true}, {"~", false}, {".5", false}, {"-1", false}, {"+1", false},
		{"60s", true}, {"1m30s", true}, {"1.5h", true}, {"10ms", true}, {"0s", true}, {"2006-01-02", false},
		{"127.0.0.1", true}, {"9", true}, {"09", false}, {"0x1F", false}, {"1e3", false}, {"1.5", false},
	} {
		got := plainTag(tc.value)
		if (got != "") != tc.known {
			t.Errorf("plainTag(%q) = %q, want a tag: %v", tc.value, got, tc.known)
		}
		if want := (&yaml.Node{Kind: yaml.ScalarNode, Value: tc.value}).ShortTag(); got != "" && got != want {
			t.Errorf("plainTag(%q) = %s, yaml.v3 resolves it to %s", tc.value, got, want)
		}
	}
}

// FuzzFastDecode checks that what fastDecode accepts, yaml.v3 reads into the same tree.
func FuzzFastDecode(f *testing.F) {
	for _, s := range []string{
		"records:\n  a.example.org.:\n    backends:\n      - {address: 192.0.2.1, priority: 1, healthchecks: [web]}\n",
		"a:\n  - b: c\n    d: [e, {f: g}]\n  - h\n",
		"a: [1, 1.5, true, null, ~, 0x1F, 2001-01-01, text, 1e3, .inf]\n",
		"a: b c:d\nx:\n   y: z\n",
		"a: [n1.example., Null, NULL, nil, 2s, 1m30s, 1.5h, 0s, 10ms, /healthz, _x, yes, on, 1h-2]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastDecode(t, data)
	})
}
