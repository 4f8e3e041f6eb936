package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// parser walks the yaml.Node tree of one file and collects every problem it finds.
type parser struct {
	file string
	errs ErrorList
	// work counts the nodes visited; budget bounds it so that a small file of nested YAML aliases
	// cannot expand into an unbounded amount of work.
	work, budget int
	// unreadable is set when a document could not be parsed as YAML at all.
	unreadable bool
	// active holds the alias targets being expanded, to detect cycles.
	active map[*yaml.Node]bool
}

func newParser(file string, size int) *parser {
	return &parser{file: file, budget: 1<<20 + 16*size, active: map[*yaml.Node]bool{}}
}

// err returns the collected errors, or nil when there are none.
func (p *parser) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return p.errs.normalize()
}

func (p *parser) pos(n *yaml.Node) Position {
	return Position{File: p.file, Line: n.Line, Column: n.Column}
}

func (p *parser) errorAt(pos Position, path, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: pos, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) errorf(n *yaml.Node, path, format string, args ...any) {
	p.errorAt(p.pos(n), path, format, args...)
}

// spend counts one visited node and reports false once the budget is exhausted.
func (p *parser) spend(n *yaml.Node) bool {
	p.work++
	if p.work == p.budget+1 {
		p.errorf(n, "", "document too complex: YAML aliases expand to more than %d nodes", p.budget)
	}
	return p.work <= p.budget
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document parses data and returns the content of its single YAML document, or nil when the
// file is empty or invalid (the problem is recorded).
func (p *parser) document(data []byte) (root *yaml.Node) {
	defer func() {
		// yaml.v3 reports errors by panicking internally; guard against a panic it does not
		// recover itself so that a bad file is an error, never a crash.
		if r := recover(); r != nil {
			p.errorAt(Position{File: p.file}, "", "YAML parser failed: %v", r)
			p.unreadable = true
			root = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			p.syntaxError(err)
			p.unreadable = true
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.errorf(&extra, "", "a zone file holds one YAML document; found another")
		p.unreadable = true
		return nil
	} else if !errors.Is(err, io.EOF) {
		p.syntaxError(err)
		p.unreadable = true
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

func (p *parser) syntaxError(err error) {
	msg := err.Error()
	pos := Position{File: p.file}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		pos.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	p.errorAt(pos, "", "invalid YAML: %s", msg)
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or an explicit or empty YAML null, which means "not set".
func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
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

// entry is one key/value pair of a mapping.
type entry struct {
	key  string
	k, v *yaml.Node
}

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

// entries returns the pairs of a mapping in file order, expanding merge keys (<<); explicit keys
// win over merged ones. It reports duplicate and non-scalar keys. A null node has no entries.
func (p *parser) entries(n *yaml.Node, path string) []entry {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "must be a mapping, not %s", kindName(n))
		return nil
	}
	var out, merged []entry
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if !p.spend(k) {
			return nil
		}
		switch {
		case isMerge(k):
			merged = append(merged, p.mergeEntries(v, path)...)
		case k.Kind != yaml.ScalarNode:
			p.errorf(k, path, "a mapping key must be a scalar, not %s", kindName(k))
		case seen[k.Value] != nil:
			p.errorf(k, path, "duplicate key %q (first at line %d)", k.Value, seen[k.Value].Line)
		default:
			seen[k.Value] = k
			out = append(out, entry{key: k.Value, k: k, v: v})
		}
	}
	for _, e := range merged {
		if seen[e.key] == nil {
			seen[e.key] = e.k
			out = append(out, e)
		}
	}
	return out
}

// mergeEntries returns the pairs a merge key brings in: one mapping, or a list of mappings where
// the earlier ones win.
func (p *parser) mergeEntries(v *yaml.Node, path string) []entry {
	if v.Kind == yaml.SequenceNode {
		var out []entry
		for _, item := range v.Content {
			out = append(out, p.mergeEntries(item, path)...)
		}
		return out
	}
	target := resolve(v)
	if target.Kind != yaml.MappingNode {
		p.errorf(v, path, "a merge key (<<) needs a mapping or a list of mappings, not %s", kindName(target))
		return nil
	}
	if p.active[target] {
		p.errorf(v, path, "merge key (<<) refers to a mapping that contains it")
		return nil
	}
	p.active[target] = true
	defer delete(p.active, target)
	return p.entries(target, path)
}

// items returns the elements of a list; a null node has none.
func (p *parser) items(n *yaml.Node, path string) []*yaml.Node {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, path, "must be a list, not %s", kindName(n))
		return nil
	}
	for _, item := range n.Content {
		if !p.spend(item) {
			return nil
		}
	}
	return n.Content
}

// unknownKey reports a key that is not one of valid.
func (p *parser) unknownKey(e entry, path string, valid []string) {
	p.errorf(e.k, path, "%v", unknownChoice("key", e.key, valid))
}

// scalar returns n as a scalar node, or records that it is not one.
func (p *parser) scalar(n *yaml.Node, path, want string) (*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		p.errorf(n, path, "must be %s, not %s", want, kindName(n))
		return nil, false
	}
	return n, true
}

// str returns the text of a scalar; numbers and booleans are taken as written.
func (p *parser) str(n *yaml.Node, path string) (string, bool) {
	s, ok := p.scalar(n, path, "a string")
	if !ok {
		return "", false
	}
	return strings.TrimSpace(s.Value), true
}

// integer returns an integer in lo..hi, written as a YAML integer or a quoted decimal string.
func (p *parser) integer(n *yaml.Node, path string, lo, hi int64) (int64, bool) {
	s, ok := p.scalar(n, path, "an integer")
	if !ok {
		return 0, false
	}
	var v int64
	var err error
	switch s.ShortTag() {
	case "!!int":
		if v, err = strconv.ParseInt(s.Value, 10, 64); err != nil {
			err = s.Decode(&v) // 0x, 0o and other YAML forms
		}
	case "!!str":
		v, err = strconv.ParseInt(strings.TrimSpace(s.Value), 10, 64)
	default:
		err = errors.New("not an integer")
	}
	if err != nil {
		p.errorf(s, path, "must be an integer, not %q", s.Value)
		return 0, false
	}
	if v < lo || v > hi {
		if v < lo && hi >= math.MaxInt32 {
			p.errorf(s, path, "must be at least %d, not %d", lo, v)
		} else {
			p.errorf(s, path, "must be between %d and %d, not %d", lo, hi, v)
		}
		return 0, false
	}
	return v, true
}

// boolean returns true or false, written as a YAML boolean or a quoted "true"/"false".
func (p *parser) boolean(n *yaml.Node, path string) (bool, bool) {
	s, ok := p.scalar(n, path, "true or false")
	if !ok {
		return false, false
	}
	switch s.ShortTag() {
	case "!!bool":
		var v bool
		if s.Decode(&v) == nil {
			return v, true
		}
	case "!!str":
		switch strings.ToLower(strings.TrimSpace(s.Value)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	p.errorf(s, path, "must be true or false, not %q", s.Value)
	return false, false
}

// number returns a finite number in lo..hi.
func (p *parser) number(n *yaml.Node, path string, lo, hi float64) (float64, bool) {
	s, ok := p.scalar(n, path, "a number")
	if !ok {
		return 0, false
	}
	var v float64
	var err error
	switch s.ShortTag() {
	case "!!int", "!!float":
		err = s.Decode(&v)
	case "!!str":
		v, err = strconv.ParseFloat(strings.TrimSpace(s.Value), 64)
	default:
		err = errors.New("not a number")
	}
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.errorf(s, path, "must be a number, not %q", s.Value)
		return 0, false
	}
	if v < lo || v > hi {
		p.errorf(s, path, "must be between %g and %g, not %g", lo, hi, v)
		return 0, false
	}
	return v, true
}

// duration returns a positive duration written as a Go duration ("1m30s") or a number of seconds.
func (p *parser) duration(n *yaml.Node, path string) (time.Duration, bool) {
	s, ok := p.scalar(n, path, "a duration")
	if !ok {
		return 0, false
	}
	d, err := ParseDuration(s.Value)
	if err != nil || d <= 0 {
		p.errorf(s, path, "must be a positive duration such as \"10s\" or \"1m30s\", or a number of seconds, not %q", s.Value)
		return 0, false
	}
	return d, true
}

// strList returns a list of non-empty strings.
func (p *parser) strList(n *yaml.Node, path string) ([]string, bool) {
	ok := true
	var out []string
	for i, item := range p.items(n, path) {
		ipath := index(path, i)
		s, good := p.str(item, ipath)
		if good && s == "" {
			p.errorf(item, ipath, "must not be empty")
			good = false
		}
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// plain converts a YAML value into plain Go values: nil, string, int, bool, float64, []any and
// map[string]any. Timestamps and other tags stay strings as written.
func (p *parser) plain(n *yaml.Node, path string) (any, bool) {
	if !p.spend(n) {
		return nil, false
	}
	if n.Kind == yaml.AliasNode {
		target := resolve(n)
		if p.active[target] {
			p.errorf(n, path, "alias refers to a value that contains it")
			return nil, false
		}
		p.active[target] = true
		defer delete(p.active, target)
		n = target
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		ok := true
		for _, e := range p.entries(n, path) {
			v, good := p.plain(e.v, child(path, e.key))
			m[e.key], ok = v, ok && good
		}
		return m, ok
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		ok := true
		for i, item := range n.Content {
			v, good := p.plain(item, index(path, i))
			l, ok = append(l, v), ok && good
		}
		return l, ok
	case yaml.ScalarNode:
		return p.plainScalar(n, path)
	default:
		p.errorf(n, path, "unsupported YAML node")
		return nil, false
	}
}

func (p *parser) plainScalar(n *yaml.Node, path string) (any, bool) {
	var err error
	switch n.ShortTag() {
	case "!!null":
		return nil, true
	case "!!bool":
		var v bool
		if err = n.Decode(&v); err == nil {
			return v, true
		}
	case "!!int":
		var v int
		if err = n.Decode(&v); err == nil {
			return v, true
		}
	case "!!float":
		var v float64
		if err = n.Decode(&v); err == nil {
			return v, true
		}
	default:
		return n.Value, true
	}
	p.errorf(n, path, "invalid value %q: %v", n.Value, err)
	return nil, false
}

// child returns the path of a key below path.
func child(path, key string) string {
	if path == "" {
		return key
	}
	if isIdent(key) {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// isIdent reports whether key can follow a dot in a path: letters, digits, '_' and '-'.
func isIdent(key string) bool {
	for _, c := range []byte(key) {
		if !isLetter(c) && !('0' <= c && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return key != ""
}

// index returns the path of a list element.
func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
