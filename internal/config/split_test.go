package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// parseBoth parses data whole and in chunks and fails the test unless both give the same zone
// and the same errors. It reports whether the chunked parse was used.
func parseBoth(t *testing.T, data []byte) bool {
	t.Helper()
	whole, wholeErr := parseZone("z.yml", data, "example.org", nil, 1, false)
	split, splitErr := parseZone("z.yml", data, "example.org", nil, 1, true)
	if fmt.Sprint(wholeErr) != fmt.Sprint(splitErr) {
		t.Fatalf("errors differ\nwhole: %v\nsplit: %v", wholeErr, splitErr)
	}
	if !reflect.DeepEqual(whole, split) {
		t.Fatalf("zones differ\nwhole: %+v\nsplit: %+v", whole, split)
	}
	_, _, _, ok := splitRecords(data)
	return ok
}

func TestSplitParseMatchesWholeParse(t *testing.T) {
	var many strings.Builder
	many.WriteString("defaults:\n  record_ttl: 7\nrecords:\n")
	for i := range 600 { // more than two chunks
		fmt.Fprintf(&many, "  # record %d\n  r%d.example.org.:\n    mode: roundrobin\n\n    backends:\n      - address: 10.0.%d.%d\n", i, i, i/256, i%256)
	}
	many.WriteString("soa:\n  serial: 42\n")
	var plain strings.Builder // no comments: its chunks are parsed by fastDecode
	plain.WriteString("records:\n")
	for i := range 600 {
		mode := "failover"
		if i == 555 {
			mode = "bogus"
		}
		fmt.Fprintf(&plain, "  r%d.example.org.:\n    mode: %s\n    backends:\n      - {address: 10.0.%d.%d, priority: %d}\n", i, mode, i/256, i%256+i/500*100, i%3)
	}
	tests := []struct {
		name  string
		data  string
		split bool
	}{
		{"many records, a trailing key", many.String(), true},
		{"errors in a later chunk keep their lines", plain.String(), true},
		{"errors keep their lines", "records:\n  a.example.org.:\n    mode: bogus\n    backends: [{address: 10.0.0.1}]\n  b.example.org.:\n    backends: [{address: 10.0.0.300}]\n", true},
		{"duplicate across chunks", strings.Repeat("", 0) + dupAcrossChunks(), true},
		{"outside the zone", "records:\n  www.example.net.:\n    backends: [{address: 10.0.0.1}]\n", true},
		{"flow style is parsed whole", "records: {www.example.org.: {backends: [{address: 10.0.0.1}]}}\n", false},
		{"anchors are parsed whole", "defaults: &d {record_ttl: 5}\nrecords:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}]\n", false},
		{"broken YAML in a record", "records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}\n", true},
		{"no records", "soa:\n  serial: 1\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if split := parseBoth(t, []byte(tt.data)); split != tt.split {
				t.Fatalf("parsed in chunks: %v, want %v", split, tt.split)
			}
		})
	}
	files, _ := filepath.Glob("testdata/*.yml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(file), func(t *testing.T) { parseBoth(t, data) })
	}
}

func dupAcrossChunks() string {
	var b strings.Builder
	b.WriteString("records:\n")
	for i := range recordsChunkSize + 10 {
		fmt.Fprintf(&b, "  r%d.example.org.:\n    backends: [{address: 10.0.0.1}]\n", i)
	}
	b.WriteString("  R3.example.org.:\n    backends: [{address: 10.0.0.2}]\n")
	return b.String()
}

// FuzzSplitParse checks that parsing in chunks never changes the outcome of a parse.
func FuzzSplitParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("records:\n  a.example.org.:\n    backends:\n    - address: 10.0.0.1\nsoa: {serial: 3}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parseBoth(t, data)
	})
}

// TestRecordKeyLine holds isRecordKeyLine to the regular expression it is written from, on
// every line of up to five bytes of an alphabet of the characters the expression names.
func TestRecordKeyLine(t *testing.T) {
	re := regexp.MustCompile(`^ +("[^"]*"|'[^']*'|[^\s#'"\-?:][^:#]*):( |\r?\n|$)`)
	alphabet := []byte(" a:#\"'-?\r\n\t\vé")
	line := make([]byte, 0, 5)
	var walk func()
	walk = func() {
		if got, want := isRecordKeyLine(line), re.Match(line); got != want {
			t.Fatalf("isRecordKeyLine(%q) = %v, the expression says %v", line, got, want)
		}
		if len(line) == cap(line) {
			return
		}
		for _, c := range alphabet {
			line = append(line, c)
			walk()
			line = line[:len(line)-1]
		}
	}
	walk()
	for _, s := range []string{"  a.example.org.:\n", "  \"a b\": x\n", "  'a': {x: 1}\r\n", "  a:b: c\n", "  a # b: c\n", "    backends:\n"} {
		if got, want := isRecordKeyLine([]byte(s)), re.Match([]byte(s)); got != want {
			t.Errorf("isRecordKeyLine(%q) = %v, the expression says %v", s, got, want)
		}
	}
}
