package config

import (
	"bytes"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// fastDecode parses data into the node tree yaml.v3 makes of it, for the plain subset of YAML
// that zone files' records are written in, about three times faster than yaml.v3: block
// mappings and sequences, one-line flow mappings and sequences, and plain scalars, with ASCII
// text and no comments, quotes, anchors, tags, tabs, document markers, multi-line scalars or long lines. It reports false for
// anything outside that subset, and for what it cannot be sure yaml.v3 reads the same way; the
// caller parses data with yaml.v3 then. FuzzFastDecode holds it to yaml.v3's result.
//
// The nodes are allocated from arena, which the caller releases once it is done with them.
func fastDecode(data []byte) (doc *yaml.Node, arena *nodeArena, ok bool) {
	return fastDecodeAt(nil, data, 0)
}

// fastDecodeAt is fastDecode of the document made of the line first (nil for none; without
// its newline) followed by data, with every line number offset lines further down: a chunk
// of a zone file is parsed where it lies in the file, without a copy of it.
func fastDecodeAt(first, data []byte, offset int) (doc *yaml.Node, arena *nodeArena, ok bool) {
	if !fastText(first) || !fastText(data) {
		return nil, nil, false
	}
	f := fastParsers.Get().(*fastParser)
	defer f.done()
	if first != nil {
		f.lines = append(f.lines, first)
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			f.lines = append(f.lines, data) // as bytes.Split: the text after the last newline
			break
		}
		f.lines, data = append(f.lines, data[:i]), data[i+1:]
	}
	for _, line := range f.lines {
		if bytes.HasPrefix(line, []byte("---")) || bytes.HasPrefix(line, []byte("...")) {
			return nil, nil, false // perhaps a document marker
		}
	}
	f.arena, f.offset = &nodeArena{}, offset
	defer func() {
		if !ok {
			f.arena.release()
		}
	}()
	f.skipBlank()
	if f.i == len(f.lines) {
		return nil, nil, false
	}
	indent, _ := f.indent()
	if indent != 0 {
		return nil, nil, false
	}
	root, ok := f.block(0)
	if f.skipBlank(); !ok || f.i != len(f.lines) {
		return nil, nil, false
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: root.Line, Column: 1, Content: []*yaml.Node{root}}, f.arena, true
}

// fastText reports whether data holds only bytes fastDecode parses, in lines it parses.
func fastText(data []byte) bool {
	lineLen := 0
	for _, c := range data {
		lineLen++
		if c == '\n' {
			lineLen = 0
		}
		if fastRefused[c] || lineLen > maxFastLine {
			return false
		}
	}
	return true
}

// fastParsers holds fastParsers between documents, with the room their lines and short
// strings took: a big zone's chunks are parsed one after another.
var fastParsers = sync.Pool{New: func() any { return &fastParser{strs: map[string]string{}} }}

// done clears f and returns it to fastParsers; the nodes it made stay in its arena.
func (f *fastParser) done() {
	clear(f.lines)
	clear(f.strs)
	clear(f.stack[:cap(f.stack)])
	*f = fastParser{lines: f.lines[:0], strs: f.strs, stack: f.stack[:0]}
	fastParsers.Put(f)
}

// nodeArena holds the nodes of a document that fastDecode parsed, and their Content slices,
// in slabs that release hands on to the next documents: a big zone's chunks are parsed one
// after another, and their nodes were most of what its loading allocated.
type nodeArena struct {
	nodes slabs[yaml.Node]
	ptrs  slabs[*yaml.Node]
}

// Pools of released slabs, zeroed.
var (
	nodeSlabs = sync.Pool{New: func() any { return new(make([]yaml.Node, arenaSlab)) }}
	ptrSlabs  = sync.Pool{New: func() any { return new(make([]*yaml.Node, arenaSlab)) }}
)

// arenaSlab is the length of a slab.
const arenaSlab = 512

// node returns a zeroed node of the arena.
func (a *nodeArena) node() *yaml.Node { return &a.nodes.take(1, &nodeSlabs)[0] }

// content returns a copy of l in the arena, nil when l is empty.
func (a *nodeArena) content(l []*yaml.Node) []*yaml.Node {
	if len(l) == 0 {
		return nil
	}
	c := a.ptrs.take(len(l), &ptrSlabs)
	copy(c, l)
	return c
}

// release zeroes the arena's nodes and hands them on; nothing may use them afterwards. A nil
// arena has nothing to release.
func (a *nodeArena) release() {
	if a == nil {
		return
	}
	a.nodes.release(&nodeSlabs)
	a.ptrs.release(&ptrSlabs)
}

// slabs hands out runs of zeroed elements from slabs of arenaSlab elements taken from a pool.
type slabs[T any] struct {
	held []*[]T
	next []T // the unused rest of the last slab
}

// take returns n zeroed elements, of capacity n, from pool's slabs (n > arenaSlab: from
// the heap).
func (s *slabs[T]) take(n int, pool *sync.Pool) []T {
	if n > arenaSlab {
		return make([]T, n)
	}
	if len(s.next) < n {
		slab := pool.Get().(*[]T)
		s.held = append(s.held, slab)
		s.next = *slab
	}
	run := s.next[:n:n]
	s.next = s.next[n:]
	return run
}

// release zeroes the slabs and puts them back in pool.
func (s *slabs[T]) release(pool *sync.Pool) {
	for _, slab := range s.held {
		clear(*slab)
		pool.Put(slab)
	}
	*s = slabs[T]{}
}

// maxFastLine is the longest line fastDecode parses: yaml.v3 refuses a key of more than 1024
// characters.
const maxFastLine = 1000

// fastRefused are the bytes fastDecode leaves to yaml.v3: control characters but the newline,
// non-ASCII (yaml.v3 counts columns in characters), and the indicators of comments, quotes,
// anchors, aliases, tags, block scalars, directives, escapes and complex keys.
var fastRefused = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 0x7f || c < ' ' && c != '\n' || strings.IndexByte("#\"'&*!|>%@`\\?", byte(c)) >= 0
	}
	return t
}()

// fastParser is the state of fastDecode: the lines of the data, the one it is at, how many
// lines the document's first line is below the file's first, the arena of the nodes, the
// short scalars made so far (a chunk repeats its keys and many values), and the stack of the
// nodes parsed before their parent's Content is made.
type fastParser struct {
	lines  [][]byte
	i      int
	offset int
	arena  *nodeArena
	strs   map[string]string
	stack  []*yaml.Node // the children of the nodes being parsed (see content)
}

// str returns b as a string, the same string for the same short text.
func (f *fastParser) str(b []byte) string {
	if len(b) > 16 {
		return string(b)
	}
	if s, ok := f.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	f.strs[s] = s
	return s
}

// skipBlank moves past empty and all-space lines.
func (f *fastParser) skipBlank() {
	for f.i < len(f.lines) && len(bytes.TrimLeft(f.lines[f.i], " ")) == 0 {
		f.i++
	}
}

// indent returns the current line's indentation and text after it.
func (f *fastParser) indent() (int, []byte) {
	line := f.lines[f.i]
	rest := bytes.TrimLeft(line, " ")
	return len(line) - len(rest), rest
}

// block parses the block node whose first line is the current one, indented by col spaces: a
// mapping, or a sequence of "- " items.
func (f *fastParser) block(col int) (*yaml.Node, bool) {
	_, rest := f.indent()
	seq := len(rest) > 0 && rest[0] == '-'
	kind := yaml.MappingNode
	if seq {
		kind = yaml.SequenceNode
	}
	n := f.node(kind, "", col)
	mark := len(f.stack)
	if !f.body(col, seq) {
		return nil, false
	}
	n.Content = f.content(mark)
	return n, true
}

// body parses the lines of a block node indented by col spaces, a sequence's items or a
// mapping's pairs, onto the stack.
func (f *fastParser) body(col int, seq bool) bool {
	for {
		f.skipBlank()
		if f.i == len(f.lines) {
			return true
		}
		in, rest := f.indent()
		if in < col {
			return true
		}
		if in > col || (len(rest) > 0 && rest[0] == '-') != seq {
			return false
		}
		var ok bool
		if seq {
			ok = f.item(col)
		} else {
			ok = f.pair(col, rest)
		}
		if !ok {
			return false
		}
	}
}

// content returns the nodes on the stack from mark on, as a node's Content in the arena, and
// takes them off the stack. A node's children are pushed as they are parsed, each after its
// own children came off: one Content slice of the right length for every node.
func (f *fastParser) content(mark int) []*yaml.Node {
	c := f.arena.content(f.stack[mark:])
	clear(f.stack[mark:])
	f.stack = f.stack[:mark]
	return c
}

// node returns a node of kind at the current line and column col (0-based).
func (f *fastParser) node(kind yaml.Kind, value string, col int) *yaml.Node {
	n := f.arena.node()
	*n = yaml.Node{Kind: kind, Value: value, Line: f.offset + f.i + 1, Column: col + 1}
	switch kind {
	case yaml.MappingNode:
		n.Tag = "!!map"
	case yaml.SequenceNode:
		n.Tag = "!!seq"
	default:
		n.Tag = plainTag(value)
		if n.Tag == "" {
			n.Tag = n.ShortTag()
		}
	}
	return n
}

// plainTag returns the tag yaml.v3 resolves the plain scalar s to, for the common cases that
// are quick to tell: a word that does not start like a number, a null or a boolean, or starts
// like one but is none of the words yaml.v3 reads as one; a dotted address; a small decimal
// integer; and a duration such as 60s or 1m30s. It returns "" for the others.
func plainTag(s string) string {
	switch c := s[0]; {
	case c == '~' || c == '.' || c == '+' || c == '-':
		return ""
	case c < '0' || c > '9':
		if yamlWords[s] {
			return ""
		}
		return "!!str"
	}
	digits, dots, units := 0, 0, 0
	for i := range len(s) {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			digits++
		case c == '.':
			dots++
		case c == 'h' || c == 'm' || c == 's':
			units++ // no number, timestamp or boolean has these
		default:
			return ""
		}
	}
	switch {
	case units > 0:
		return "!!str"
	case dots >= 2:
		return "!!str" // not a number, and a timestamp has dashes
	case dots == 0 && digits < 19 && (s[0] != '0' || len(s) == 1):
		return "!!int"
	}
	return ""
}

// yamlWords are the plain words yaml.v3 reads as a boolean or a null.
var yamlWords = map[string]bool{"true": true, "True": true, "TRUE": true, "false": true, "False": true,
	"FALSE": true, "null": true, "Null": true, "NULL": true}

// item parses a sequence item "- value" at column col onto the stack. A value that is a
// mapping continues on the next lines indented like its first key.
func (f *fastParser) item(col int) bool {
	line := f.lines[f.i]
	if len(line) < col+3 || line[col+1] != ' ' || line[col+2] == ' ' {
		return false // "-" alone, or more than one space after it
	}
	if _, _, isPair := splitPair(line[col+2:]); isPair && line[col+2] != '-' {
		m := f.node(yaml.MappingNode, "", col+2)
		mark := len(f.stack)
		if !f.pair(col+2, line[col+2:]) || !f.continued(col+2) {
			return false
		}
		m.Content = f.content(mark)
		f.stack = append(f.stack, m)
		return true
	}
	v, ok := f.inline(line, col+2)
	f.stack = append(f.stack, v)
	f.i++
	return ok
}

// continued parses the rest of a mapping started on a sequence item's line onto the stack:
// the following lines indented by col, if any.
func (f *fastParser) continued(col int) bool {
	f.skipBlank()
	if f.i == len(f.lines) {
		return true
	}
	if in, rest := f.indent(); in != col || len(rest) > 0 && rest[0] == '-' {
		return in < col
	}
	return f.body(col, false)
}

// pair parses the "key: value" or "key:" line rest, at column col, onto the stack; a key
// without a value on its line has a block below it, indented more.
func (f *fastParser) pair(col int, rest []byte) bool {
	key, value, ok := splitPair(rest)
	if !ok || !plainOK(key, false) {
		return false
	}
	line := f.lines[f.i]
	f.stack = append(f.stack, f.node(yaml.ScalarNode, f.str(key), col))
	if value >= 0 {
		v, ok := f.inline(line, skipSpaces(line, col+value))
		f.stack = append(f.stack, v)
		f.i++
		return ok
	}
	f.i++
	f.skipBlank()
	if f.i == len(f.lines) {
		return false // an empty value: yaml.v3 places its null where this parser does not
	}
	in, _ := f.indent()
	if in <= col {
		return false
	}
	v, ok := f.block(in)
	f.stack = append(f.stack, v)
	return ok
}

// splitPair cuts a block mapping line at the first ": " or a final ":". It returns the key
// and where the value starts in rest, or -1 when the line ends after the key.
func splitPair(rest []byte) (key []byte, value int, ok bool) {
	rest = bytes.TrimRight(rest, " ")
	if len(rest) > 0 && (rest[0] == '{' || rest[0] == '[') {
		return nil, 0, false
	}
	if i := bytes.Index(rest, []byte(": ")); i > 0 {
		return bytes.TrimRight(rest[:i], " "), i + 2, true
	}
	if len(rest) > 1 && rest[len(rest)-1] == ':' {
		return bytes.TrimRight(rest[:len(rest)-1], " "), -1, true
	}
	return nil, 0, false
}

// inline parses the value that starts at column col of line and ends the line: a flow
// mapping or sequence, or a plain scalar.
func (f *fastParser) inline(line []byte, col int) (*yaml.Node, bool) {
	text := bytes.TrimRight(line, " ")
	if col >= len(text) {
		return nil, false
	}
	if text[col] != '{' && text[col] != '[' {
		if !plainOK(text[col:], false) {
			return nil, false
		}
		return f.node(yaml.ScalarNode, f.str(text[col:]), col), true
	}
	n, end, ok := f.flow(text, col)
	return n, ok && end == len(text)
}

// flow parses the flow node at text[at] and returns it and where it ends.
func (f *fastParser) flow(text []byte, at int) (*yaml.Node, int, bool) {
	at = skipSpaces(text, at)
	if at == len(text) {
		return nil, at, false
	}
	switch text[at] {
	case '{', '[':
	default:
		end := at
		for end < len(text) && strings.IndexByte(",[]{}:", text[end]) < 0 {
			end++
		}
		s := bytes.TrimRight(text[at:end], " ")
		if len(s) == 0 || !plainOK(s, true) {
			return nil, at, false
		}
		return f.node(yaml.ScalarNode, f.str(s), at), end, true
	}
	mapping := text[at] == '{'
	closer := byte(']')
	kind := yaml.SequenceNode
	if mapping {
		closer, kind = '}', yaml.MappingNode
	}
	n := f.node(kind, "", at)
	n.Style = yaml.FlowStyle
	pos := skipSpaces(text, at+1)
	if pos < len(text) && text[pos] == closer {
		return n, pos + 1, true
	}
	mark := len(f.stack)
	for {
		v, end, ok := f.flow(text, pos)
		if !ok {
			return nil, end, false
		}
		f.stack = append(f.stack, v)
		pos = end
		if mapping {
			if v.Kind != yaml.ScalarNode || pos+1 >= len(text) || text[pos] != ':' || text[pos+1] != ' ' {
				return nil, pos, false
			}
			if v, pos, ok = f.flow(text, pos+1); !ok {
				return nil, pos, false
			}
			f.stack = append(f.stack, v)
		}
		pos = skipSpaces(text, pos)
		switch {
		case pos == len(text):
			return nil, pos, false
		case text[pos] == closer:
			n.Content = f.content(mark)
			return n, pos + 1, true
		case text[pos] != ',':
			return nil, pos, false
		}
		if pos = skipSpaces(text, pos+1); pos < len(text) && text[pos] == closer {
			return nil, pos, false // a trailing comma
		}
	}
}

func skipSpaces(text []byte, at int) int {
	for at < len(text) && text[at] == ' ' {
		at++
	}
	return at
}

// plainOK reports whether s is a plain scalar that yaml.v3 reads as written: not starting with
// an indicator, no ": " or final ':' (a mapping), no ':' at all in flow context, and not the
// merge key.
func plainOK(s []byte, inFlow bool) bool {
	switch {
	case len(s) == 0 || strings.IndexByte("-?:,[]{}", s[0]) >= 0 || string(s) == "<<":
		return false
	case inFlow:
		return bytes.IndexByte(s, ':') < 0
	}
	return !bytes.Contains(s, []byte(": ")) && s[len(s)-1] != ':' && !bytes.ContainsAny(s, ",[]{}")
}
