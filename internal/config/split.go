package config

import (
	"bytes"
	"iter"
	"regexp"
	"runtime"
)

// topKeyLine matches the lines that splitRecords accepts as the top-level key that ends the
// records block.
var topKeyLine = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*:( |\r?\n|$)`)

// isRecordKeyLine reports whether splitRecords accepts line as the start of a record: a block
// mapping key, plain or quoted, indented by spaces. It is the regular expression
// ^ +("[^"]*"|'[^']*'|[^\s#'"\-?:][^:#]*):( |\r?\n|$) (TestRecordKeyLine), written out: it
// runs for every record of a big zone before the parse can start.
func isRecordKeyLine(line []byte) bool {
	key := bytes.TrimLeft(line, " ")
	if len(key) == len(line) || len(key) == 0 {
		return false
	}
	var end int // the index of the colon after the key
	switch c := key[0]; c {
	case '"', '\'':
		end = bytes.IndexByte(key[1:], c) + 2
		if end == 1 || end == len(key) || key[end] != ':' {
			return false
		}
	case ' ', '\t', '\n', '\f', '\r', '#', '-', '?', ':':
		return false
	default:
		end = bytes.IndexAny(key[1:], ":#") + 1
		if end == 0 || key[end] != ':' {
			return false
		}
	}
	switch after := key[end+1:]; {
	case len(after) == 0, after[0] == ' ', after[0] == '\n':
		return true
	default:
		return len(after) > 1 && after[0] == '\r' && after[1] == '\n'
	}
}

// recordsChunkSize is how many records one YAML parse covers when a file is parsed in chunks.
const recordsChunkSize = 256

// chunk is a run of lines of the records block, parsed on its own.
type chunk struct {
	firstLine int    // 1-based line number of the chunk's first line in the file
	text      []byte // a part of the file's data, not a copy
}

// splitRecords cuts a zone file into its records block, in chunks of whole records, and the
// rest of the file (head), in which the block's lines are blanked so that line numbers stay
// true. Parsing the chunks one after another keeps only one chunk's YAML node tree in memory
// instead of the whole file's, which for large files was many times the size of the result.
//
// It handles the plain block style that zone files are written in, and reports ok false for
// anything else (anchors, aliases and merge keys, which may refer across records; flow style
// for the records map; several documents; tabs), which is then parsed whole.
func splitRecords(data []byte) (head []byte, chunks []chunk, records int, ok bool) {
	if bytes.ContainsAny(data, "&*\t") || bytes.Contains(data, []byte("<<")) {
		return nil, nil, 0, false
	}
	offsets := lineOffsets(data)
	lines := len(offsets) - 1
	lineAt := func(i int) []byte { return data[offsets[i]:offsets[i+1]] }
	start := -1 // index of the "records:" line
	for i := range lines {
		line := lineAt(i)
		content := bytes.TrimRight(stripComment(line), " \r\n")
		if bytes.HasPrefix(line, []byte("---")) || bytes.HasPrefix(line, []byte("...")) {
			return nil, nil, 0, false
		}
		if bytes.Equal(content, []byte("records:")) {
			if start >= 0 {
				return nil, nil, 0, false // twice: let the whole parse report it
			}
			start = i
		}
	}
	if start < 0 {
		return nil, nil, 0, false
	}
	indent := -1
	end := lines
	var cuts []int // line indexes where a record starts
	for i := start + 1; i < lines; i++ {
		line := lineAt(i)
		trimmed := bytes.TrimLeft(line, " ")
		if len(bytes.TrimSpace(trimmed)) == 0 || trimmed[0] == '#' {
			continue
		}
		lead := len(line) - len(trimmed)
		switch {
		case lead == 0:
			if !topKeyLine.Match(line) {
				return nil, nil, 0, false
			}
			end = i // the next top-level key
		case indent < 0 || lead == indent:
			if !isRecordKeyLine(line) {
				return nil, nil, 0, false
			}
			indent = lead
			cuts = append(cuts, i)
		case lead < indent:
			return nil, nil, 0, false
		}
		if end != lines {
			break
		}
	}
	if len(cuts) == 0 {
		return nil, nil, 0, false
	}
	chunks = make([]chunk, 0, (len(cuts)+recordsChunkSize-1)/recordsChunkSize)
	for c := 0; c < len(cuts); c += recordsChunkSize {
		from := cuts[c]
		to := end
		if c+recordsChunkSize < len(cuts) {
			to = cuts[c+recordsChunkSize]
		}
		chunks = append(chunks, chunk{firstLine: from + 1, text: data[offsets[from]:offsets[to]]})
	}
	// The records block's lines are blanked: it is parsed in chunks.
	blanked := end - start - 1
	head = make([]byte, 0, offsets[start+1]+blanked+len(data)-offsets[end])
	head = append(head, data[:offsets[start+1]]...)
	head = append(head, bytes.Repeat([]byte("\n"), blanked)...)
	head = append(head, data[offsets[end]:]...)
	return head, chunks, len(cuts), true
}

// lineOffsets returns where each line of data starts, as bytes.SplitAfter(data, "\n") cuts
// them (the text after the last newline is a line, empty when data ends with one), followed
// by len(data): line i is data[offsets[i]:offsets[i+1]].
func lineOffsets(data []byte) []int {
	offsets := make([]int, 1, bytes.Count(data, []byte("\n"))+2)
	for at := 0; ; {
		i := bytes.IndexByte(data[at:], '\n')
		if i < 0 {
			break
		}
		at += i + 1
		offsets = append(offsets, at)
	}
	return append(offsets, len(data))
}

// stripComment removes a comment that starts a line or follows a space; good enough to
// recognise a "records:" key line.
func stripComment(line []byte) []byte {
	if i := bytes.Index(line, []byte(" #")); i >= 0 {
		return line[:i]
	}
	if bytes.HasPrefix(line, []byte("#")) {
		return nil
	}
	return line
}

// document returns the chunk as a YAML document of its own, a records map, and the number of
// lines the document's line numbers are below the file's.
func (c chunk) document() ([]byte, int) {
	doc := make([]byte, 0, len("records:\n")+len(c.text))
	doc = append(doc, "records:\n"...)
	return append(doc, c.text...), c.firstLine - 2
}

// eachChunk calls f on the chunks, several at once on GOMAXPROCS goroutines, and yields its
// results in the chunks' order. At most two chunks per goroutine are done ahead of the one
// yielded, so that what they make (node trees, walked records) stays a few chunks' worth.
func eachChunk[T any](chunks []chunk, f func(chunk) T) iter.Seq[T] {
	return func(yield func(T) bool) {
		ahead := 2 * runtime.GOMAXPROCS(0)
		results := make([]chan T, len(chunks))
		started := 0
		for i := range chunks {
			for ; started < len(chunks) && started <= i+ahead; started++ {
				ch := make(chan T, 1) // never blocks: a yield that stops leaks nothing
				results[started] = ch
				go func(c chunk) { ch <- f(c) }(chunks[started])
			}
			d := <-results[i]
			results[i] = nil
			if !yield(d) {
				return
			}
		}
	}
}

// decode parses the chunk's document: with fastDecode when it can (from the file's data in
// place), else with yaml.v3.
func (c chunk) decode() decodedDoc {
	offset := c.firstLine - 2
	if root, arena, ok := fastDecodeAt(recordsLine, c.text, offset); ok {
		return decodedDoc{doc: root, offset: offset, arena: arena}
	}
	doc, offset := c.document()
	return decodeDocument(doc, offset)
}

// recordsLine is the first line of a chunk's document (see chunk.document).
var recordsLine = []byte("records:")
