package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unique"

	"gopkg.in/yaml.v3"
)

// YAMLFile collects the problems found in one YAML file, each as an Error at the position of
// its yaml.Node ("file:line:col: field: message"), and bounds the work of walking the file's
// nodes: a small file of nested YAML aliases (a "billion laughs") expands into an unbounded
// number of nodes, so a walk calls Spend for every node it visits and stops once it reports
// false. A problem is recorded once per position and message: an aliased node reached many
// times reports its problem once, but every report costs errorCost visits, so that aliases
// cannot repeat a problem without bound either. The zone loader and the location map of package geo both
// parse with it.
type YAMLFile struct {
	file  unique.Handle[string] // the file's name, made once for the positions in the file
	errs  ErrorList
	warns ErrorList
	seen  map[errorKey]bool
	// work counts the nodes visited and the problems reported; budget bounds it, and exhausted
	// is set once work went past it.
	work, budget int
	exhausted    bool
}

// errorCost is what reporting a problem adds to a YAMLFile's work, in node visits: formatting
// and recording it costs about as much as visiting this many nodes.
const errorCost = 64

// errorKey identifies a problem for YAMLFile's deduplication.
type errorKey struct {
	pos Position
	msg string
}

// NewYAMLFile returns the collector for the file called name, of size bytes. A walk may visit
// 1<<20 + 16·size nodes: far more than any file written by hand, far less than an alias bomb.
func NewYAMLFile(name string, size int) *YAMLFile {
	return &YAMLFile{file: InFile(name).file, budget: 1<<20 + 16*size}
}

// Pos returns the position of n in the file; the file alone when n is nil.
func (f *YAMLFile) Pos(n *yaml.Node) Position {
	if n == nil {
		return Position{file: f.file}
	}
	return Position{file: f.file, Line: int32(n.Line), Column: int32(n.Column)} // a file has fewer lines than that
}

// ErrorAt records a problem at pos about the field path (empty for the file as a whole),
// unless the same message was recorded at pos already.
func (f *YAMLFile) ErrorAt(pos Position, path, format string, args ...any) {
	f.work += errorCost
	k := errorKey{pos, fmt.Sprintf(format, args...)}
	if !f.see(k) {
		return
	}
	f.errs = append(f.errs, &Error{Pos: pos, Path: path, Msg: k.msg})
}

// Errorf records a problem at the position of n (the file when n is nil) about the field path.
func (f *YAMLFile) Errorf(n *yaml.Node, path, format string, args ...any) {
	f.ErrorAt(f.Pos(n), path, format, args...)
}

// WarnAt records something at pos that does not stop the file from loading, such as a
// deprecated spelling, unless the same warning was recorded at pos already.
func (f *YAMLFile) WarnAt(pos Position, path, format string, args ...any) {
	k := errorKey{pos, "warning: " + fmt.Sprintf(format, args...)}
	if !f.see(k) {
		return
	}
	f.warns = append(f.warns, &Error{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Warnings returns the warnings recorded, sorted by position like Errors, or nil.
func (f *YAMLFile) Warnings() ErrorList { return sortByPos(f.warns) }

// Len returns the number of problems recorded so far.
func (f *YAMLFile) Len() int { return len(f.errs) }

// Errors returns the problems recorded, sorted by position (stable: problems at one position
// keep their order), or nil when there are none.
func (f *YAMLFile) Errors() ErrorList { return sortByPos(f.errs) }

// sortByPos sorts l by position, stably, and returns it; nil when it is empty.
func sortByPos(l ErrorList) ErrorList {
	if len(l) == 0 {
		return nil
	}
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Pos.File(), b.Pos.File()), cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column))
	})
	return l
}

// Spend counts the visit of node n and reports false once the file's budget is exhausted; the
// first visit past it records a "document too complex" problem at n.
func (f *YAMLFile) Spend(n *yaml.Node) bool {
	f.work++
	if f.work > f.budget && !f.exhausted {
		f.exhausted = true
		f.Errorf(n, "", "document too complex: YAML aliases expand to more than %d nodes", f.budget)
	}
	return !f.exhausted
}

// yamlMark is what a YAMLFile has recorded up to a point of a walk (see mark).
type yamlMark struct {
	errs, warns, work int
	exhausted         bool
}

// mark returns what f has recorded so far, for rollback.
func (f *YAMLFile) mark() yamlMark {
	return yamlMark{errs: len(f.errs), warns: len(f.warns), work: f.work, exhausted: f.exhausted}
}

// recordedSince reports whether a problem or a warning was recorded after m.
func (f *YAMLFile) recordedSince(m yamlMark) bool {
	return len(f.errs) != m.errs || len(f.warns) != m.warns
}

// rollback forgets the problems, warnings and work recorded after m, so that the same part of
// the file can be walked again with the same outcome.
func (f *YAMLFile) rollback(m yamlMark) {
	for _, e := range f.errs[m.errs:] {
		delete(f.seen, errorKey{e.Pos, e.Msg})
	}
	for _, w := range f.warns[m.warns:] {
		delete(f.seen, errorKey{w.Pos, "warning: " + w.Msg})
	}
	clear(f.errs[m.errs:])
	clear(f.warns[m.warns:])
	f.errs, f.warns, f.work, f.exhausted = f.errs[:m.errs], f.warns[:m.warns], m.work, m.exhausted
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Document parses data, which must hold at most one YAML document, and returns that document's
// content: nil when data holds no document or an empty one. It reports false, having recorded
// the problem, when data is not valid YAML or holds a second document; what names the kind of
// file for that message ("a zone file"). A panic of the YAML parser is recorded as a problem,
// never passed on.
func (f *YAMLFile) Document(data []byte, what string) (root *yaml.Node, ok bool) {
	return f.take(decodeDocument(data, 0), what)
}

// decodedDoc is the outcome of decodeDocument: what a YAMLFile records of it is take's.
type decodedDoc struct {
	doc    *yaml.Node // the document, nil when data holds none
	extra  *yaml.Node // a second document, which is a problem
	err    error      // a syntax error (doc and extra nil)
	offset int        // the line numbers of err are this many lines above the file's
	panic  any        // what the YAML parser panicked with
	arena  *nodeArena // where fastDecode made the nodes, nil for yaml.v3's
}

// decodeDocument parses data, which starts after line offset of the file, into its first
// document, and a second one if there is one: its nodes are placed offset lines further down
// than where they are in data. It records nothing, so that it may run on another goroutine.
func decodeDocument(data []byte, offset int) (d decodedDoc) {
	d.offset = offset
	defer func() {
		// yaml.v3 reports errors by panicking internally; guard against a panic it does not
		// recover itself so that a bad file is an error, never a crash.
		if r := recover(); r != nil {
			d = decodedDoc{panic: r}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			d.err = err
		}
		return d
	}
	shiftLines(&doc, offset)
	d.doc = &doc
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		shiftLines(&extra, offset)
		d.extra = &extra
	} else if !errors.Is(err, io.EOF) {
		d.doc, d.err = nil, err
	}
	return d
}

// take records the problems of d and returns the content of its document, as Document does.
func (f *YAMLFile) take(d decodedDoc, what string) (*yaml.Node, bool) {
	switch {
	case d.panic != nil:
		f.Errorf(nil, "", "YAML parser failed: %v", d.panic)
		return nil, false
	case d.err != nil:
		f.syntaxError(d.err, d.offset)
		return nil, false
	case d.extra != nil:
		f.Errorf(d.extra, "", "%s holds one YAML document; found another", what)
		return nil, false
	case d.doc == nil || d.doc.Kind != yaml.DocumentNode || len(d.doc.Content) == 0:
		return nil, true
	}
	return d.doc.Content[0], true
}

// shiftLines moves n and the nodes below it offset lines down.
func shiftLines(n *yaml.Node, offset int) {
	if offset == 0 {
		return
	}
	n.Line += offset
	for _, c := range n.Content {
		shiftLines(c, offset)
	}
}

// syntaxError records a YAML syntax error at the line it names, offset lines further down.
func (f *YAMLFile) syntaxError(err error, offset int) {
	msg := err.Error()
	pos := f.Pos(nil)
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		pos.Line = int32(line + offset)
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	f.ErrorAt(pos, "", "invalid YAML: %s", msg)
}

// YAMLResolve follows aliases to the node they name. It returns nil for nil.
func YAMLResolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// YAMLIsNull reports whether n is absent or an explicit or empty YAML null, which means "not
// set".
func YAMLIsNull(n *yaml.Node) bool {
	n = YAMLResolve(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// YAMLKind names the kind of n for messages: "a mapping", "a list", "null", "a scalar".
func YAMLKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return "a scalar"
	default:
		return "an unresolved alias"
	}
}
