package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// parseBoth parses data whole and in chunks and fails the test unless both give the same zone
// and the same errors. It reports whether the chunked parse was used.
func parseBoth(t *testing.T, data []byte) bool {
	t.Helper()
	whole, wholeErr := parseZone("z.yml", data, "example.org", nil, 1, walkWhole)
	for _, walk := range []int{walkInOrder, walkChunks} {
		split, splitErr := parseZone("z.yml", data, "example.org", nil, 1, walk)
		if fmt.Sprint(wholeErr) != fmt.Sprint(splitErr) {
			t.Fatalf("errors differ (walk %d)\nwhole: %v\nsplit: %v", walk, wholeErr, splitErr)
		}
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("zones differ (walk %d)\nwhole: %+v\nsplit: %+v", walk, whole, split)
		}
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

// TestProblemsOfSeveralChunksInFileOrder walks a zone with problems and warnings in three
// chunks, duplicates of records of other chunks among them, at once: it reports them in the
// order of the file, each as the walk of the whole file does, and keeps the same records.
func TestProblemsOfSeveralChunksInFileOrder(t *testing.T) {
	data := severalChunks(true)
	if _, chunks, _, ok := splitRecords(data); !ok || len(chunks) < 3 {
		t.Fatalf("the zone is not split in three chunks or more")
	}
	parseBoth(t, data)
	whole, wholeErr := parseZone("z.yml", data, "example.org", nil, 1, walkWhole)
	_, err := parseZone("z.yml", data, "example.org", nil, 1, walkChunks)
	if err == nil || whole != nil {
		t.Fatal("a zone with problems loads")
	}
	got := strings.Split(err.Error(), "\n")
	if want := strings.Split(wholeErr.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Fatalf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// In the order of the file, a chunk's after the chunk's before.
	order := []string{`records["r5.example.org."].mode`, `records["R4.example.org."]: duplicate record r4.example.org.`,
		`records["R4.example.org."].backends[0].port`, `records["r296.example.org."]`, `records["r519.example.org."]`,
		`records["R300.example.org."]: duplicate record r300.example.org.`, `records["R300.example.org."].backends[0].port`}
	at := -1
	for _, w := range order {
		i := slices.IndexFunc(got, func(line string) bool { return strings.Contains(line, w) })
		if i <= at {
			t.Fatalf("%q at line %d of the problems, after %d:\n%s", w, i, at, err)
		}
		at = i
	}
	// Without the problems, the warnings of the chunks, in the order of the file.
	data = severalChunks(false)
	parseBoth(t, data)
	z, err := parseZone("z.yml", data, "example.org", nil, 1, walkChunks)
	if err != nil {
		t.Fatal(err)
	}
	var warned []int32
	for _, w := range z.Warnings {
		warned = append(warned, w.Pos.Line)
	}
	if len(warned) != 2 || warned[0] >= warned[1] {
		t.Errorf("warnings at lines %v, want two in the order of the file:\n%v", warned, z.Warnings)
	}
}

// severalChunks returns a zone of three chunks of records, with a deprecated key in the second
// and third; with problems, records of an unknown mode or a port out of range in each, and
// records written again, in other letters, in the second and third.
func severalChunks(problems bool) []byte {
	var b strings.Builder
	b.WriteString("records:\n")
	for i := range 3 * recordsChunkSize {
		fmt.Fprintf(&b, "  r%d.example.org.:\n", i)
		switch {
		case problems && (i == 5 || i == 2*recordsChunkSize+7):
			b.WriteString("    mode: bogus\n")
		case i == recordsChunkSize+2 || i == 2*recordsChunkSize+9:
			b.WriteString("    failover_policy: {mode: fail-open}\n")
		}
		port := 80
		if problems && i == recordsChunkSize+40 {
			port = 70000
		}
		fmt.Fprintf(&b, "    backends:\n      - {address: 10.0.%d.%d, port: %d}\n", i/256, i%256, port)
		if problems && (i == recordsChunkSize+3 || i == 2*recordsChunkSize+11) {
			// R4 and R300: duplicates of records of the chunks before, with a problem of their own.
			fmt.Fprintf(&b, "  %s.example.org.:\n    backends: [{address: 10.1.0.%d, port: -1}]\n", map[bool]string{true: "R4", false: "R300"}[i < 2*recordsChunkSize], i%256)
		}
	}
	return []byte(b.String())
}

// TestChunksPastTheBudget gives up the walks of chunks at once when they went past the file's
// budget together: only a walk of the records one after another tells where it ran out.
func TestChunksPastTheBudget(t *testing.T) {
	p := newParser("z.yml", 10)
	c := p.walkChunk(chunk{text: []byte("  a.example.org.: {backends: [{address: 10.0.0.1}]}\n"), firstLine: 2}, "example.org.", recordOpts{}, profileSet{})
	if len(c.zone.Records) != 1 || c.p.work == 0 {
		t.Fatalf("the chunk's walk kept %d records, %d work", len(c.zone.Records), c.p.work)
	}
	p.work = p.budget - c.p.work + 1
	z := &Zone{Origin: "example.org."}
	if p.takeWalked(z, c, map[string]int{}) || len(z.Records) != 0 {
		t.Errorf("a chunk past the budget is taken")
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
