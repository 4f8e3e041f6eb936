package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// parser walks the yaml.Node tree of one file and collects every problem it finds.
type parser struct {
	*YAMLFile
	// unreadable is set when a document could not be parsed as YAML at all.
	unreadable bool
	// active holds the alias targets being expanded, to detect cycles.
	active map[*yaml.Node]bool
	// steering is the last record's, which the next records share while they have the same
	// (shareLast).
	steering *Steering
	// settings are the last record's, shared the same way.
	settings *Settings
	// checks are the last backend's with checks, shared the same way by the next backends.
	checks *Checks
	// labels are the last backend's with labels, shared the same way.
	labels *Labels
	// checkBuf is where a backend's health checks are parsed before they are shared or copied.
	checkBuf []HealthCheck
	// seenBackends is the map of a record's backends (backendIDs).
	seenBackends map[backendID]*yaml.Node
	// addresses are the backends' addresses seen last, so that backends with the same address
	// (a pool that serves many names) keep one string.
	addresses stringCache
	// chunked is set for the parser of a chunk's walk (walkChunk), which notes in walked
	// where each record it keeps was written.
	chunked bool
	walked  []walkedRecord
}

func newParser(file string, size int) *parser {
	return &parser{YAMLFile: NewYAMLFile(file, size), active: map[*yaml.Node]bool{}}
}

// err returns the collected errors, or nil when there are none.
func (p *parser) err() error {
	if p.Len() == 0 {
		return nil
	}
	return p.Errors()
}

// document parses data and returns the content of its single YAML document, or nil when the
// file is empty or invalid (the problem is recorded).
func (p *parser) document(data []byte) *yaml.Node {
	return p.takeDocument(decodeDocument(data, 0))
}

// takeDocument records the problems of a decoded document of the file and returns its content.
func (p *parser) takeDocument(d decodedDoc) *yaml.Node {
	root, ok := p.take(d, "a zone file")
	p.unreadable = p.unreadable || !ok
	return root
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
	n = YAMLResolve(n)
	if YAMLIsNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.Errorf(n, path, "must be a mapping, not %s", YAMLKind(n))
		return nil
	}
	var merged []entry
	seen := entrySet{list: make([]entry, 0, len(n.Content)/2), size: len(n.Content) / 2}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := YAMLResolve(n.Content[i]), n.Content[i+1]
		if !p.Spend(k) {
			return nil
		}
		switch {
		case isMerge(k):
			merged = append(merged, p.mergeEntries(v, path)...)
		case k.Kind != yaml.ScalarNode:
			p.Errorf(k, path, "a mapping key must be a scalar, not %s", YAMLKind(k))
		case seen.find(k.Value) != nil:
			p.Errorf(k, path, "duplicate key %q (first at line %d)", k.Value, seen.find(k.Value).Line)
		default:
			seen.add(entry{key: k.Value, k: k, v: v})
		}
	}
	for _, e := range merged {
		if seen.find(e.key) == nil {
			seen.add(e)
		}
	}
	return seen.list
}

// entrySet is the entries of a mapping so far, found by key: by a scan while they are as few
// as a record's or a backend's, by a map once they are more.
type entrySet struct {
	list  []entry
	index map[string]*yaml.Node // nil while list is short
	size  int                   // how many entries the set may get at most, merged ones aside
}

// scanLimit is how many entries entrySet scans before it indexes them.
const scanLimit = 16

// find returns the key node of the entry with key, nil when there is none.
func (s *entrySet) find(key string) *yaml.Node {
	if s.index != nil {
		return s.index[key]
	}
	for i := range s.list {
		if s.list[i].key == key {
			return s.list[i].k
		}
	}
	return nil
}

// add appends e, whose key is not in the set yet.
func (s *entrySet) add(e entry) {
	s.list = append(s.list, e)
	switch {
	case s.index != nil:
		s.index[e.key] = e.k
	case len(s.list) > scanLimit:
		s.index = make(map[string]*yaml.Node, max(s.size, 2*len(s.list)))
		for _, x := range s.list {
			s.index[x.key] = x.k
		}
	}
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
	target := YAMLResolve(v)
	if target.Kind != yaml.MappingNode {
		p.Errorf(v, path, "a merge key (<<) needs a mapping or a list of mappings, not %s", YAMLKind(target))
		return nil
	}
	if p.active[target] {
		p.Errorf(v, path, "merge key (<<) refers to a mapping that contains it")
		return nil
	}
	p.active[target] = true
	defer delete(p.active, target)
	return p.entries(target, path)
}

// items returns the elements of a list; a null node has none.
func (p *parser) items(n *yaml.Node, path string) []*yaml.Node {
	n = YAMLResolve(n)
	if YAMLIsNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.Errorf(n, path, "must be a list, not %s", YAMLKind(n))
		return nil
	}
	for _, item := range n.Content {
		if !p.Spend(item) {
			return nil
		}
	}
	return n.Content
}

// unknownKey reports a key that is not one of valid.
func (p *parser) unknownKey(e entry, path string, valid []string) {
	p.Errorf(e.k, path, "%v", unknownChoice("key", e.key, valid))
}

// scalar returns n as a scalar node, or records that it is not one.
func (p *parser) scalar(n *yaml.Node, path, want string) (*yaml.Node, bool) {
	n = YAMLResolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		p.Errorf(n, path, "must be %s, not %s", want, YAMLKind(n))
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
			var w int64        // to the heap (Decode's argument) only here, not for every integer
			err = s.Decode(&w) // 0x, 0o and other YAML forms
			v = w
		}
	case "!!str":
		v, err = strconv.ParseInt(strings.TrimSpace(s.Value), 10, 64)
	default:
		err = errors.New("not an integer")
	}
	if err != nil {
		p.Errorf(s, path, "must be an integer, not %q", s.Value)
		return 0, false
	}
	if v < lo || v > hi {
		if v < lo && hi >= math.MaxInt32 {
			p.Errorf(s, path, "must be at least %d, not %d", lo, v)
		} else {
			p.Errorf(s, path, "must be between %d and %d, not %d", lo, hi, v)
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
	p.Errorf(s, path, "must be true or false, not %q", s.Value)
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
		p.Errorf(s, path, "must be a number, not %q", s.Value)
		return 0, false
	}
	if v < lo || v > hi {
		p.Errorf(s, path, "must be between %g and %g, not %g", lo, hi, v)
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
		p.Errorf(s, path, "must be a positive duration such as \"10s\" or \"1m30s\", or a number of seconds, not %q", s.Value)
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
			p.Errorf(item, ipath, "must not be empty")
			good = false
		}
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// plain converts a YAML value into plain Go values: nil, string, int, bool, float64, []any and
// map[string]any. Timestamps and other tags stay strings as written.
func (p *parser) plain(n *yaml.Node, path string) (any, bool) { return p.plainInto(n, path, nil) }

// plainInto is plain, but a mapping's entries go to the sorted pairs *into when into is not
// nil (a check's parameters), and its value is then nil.
func (p *parser) plainInto(n *yaml.Node, path string, into *[]Param) (any, bool) {
	if !p.Spend(n) {
		return nil, false
	}
	if n.Kind == yaml.AliasNode {
		target := YAMLResolve(n)
		if p.active[target] {
			p.Errorf(n, path, "alias refers to a value that contains it")
			return nil, false
		}
		p.active[target] = true
		defer delete(p.active, target)
		n = target
	}
	switch n.Kind {
	case yaml.MappingNode:
		entries := p.entries(n, path)
		var m map[string]any
		if into == nil {
			m = make(map[string]any, len(entries))
		} else {
			*into = make([]Param, 0, len(entries))
		}
		ok := true
		for _, e := range entries {
			v, good := p.plain(e.v, child(path, e.key))
			ok = ok && good
			if into != nil {
				*into = setParam(*into, e.key, v)
			} else {
				m[e.key] = v
			}
		}
		if into != nil {
			return nil, ok
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
		p.Errorf(n, path, "unsupported YAML node")
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
	p.Errorf(n, path, "invalid value %q: %v", n.Value, err)
	return nil, false
}

// noPath is the path of a record's fields while it is parsed without paths (see
// parser.quietRecord), and every path below it: no key is this string, since yaml.v3 reads
// and makes only UTF-8.
const noPath = "\xff"

// child returns the path of a key below path.
func child(path, key string) string {
	switch path {
	case noPath:
		return noPath
	case "":
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
	if path == noPath {
		return noPath
	}
	return path + "[" + strconv.Itoa(i) + "]"
}
