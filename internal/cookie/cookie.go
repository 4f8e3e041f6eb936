// Package cookie makes and checks DNS server cookies (RFC 7873), in the interoperable form of
// RFC 9018: a version byte (1), three reserved bytes, a 32-bit timestamp, and the SipHash-2-4
// of the client cookie, those eight bytes and the client's address under a 128-bit secret.
// Servers that share the secret (the instances of a site, and BIND, Knot or PowerDNS given the
// same secret) accept each other's cookies. Checking and making a cookie takes no lock and
// allocates nothing, for the query path.
package cookie

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
)

// Sizes of the option data (RFC 7873 4): a client cookie, then an optional server cookie of 8
// to 32 bytes; the server cookies this package makes are 16 bytes long.
const (
	ClientLen    = 8
	ServerLen    = 16
	minServerLen = 8
	maxServerLen = 32
	// OptionLen is the length of the option data of a reply: the client's cookie and ours.
	OptionLen = ClientLen + ServerLen
)

// RFC 9018 4.3: a server cookie is valid from its timestamp until an hour later, and up to
// five minutes before it (another server's clock may be ahead).
const (
	maxAge    = 3600
	maxAhead  = 300
	version   = 1
	maxSecret = 8
)

// Status is what the COOKIE option of a query says.
type Status uint8

// The statuses of a query's COOKIE option.
const (
	// None: the query has no COOKIE option.
	None Status = iota
	// Malformed: the option's length is not a client cookie with or without a server cookie
	// (RFC 7873 5.2.2: FORMERR).
	Malformed
	// ClientOnly: a client cookie, and no server cookie or one that this server did not make
	// (another secret, another format, too old): the client has none of ours yet.
	ClientOnly
	// Valid: a server cookie this server (or one sharing its secret) made for this client,
	// recently: the client received our answers at its address.
	Valid
)

// Secret is a 128-bit server secret.
type Secret [16]byte

// Secrets are a server's secrets: the first makes the server cookies, every one is accepted.
type Secrets struct {
	list []Secret
}

// NewSecrets returns the secrets list, which must not be empty: the first makes cookies.
func NewSecrets(list ...Secret) *Secrets {
	return &Secrets{list: append([]Secret(nil), list...)}
}

// RandomSecrets returns one random secret: the secret of a server that shares none.
func RandomSecrets() *Secrets {
	var s Secret
	_, _ = rand.Read(s[:]) // crypto/rand.Read never fails
	return NewSecrets(s)
}

// ParseSecrets reads a secrets file (cookie_secret_file): one secret a line, 32 hexadecimal
// digits; the first line makes the cookies, every line is accepted. Blank lines and lines
// starting with # are skipped. file names the file in errors.
func ParseSecrets(file string, data []byte) (*Secrets, error) {
	var list []Secret
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil || len(b) != len(Secret{}) {
			return nil, fmt.Errorf("%s:%d: a secret is 32 hexadecimal digits (128 bits; openssl rand -hex 16 writes one)", file, n)
		}
		if len(list) == maxSecret {
			return nil, fmt.Errorf("%s:%d: more than %d secrets", file, n, maxSecret)
		}
		list = append(list, Secret(b))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: no secret: write one line of 32 hexadecimal digits (openssl rand -hex 16)", file)
	}
	return NewSecrets(list...), nil
}

// Jar holds a server's current secrets, replaced when their file changes.
type Jar struct {
	p atomic.Pointer[Secrets]
}

// NewJar returns a jar holding s.
func NewJar(s *Secrets) *Jar {
	j := &Jar{}
	j.p.Store(s)
	return j
}

// Set replaces the secrets.
func (j *Jar) Set(s *Secrets) { j.p.Store(s) }

// Secrets returns the current secrets.
func (j *Jar) Secrets() *Secrets { return j.p.Load() }

// Check reads opt, the data of a query's COOKIE option, from client (its transport address) at
// now (Unix seconds).
func (s *Secrets) Check(opt []byte, client netip.Addr, now uint32) Status {
	switch n := len(opt); {
	case n == ClientLen:
		return ClientOnly
	case n < ClientLen+minServerLen || n > ClientLen+maxServerLen:
		return Malformed
	case n != OptionLen || opt[ClientLen] != version:
		return ClientOnly // another server's format: ours is made anew
	}
	ts := binary.BigEndian.Uint32(opt[ClientLen+4:])
	if age := int32(now - ts); age > maxAge || age < -maxAhead {
		return ClientOnly
	}
	for i := range s.list {
		var mac [8]byte
		binary.LittleEndian.PutUint64(mac[:], s.hash(&s.list[i], opt[:ClientLen], opt[ClientLen:ClientLen+8], client))
		if subtle.ConstantTimeCompare(mac[:], opt[ClientLen+8:]) == 1 {
			return Valid
		}
	}
	return ClientOnly
}

// Append appends to dst the option data of a reply to client at now: the client cookie (the
// first ClientLen bytes of the query's option) and a new server cookie made with the first
// secret.
func (s *Secrets) Append(dst, clientCookie []byte, client netip.Addr, now uint32) []byte {
	var head [8]byte
	head[0] = version
	binary.BigEndian.PutUint32(head[4:], now)
	dst = append(dst, clientCookie[:ClientLen]...)
	dst = append(dst, head[:]...)
	// SipHash's output is its 64-bit result in little-endian order.
	return binary.LittleEndian.AppendUint64(dst, s.hash(&s.list[0], clientCookie[:ClientLen], head[:], client))
}

// hash is the hash of RFC 9018 4.4: SipHash-2-4 of the client cookie, the version, reserved
// and timestamp bytes (head) and the client's address (4 bytes for IPv4, 16 for IPv6), under
// secret.
func (*Secrets) hash(secret *Secret, clientCookie, head []byte, client netip.Addr) uint64 {
	var buf [ClientLen + 8 + 16]byte
	n := copy(buf[:], clientCookie)
	n += copy(buf[n:], head)
	client = client.Unmap()
	if client.Is4() {
		a := client.As4()
		n += copy(buf[n:], a[:])
	} else {
		a := client.As16()
		n += copy(buf[n:], a[:])
	}
	return sipHash24((*[16]byte)(secret), buf[:n])
}
