package config

import (
	"errors"
	"fmt"
	"hash/maphash"
	"net/netip"
	"strings"
)

// CanonicalName lower-cases a DNS name and adds the trailing dot. Only ASCII letters are folded,
// as DNS compares names (RFC 4343); surrounding white space is removed.
func CanonicalName(s string) string {
	s = strings.TrimSpace(s)
	if isCanonical(s) {
		return s // the parser's own string: a big zone keeps no second copy of its names
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	if len(b) == 0 || b[len(b)-1] != '.' {
		b = append(b, '.')
	}
	return string(b)
}

// isCanonical reports whether s is already as CanonicalName makes it: not empty, no upper-case
// letter, a final dot.
func isCanonical(s string) bool {
	if s == "" || s[len(s)-1] != '.' {
		return false
	}
	for i := range len(s) {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return false
		}
	}
	return true
}

// checkName validates a canonical name: labels of 1..63 letters, digits, hyphens and underscores,
// at most 253 characters in all. With wildcard, the leftmost label may be "*". The root "." is valid.
func checkName(name string, wildcard bool) error {
	if name == "." {
		return nil
	}
	if len(name)-1 > 253 {
		return fmt.Errorf("name is longer than 253 characters")
	}
	first := true
	for label := range strings.SplitSeq(name[:len(name)-1], ".") {
		leftmost := first
		first = false
		switch {
		case label == "":
			return errors.New("name has an empty label")
		case len(label) > 63:
			return fmt.Errorf("label %q is longer than 63 characters", label)
		case label == "*" && wildcard && leftmost:
			continue
		}
		for _, c := range []byte(label) {
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
			case c == '*' && wildcard:
				return errors.New(`a wildcard "*" must be the whole leftmost label`)
			default:
				return fmt.Errorf("label %q has the invalid character %q", label, rune(c))
			}
		}
	}
	return nil
}

// checkHost validates a canonical host name: a valid name, not the root, no wildcard, and not
// looking like an address (its last label is not all digits).
func checkHost(name string) error {
	if name == "." {
		return errors.New("the root is not a host name")
	}
	if err := checkName(name, false); err != nil {
		return err
	}
	labels := strings.Split(name[:len(name)-1], ".")
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return errors.New("the last label is all digits")
	}
	return nil
}

// CheckHostName reports why s, written in any case, with or without the trailing dot, is not a
// host name (see checkHost).
func CheckHostName(s string) error { return checkHost(CanonicalName(s)) }

// inZone reports whether the canonical name is the origin or below it on a label boundary.
func inZone(name, origin string) bool {
	return origin == "." || name == origin || strings.HasSuffix(name, "."+origin)
}

// parseIP parses an IPv4 or IPv6 address without zone index; IPv4-mapped IPv6 becomes IPv4.
func parseIP(s string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", s)
	}
	if ip.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%q: an IPv6 zone index is not allowed", s)
	}
	return ip.Unmap(), nil
}

// parseAddress parses a backend address: an IP address, or a host name returned canonical.
func parseAddress(s string) (netip.Addr, string, error) {
	if strings.Contains(s, ":") {
		ip, err := parseIP(s)
		return ip, s, err
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip, s, nil
	}
	name := CanonicalName(s)
	if s == "" || checkHost(name) != nil {
		return netip.Addr{}, "", fmt.Errorf("%q is neither an IP address nor a host name", s)
	}
	return netip.Addr{}, name, nil
}

// joinName prefixes a label to a canonical zone name.
func joinName(label, origin string) string {
	if origin == "." {
		return label + "."
	}
	return label + "." + origin
}

// CheckRecordName reports why name (canonical) cannot be a record's name, as the zone files
// check it: a wildcard is allowed as the first label.
func CheckRecordName(name string) error { return checkName(name, true) }

// stringCache keeps strings by their hash so that equal strings share one copy: a small cache
// of fixed size rather than a map of every string, which a zone of distinct addresses would
// grow for nothing. Each string has two slots (two parts of its hash); it takes the first while
// that is empty, else the second, so that the first few thousand distinct strings (a zone's
// addresses are mostly a few hundred repeated) stay, and later ones share the second slots.
type stringCache [4096]string

// stringCacheSeed is the hash seed of every stringCache.
var stringCacheSeed = maphash.MakeSeed()

// intern returns the cached string equal to s, or s, which it caches in one of its slots.
func (c *stringCache) intern(s string) string {
	h := maphash.String(stringCacheSeed, s)
	first, second := &c[h%uint64(len(c))], &c[(h>>32)%uint64(len(c))]
	switch {
	case *first == s:
		return *first
	case *second == s:
		return *second
	case *first == "":
		*first = s
	default:
		*second = s
	}
	return s
}
