package cookie

import (
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
)

func TestSipHashVector(t *testing.T) {
	// The SipHash paper's test vector: key 00..0f, message 00..0e.
	var k [16]byte
	msg := make([]byte, 15)
	for i := range k {
		k[i] = byte(i)
	}
	for i := range msg {
		msg[i] = byte(i)
	}
	if got := sipHash24(&k, msg); got != 0xa129ca6149be45e5 {
		t.Errorf("SipHash-2-4 = %x, want a129ca6149be45e5", got)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRFC9018Vectors makes and checks the server cookies of RFC 9018's appendix A.
func TestRFC9018Vectors(t *testing.T) {
	secret := Secret(mustHex(t, "e5e973e5a6b2a43f48e7dc849e37bfcf"))
	s := NewSecrets(secret)
	for _, v := range []struct {
		client, ip string
		now        uint32
		want       string
	}{
		{"2464c4abcf10c957", "198.51.100.100", 1559731985, "2464c4abcf10c957010000005cf79f111f8130c3eee29480"},
	} {
		got := s.Append(nil, mustHex(t, v.client), netip.MustParseAddr(v.ip), v.now)
		if hex.EncodeToString(got) != v.want {
			t.Errorf("cookie for %s at %d = %x, want %s", v.ip, v.now, got, v.want)
		}
		if st := s.Check(got, netip.MustParseAddr(v.ip), v.now+60); st != Valid {
			t.Errorf("its own cookie is %d", st)
		}
	}
}

func TestCheck(t *testing.T) {
	old, cur := Secret{1}, Secret{2}
	s := NewSecrets(cur, old)
	client := netip.MustParseAddr("2001:db8::53")
	cc := mustHex(t, "0102030405060708")
	const now = 1_700_000_000
	good := s.Append(nil, cc, client, now)
	byOld := NewSecrets(old).Append(nil, cc, client, now)
	byOther := NewSecrets(Secret{3}).Append(nil, cc, client, now)
	tampered := append([]byte(nil), good...)
	tampered[len(tampered)-1] ^= 1
	for _, c := range []struct {
		name   string
		opt    []byte
		client netip.Addr
		now    uint32
		want   Status
	}{
		{"client cookie only", cc, client, now, ClientOnly},
		{"valid", good, client, now, Valid},
		{"valid, made with an older secret", byOld, client, now, Valid},
		{"another secret", byOther, client, now, ClientOnly},
		{"tampered", tampered, client, now, ClientOnly},
		{"another client address", good, netip.MustParseAddr("2001:db8::54"), now, ClientOnly},
		{"an IPv4-mapped client is its IPv4 address", s.Append(nil, cc, netip.MustParseAddr("192.0.2.1"), now), netip.MustParseAddr("::ffff:192.0.2.1"), now, Valid},
		{"an hour old", good, client, now + 3600, Valid},
		{"older than an hour", good, client, now + 3601, ClientOnly},
		{"five minutes ahead", good, client, now - 300, Valid},
		{"further ahead", good, client, now - 301, ClientOnly},
		{"too short", cc[:7], client, now, Malformed},
		{"server cookie too short", append(cc, 1, 2, 3, 4, 5, 6, 7), client, now, Malformed},
		{"shortest server cookie of another format", append(cc, 1, 2, 3, 4, 5, 6, 7, 8), client, now, ClientOnly},
		{"longest server cookie", append(cc, make([]byte, 32)...), client, now, ClientOnly},
		{"too long", append(cc, make([]byte, 33)...), client, now, Malformed},
		{"another version", append(append(cc, 2), good[9:]...), client, now, ClientOnly},
	} {
		if got := s.Check(c.opt, c.client, c.now); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// Across the 32-bit wrap of the timestamp (RFC 1982 arithmetic).
	wrap := s.Append(nil, cc, client, 0xffffff00)
	if got := s.Check(wrap, client, 0x100); got != Valid {
		t.Errorf("across the wrap: %d", got)
	}
}

func TestParseSecrets(t *testing.T) {
	s, err := ParseSecrets("f", []byte("# current\n000102030405060708090a0b0c0d0e0f\n\n  f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff  \n"))
	if err != nil || len(s.list) != 2 || s.list[0][1] != 1 || s.list[1][0] != 0xf0 {
		t.Fatalf("%+v %v", s, err)
	}
	for data, want := range map[string]string{
		"":                                   "f: no secret",
		"# none\n":                           "f: no secret",
		"0001\n":                             "f:1: a secret is 32 hexadecimal digits",
		"\nzz0102030405060708090a0b0c0d0e0f": "f:2:",
		strings.Repeat("000102030405060708090a0b0c0d0e0f\n", 9): "f:9: more than 8",
	} {
		if _, err := ParseSecrets("f", []byte(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", data, err, want)
		}
	}
}

func TestNoAllocation(t *testing.T) {
	s := RandomSecrets()
	client := netip.MustParseAddr("192.0.2.1")
	cc := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	buf := make([]byte, 0, OptionLen)
	opt := s.Append(nil, cc, client, 1000)
	if n := testing.AllocsPerRun(100, func() {
		_ = s.Append(buf[:0], cc, client, 1000)
		_ = s.Check(opt, client, 1000)
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

func BenchmarkCheck(b *testing.B) {
	s := RandomSecrets()
	client := netip.MustParseAddr("2001:db8::1")
	opt := s.Append(nil, []byte{1, 2, 3, 4, 5, 6, 7, 8}, client, 1000)
	for b.Loop() {
		s.Check(opt, client, 1000)
	}
}
