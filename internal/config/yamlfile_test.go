package config

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestYAMLFileDocument(t *testing.T) {
	tests := []struct {
		name, data string
		root, ok   bool
		want       string
	}{
		{"empty", "", false, true, ""},
		{"comment only", "# nothing\n", false, true, ""},
		{"one document", "a: 1\n", true, true, ""},
		{"two documents", "a: 1\n---\nb: 2\n", false, false, "f.yml:2:1: a thing holds one YAML document; found another"},
		{"syntax", "a: [\n", false, false, "f.yml:1: invalid YAML: did not find expected node content"},
	}
	for _, tt := range tests {
		f := NewYAMLFile("f.yml", len(tt.data))
		root, ok := f.Document([]byte(tt.data), "a thing")
		if (root != nil) != tt.root || ok != tt.ok {
			t.Errorf("%s: Document = %v, %v", tt.name, root, ok)
		}
		if got := f.Errors(); tt.want == "" && got != nil || tt.want != "" && (len(got) != 1 || got[0].Error() != tt.want) {
			t.Errorf("%s: errors %v, want %q", tt.name, got, tt.want)
		}
	}
}

func TestYAMLFileErrors(t *testing.T) {
	f := NewYAMLFile("f.yml", 0)
	late, early := &yaml.Node{Line: 3, Column: 2}, &yaml.Node{Line: 1, Column: 5}
	f.Errorf(late, "a[1]", "bad %s", "value")
	f.Errorf(late, "a[2]", "bad %s", "value") // the same node reached through an alias
	f.Errorf(early, "b", "missing")
	f.Errorf(nil, "", "whole file")
	got := f.Errors()
	want := []string{"f.yml: whole file", "f.yml:1:5: b: missing", "f.yml:3:2: a[1]: bad value"}
	if f.Len() != len(want) || len(got) != len(want) {
		t.Fatalf("errors %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].Error() != w {
			t.Errorf("error %d = %q, want %q", i, got[i], w)
		}
	}
}

func TestYAMLFileSpend(t *testing.T) {
	f := NewYAMLFile("f.yml", 0)
	n := &yaml.Node{Line: 7, Column: 1}
	for i := range 1 << 20 {
		if !f.Spend(n) {
			t.Fatalf("budget exhausted after %d visits", i)
		}
	}
	for range 2 { // the first visit past the budget and the next
		if f.Spend(n) {
			t.Fatal("Spend past the budget reported true")
		}
	}
	if got := f.Errors(); len(got) != 1 || !strings.HasPrefix(got[0].Error(), "f.yml:7:1: document too complex") {
		t.Errorf("errors %v", got)
	}
}
