package geo

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/meridian-gslb/meridian/internal/config"
)

// LocationMap is a parsed geoip_custom file: subnets, IPv4 and IPv6, each naming a location.
// A lookup finds the longest subnet that holds the address. It is immutable.
type LocationMap struct {
	entries []mapEntry
	v4, v6  trie
}

// mapEntry is one subnet of the map.
type mapEntry struct {
	subnet   netip.Prefix
	location string
}

// trie is a binary trie over address bits. Node 0 is the root; a child index of 0 means no
// child (the root is nobody's child).
type trie struct {
	nodes []trieNode
}

type trieNode struct {
	child [2]int32
	entry int32 // index into LocationMap.entries of the subnet ending here, or -1
}

// LoadLocationMap reads and parses a geoip_custom file, refusing one of more than limit bytes
// (config.DefaultMaxFileSize when 0).
func LoadLocationMap(path string, limit int64) (*LocationMap, error) {
	data, err := config.ReadFile(path, limit)
	if err != nil {
		return nil, fmt.Errorf("geoip_custom: %w", err)
	}
	return ParseLocationMap(path, data)
}

// ParseLocationMap parses the content of a location map file:
//
//	subnets:
//	  - subnet: "10.0.0.0/24"
//	    location: "eu-west"
//
// Unknown keys, invalid or non-canonical subnets, empty locations and subnets listed twice are
// errors. Every problem is reported, as a config.ErrorList whose entries name the file, line,
// column and field path; the map is nil then. An empty document is an error, so that a file
// caught half-written is not taken for an empty map: write "subnets: []" for one. Aliases are
// bounded as in zone files: a file whose aliases expand too far is an error.
func ParseLocationMap(file string, data []byte) (*LocationMap, error) {
	p := &mapParser{config.NewYAMLFile(file, len(data))}
	m := &LocationMap{}
	root, ok := p.Document(data, "a location map")
	switch {
	case root != nil:
		p.subnets(root, m)
	case ok:
		p.Errorf(nil, "", "the location map is empty; write \"subnets: []\" for a map without subnets")
	}
	if p.Len() > 0 {
		return nil, p.Errors()
	}
	m.build()
	return m, nil
}

// Lookup returns the location of the longest subnet holding addr, and the prefix length of the
// largest network around addr that gets the same answer (found or not): the subnet's own length,
// or more when a longer subnet of the map lies next to addr inside it. IPv4-mapped IPv6
// addresses are looked up as IPv4, with 96 added to the length. It does not allocate.
func (m *LocationMap) Lookup(addr netip.Addr) (subnet netip.Prefix, location string, bits int, found bool) {
	if !addr.IsValid() {
		return netip.Prefix{}, "", 0, false
	}
	extra := 0
	if addr.Is4In6() {
		addr, extra = addr.Unmap(), 96
	}
	var hi, lo uint64
	t, width := &m.v6, 128
	if addr.Is4() {
		a := addr.As4()
		hi, t, width = uint64(binary.BigEndian.Uint32(a[:]))<<32, &m.v4, 32
	} else {
		a := addr.As16()
		hi, lo = binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	}
	if len(t.nodes) == 0 {
		return netip.Prefix{}, "", extra, false
	}
	best := int32(-1)
	node, depth := int32(0), 0
	for {
		n := &t.nodes[node]
		if n.entry >= 0 {
			best = n.entry
		}
		if depth == width {
			break
		}
		word := hi
		if depth >= 64 {
			word = lo
		}
		bit := (word >> (63 - depth%64)) & 1
		next := n.child[bit]
		if next == 0 {
			if n.child[1-bit] != 0 {
				// The other half holds longer subnets: only this half answers alike.
				depth++
			}
			break
		}
		node = next
		depth++
	}
	if best < 0 {
		return netip.Prefix{}, "", depth + extra, false
	}
	e := &m.entries[best]
	return e.subnet, e.location, depth + extra, true
}

// build fills the tries from the entries.
func (m *LocationMap) build() {
	for i, e := range m.entries {
		t := &m.v6
		if e.subnet.Addr().Is4() {
			t = &m.v4
		}
		if len(t.nodes) == 0 {
			t.nodes = append(t.nodes, trieNode{entry: -1})
		}
		a := e.subnet.Addr().As16()
		if e.subnet.Addr().Is4() {
			a = [16]byte{}
			a4 := e.subnet.Addr().As4()
			copy(a[:], a4[:])
		}
		node := int32(0)
		for depth := range e.subnet.Bits() {
			bit := (a[depth/8] >> (7 - depth%8)) & 1
			next := t.nodes[node].child[bit]
			if next == 0 {
				next = int32(len(t.nodes))
				t.nodes = append(t.nodes, trieNode{entry: -1})
				t.nodes[node].child[bit] = next
			}
			node = next
		}
		t.nodes[node].entry = int32(i)
	}
}

// mapParser collects every problem of one location map file.
type mapParser struct {
	*config.YAMLFile
}

// pairs returns the key and value nodes of a mapping, reporting non-scalar keys, duplicate keys
// and keys not in valid.
func (p *mapParser) pairs(n *yaml.Node, path string, valid ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := config.YAMLResolve(n.Content[i]), n.Content[i+1]
		if !p.Spend(k) {
			break
		}
		switch {
		case k.Kind != yaml.ScalarNode:
			p.Errorf(k, path, "a key must be a scalar, not %s", config.YAMLKind(k))
		case keys[k.Value] != nil:
			p.Errorf(k, path, "duplicate key %q (first at line %d)", k.Value, keys[k.Value].Line)
		case !slices.Contains(valid, k.Value):
			keys[k.Value] = k
			p.Errorf(k, path, "unknown key %q (valid: %s)", k.Value, strings.Join(valid, ", "))
		default:
			keys[k.Value] = k
			out[k.Value] = v
		}
	}
	return out
}

// subnets parses the top level of the file into m.entries.
func (p *mapParser) subnets(root *yaml.Node, m *LocationMap) {
	root = config.YAMLResolve(root)
	if root.Kind != yaml.MappingNode {
		p.Errorf(root, "", "a location map must be a mapping with the key \"subnets\", not %s", config.YAMLKind(root))
		return
	}
	list := p.pairs(root, "", "subnets")["subnets"]
	if list == nil {
		if p.Len() == 0 {
			p.Errorf(root, "", "the key \"subnets\" is missing; write \"subnets: []\" for a map without subnets")
		}
		return
	}
	list = config.YAMLResolve(list)
	if config.YAMLIsNull(list) {
		return
	}
	if list.Kind != yaml.SequenceNode {
		p.Errorf(list, "subnets", "must be a list, not %s", config.YAMLKind(list))
		return
	}
	first := map[netip.Prefix]int{}
	for i, item := range list.Content {
		if !p.Spend(item) {
			return
		}
		path := "subnets[" + strconv.Itoa(i) + "]"
		item = config.YAMLResolve(item)
		if item.Kind != yaml.MappingNode {
			p.Errorf(item, path, "must be a mapping with subnet and location, not %s", config.YAMLKind(item))
			continue
		}
		kv := p.pairs(item, path, "subnet", "location")
		prefix, okP := p.subnet(item, kv["subnet"], path+".subnet")
		location, okL := p.location(item, kv["location"], path+".location")
		if !okP {
			continue
		}
		if line, dup := first[prefix]; dup {
			p.Errorf(kv["subnet"], path+".subnet", "duplicate subnet %s (first at line %d)", prefix, line)
			continue
		}
		first[prefix] = config.YAMLResolve(kv["subnet"]).Line
		if okL {
			m.entries = append(m.entries, mapEntry{subnet: prefix, location: location})
		}
	}
}

// text returns the trimmed text of a required scalar field.
func (p *mapParser) text(parent, n *yaml.Node, path, what string) (*yaml.Node, string, bool) {
	if n == nil {
		p.Errorf(parent, path, "%s is missing", what)
		return nil, "", false
	}
	n = config.YAMLResolve(n)
	if n.Kind != yaml.ScalarNode || config.YAMLIsNull(n) {
		p.Errorf(n, path, "must be %s, not %s", what, config.YAMLKind(n))
		return nil, "", false
	}
	s := strings.TrimSpace(n.Value)
	if s == "" {
		p.Errorf(n, path, "must not be empty")
		return nil, "", false
	}
	return n, s, true
}

func (p *mapParser) subnet(parent, n *yaml.Node, path string) (netip.Prefix, bool) {
	n, s, ok := p.text(parent, n, path, "a subnet in CIDR form")
	if !ok {
		return netip.Prefix{}, false
	}
	prefix, err := netip.ParsePrefix(s)
	if err != nil {
		if a, aerr := netip.ParseAddr(s); aerr == nil {
			p.Errorf(n, path, "%q is an address, not a subnet: write it in CIDR form, such as %s/%d", s, s, a.BitLen())
		} else {
			p.Errorf(n, path, "invalid subnet %q: want CIDR form such as 10.0.0.0/24 or 2001:db8::/48", s)
		}
		return netip.Prefix{}, false
	}
	if prefix.Addr().Is4In6() {
		p.Errorf(n, path, "%s is an IPv4-mapped IPv6 subnet: write IPv4 subnets in IPv4 form", s)
		return netip.Prefix{}, false
	}
	if masked := prefix.Masked(); masked != prefix {
		p.Errorf(n, path, "%s has host bits set: the subnet is %s", s, masked)
		return netip.Prefix{}, false
	}
	return prefix, true
}

func (p *mapParser) location(parent, n *yaml.Node, path string) (string, bool) {
	_, s, ok := p.text(parent, n, path, "a location name")
	return s, ok
}
