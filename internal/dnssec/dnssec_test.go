package dnssec

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestReadKey reads key pairs by each name CoreDNS's dnssec plugin takes, with their timing
// metadata, and refuses what would sign wrong: an algorithm other than 13 and 15, a .private
// file of another key, a missing file, a timing line that is not a time.
func TestReadKey(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ksk := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "example.org", Algorithm: dns.ECDSAP256SHA256, KSK: true, Activate: at, SyncPublish: at.Add(time.Hour)})
	zsk := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "example.org"})
	for _, name := range []string{ksk.Base, ksk.Base + ".key", ksk.Base + ".private"} {
		k, err := ReadKey(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if k.Tag != ksk.DNSKEY.KeyTag() || !k.SEP() || k.Algorithm() != "ECDSAP256SHA256" || !k.Timing.Activate.Equal(at) || !k.Timing.SyncPublish.Equal(at.Add(time.Hour)) {
			t.Errorf("%s: read tag %d SEP %v %s timing %+v", name, k.Tag, k.SEP(), k.Algorithm(), k.Timing)
		}
	}
	if k, err := ReadKey(zsk.Base); err != nil || k.SEP() || k.Algorithm() != "ED25519" || !k.Timing.Activate.IsZero() {
		t.Errorf("ZSK: %+v, %v", k, err)
	}

	// A .private of another key beside a .key.
	mixed := dir + "/Kmixed"
	copyFile(t, ksk.Base+".key", mixed+".key")
	other := testutil.WriteKey(t, dir, testutil.KeySpec{Zone: "example.org", Algorithm: dns.ECDSAP256SHA256, KSK: true})
	copyFile(t, other.Base+".private", mixed+".private")
	rsa := dir + "/Krsa"
	writeFile(t, rsa+".key", "example.org. IN DNSKEY 257 3 8 AwEAAa==\n")
	badTime := dir + "/Kbadtime"
	copyFile(t, zsk.Base+".key", badTime+".key")
	copyFile(t, zsk.Base+".private", badTime+".private")
	appendFile(t, badTime+".private", "Activate: tomorrow\n")
	for _, tt := range []struct{ name, path, want string }{
		{"another key's private file", mixed, "is not the public key's"},
		{"RSA", rsa, "algorithm 8 (RSASHA256) is not supported"},
		{"no file", dir + "/Knone", "no such file"},
		{"a bad time", badTime, `Activate: "tomorrow" is not a time`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadKey(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b)+text)
}

// TestKeyStates walks a key through its timing metadata: created, published, active,
// retired, removed; and the CDS set by SyncPublish and SyncDelete, or without them from
// publication to retirement.
func TestKeyStates(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := &Key{Timing: Timing{Publish: t0.Add(time.Hour), Activate: t0.Add(2 * time.Hour), Inactive: t0.Add(3 * time.Hour), Delete: t0.Add(4 * time.Hour)}}
	synced := &Key{Timing: Timing{SyncPublish: t0.Add(2 * time.Hour), SyncDelete: t0.Add(3 * time.Hour)}}
	for _, tt := range []struct {
		at        time.Duration
		state     State
		published bool
		sync      bool // k's CDS
		synced    bool // synced's CDS
	}{
		{0, StateCreated, false, false, false},
		{time.Hour, StatePublished, true, true, false},
		{2 * time.Hour, StateActive, true, true, true},
		{3 * time.Hour, StateRetired, true, false, false},
		{4 * time.Hour, StateRemoved, false, false, false},
	} {
		now := t0.Add(tt.at)
		if got := k.StateAt(now); got != tt.state || k.published(now) != tt.published || k.inSync(now) != tt.sync || synced.inSync(now) != tt.synced {
			t.Errorf("at +%s: state %s published %v sync %v (synced %v), want %s %v %v %v", tt.at, got, k.published(now), k.inSync(now), synced.inSync(now), tt.state, tt.published, tt.sync, tt.synced)
		}
	}
	if got := (&Key{}).StateAt(t0); got != StateActive {
		t.Errorf("a key without timing metadata is %s, want active", got)
	}
}

// readKeys writes the keys of specs into a temporary directory and reads them back.
func readKeys(t *testing.T, specs ...testutil.KeySpec) []*Key {
	t.Helper()
	dir := t.TempDir()
	var out []*Key
	for _, s := range specs {
		k, err := ReadKey(testutil.WriteKey(t, dir, s).Base)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

// TestKeysetSigns: a keyset of KSK and ZSK signs split (the KSK the key RRsets, the ZSK the
// rest), a keyset of one kind signs everything with every active key; Check refuses a moment
// without a key to sign some RRset; Epoch and NextEvent follow the timing metadata.
func TestKeysetSigns(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	keys := readKeys(t,
		testutil.KeySpec{Zone: "example.org", KSK: true},
		testutil.KeySpec{Zone: "example.org", Inactive: now.Add(time.Hour)},
		testutil.KeySpec{Zone: "example.org", Publish: now, Activate: now.Add(time.Hour)},
	)
	split, err := NewKeyset(keys)
	if err != nil {
		t.Fatal(err)
	}
	tags := func(ks []*Key) []uint16 {
		var out []uint16
		for _, k := range ks {
			out = append(out, k.Tag)
		}
		return out
	}
	if got := tags(split.signing(dns.TypeDNSKEY, now)); !slices.Equal(got, []uint16{keys[0].Tag}) {
		t.Errorf("DNSKEY signed by %v, want the KSK %d", got, keys[0].Tag)
	}
	if got := tags(split.signing(dns.TypeA, now)); !slices.Equal(got, []uint16{keys[1].Tag}) {
		t.Errorf("A signed by %v, want the active ZSK %d", got, keys[1].Tag)
	}
	if got := tags(split.signing(dns.TypeA, now.Add(time.Hour))); !slices.Equal(got, []uint16{keys[2].Tag}) {
		t.Errorf("after the rollover, A signed by %v, want the new ZSK %d", got, keys[2].Tag)
	}
	if n := len(split.DNSKEY("example.org.", 60, now)); n != 3 {
		t.Errorf("DNSKEY RRset of %d keys, want 3 (the successor published)", n)
	}
	if e0, e1 := split.Epoch(now.Add(-time.Second)), split.Epoch(now.Add(time.Hour)); e1 != e0+3 {
		t.Errorf("epochs %d and %d: want three events between (publish, activate, inactive)", e0, e1)
	}
	if next := split.NextEvent(now); !next.Equal(now.Add(time.Hour)) {
		t.Errorf("next event %s, want %s", next, now.Add(time.Hour))
	}
	if err := split.Check(now); err != nil {
		t.Error(err)
	}
	gone, _ := NewKeyset(keys[:2])
	if err := gone.Check(now.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "no ZSK is active") {
		t.Errorf("Check with the only ZSK retired: %v", err)
	}
	csk, _ := NewKeyset(keys[1:2])
	if got := tags(csk.signing(dns.TypeDNSKEY, now)); !slices.Equal(got, []uint16{keys[1].Tag}) || csk.Role(keys[1]) != "CSK" {
		t.Errorf("one key is a CSK signing the DNSKEY RRset: %v, %s", got, csk.Role(keys[1]))
	}
	if _, err := NewKeyset([]*Key{keys[0], keys[0]}); err == nil {
		t.Error("a key given twice is accepted")
	}
}

// TestSignValidates signs RRsets and validates them with the DNSKEY RRset: a record, a
// wildcard (whose signature validates for the names it answers), the DNSKEY RRset with the
// KSK; the signatures' inception is back-dated and their expiration jittered within refresh.
func TestSignValidates(t *testing.T) {
	keys := readKeys(t, testutil.KeySpec{Zone: "example.org", KSK: true, Algorithm: dns.ECDSAP256SHA256}, testutil.KeySpec{Zone: "example.org"})
	ks, _ := NewKeyset(keys)
	opts := Options{Validity: 14 * 24 * time.Hour, Refresh: 5 * 24 * time.Hour, InceptionOffset: time.Hour, KeyTTL: 300}
	s := NewSigner("example.org.", ks, opts)
	now := time.Now()
	dnskeys := s.DNSKEY(now)
	verify := func(rrset []dns.RR, sig *Signed, owner string) {
		t.Helper()
		if len(sig.RRSIGs) != 1 {
			t.Fatalf("%d signatures, want 1", len(sig.RRSIGs))
		}
		rrsig := *sig.RRSIGs[0].(*dns.RRSIG)
		rrsig.Hdr.Name = owner
		var key *dns.DNSKEY
		for _, k := range dnskeys {
			if k.(*dns.DNSKEY).KeyTag() == rrsig.KeyTag {
				key = k.(*dns.DNSKEY)
			}
		}
		if key == nil {
			t.Fatalf("signed by %d, which is not in the DNSKEY RRset", rrsig.KeyTag)
		}
		if err := rrsig.Verify(key, rrset); err != nil {
			t.Errorf("%s: %v", owner, err)
		}
		if !rrsig.ValidityPeriod(now) || rrsig.ValidityPeriod(now.Add(opts.Validity)) || !rrsig.ValidityPeriod(now.Add(opts.Validity-opts.Refresh/2)) {
			t.Errorf("validity %d to %d does not hold now, and to within refresh/2 of the validity", rrsig.Inception, rrsig.Expiration)
		}
		if int64(rrsig.Inception) > now.Add(-opts.InceptionOffset).Unix() {
			t.Errorf("inception %d is not back-dated by %s", rrsig.Inception, opts.InceptionOffset)
		}
	}
	a := rr(t, "www.example.org. 30 IN A 192.0.2.1")
	sig, err := s.Sign([]dns.RR{a}, now)
	if err != nil {
		t.Fatal(err)
	}
	verify([]dns.RR{a}, sig, "www.example.org.")
	if sig.RRSIGs[0].(*dns.RRSIG).KeyTag != keys[1].Tag {
		t.Errorf("an A RRset signed by %d, want the ZSK", sig.RRSIGs[0].(*dns.RRSIG).KeyTag)
	}

	wild := rr(t, "*.app.example.org. 30 IN A 192.0.2.2")
	sig, err = s.Sign([]dns.RR{wild}, now)
	if err != nil {
		t.Fatal(err)
	}
	expanded := rr(t, "foo.bar.app.example.org. 30 IN A 192.0.2.2")
	verify([]dns.RR{expanded}, sig, "foo.bar.app.example.org.")

	sig, err = s.Sign(dnskeys, now)
	if err != nil {
		t.Fatal(err)
	}
	verify(dnskeys, sig, "example.org.")
	if sig.RRSIGs[0].(*dns.RRSIG).KeyTag != keys[0].Tag {
		t.Error("the DNSKEY RRset is not signed by the KSK")
	}
	if !sig.Fresh(now, ks.Epoch(now)) || sig.Fresh(sig.Due, ks.Epoch(now)) || sig.Fresh(now, ks.Epoch(now)+1) {
		t.Error("Fresh: want fresh now, not at Due nor in another epoch")
	}
}

func rr(t *testing.T, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSignCached: an RRset is signed once, then served from the cache (its owner in any case,
// its records in any order), until the sign rate refuses new ones.
func TestSignCached(t *testing.T) {
	ks, _ := NewKeyset(readKeys(t, testutil.KeySpec{Zone: "example.org"}))
	s := NewSigner("example.org.", ks, Options{Validity: time.Hour, Refresh: time.Minute, CacheCapacity: 64, SignRate: 2})
	now := time.Now()
	a, b := rr(t, "x.example.org. 30 IN A 192.0.2.1"), rr(t, "x.example.org. 30 IN A 192.0.2.2")
	first, err := s.SignCached([]dns.RR{a, b}, now)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.SignCached([]dns.RR{b, rr(t, "X.Example.ORG. 30 IN A 192.0.2.1")}, now)
	if err != nil || again != first {
		t.Errorf("the same RRset was signed again (%v)", err)
	}
	if _, err := s.SignCached([]dns.RR{rr(t, "y.example.org. 30 IN A 192.0.2.1")}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SignCached([]dns.RR{rr(t, "z.example.org. 30 IN A 192.0.2.1")}, now); err != ErrLimited {
		t.Errorf("the third signature within a second at a rate of 2: %v, want ErrLimited", err)
	}
	if _, err := s.SignCached([]dns.RR{rr(t, "z.example.org. 30 IN A 192.0.2.1")}, now.Add(time.Second)); err != nil {
		t.Errorf("a second later: %v", err)
	}
}

// TestCanonicalOrder sorts the names of RFC 4034 6.1's example by CanonicalKey and gets its
// order; CompactNext is the immediate successor.
func TestCanonicalOrder(t *testing.T) {
	want := []string{"example.", "a.example.", "yljkjljk.a.example.", "Z.a.example.", "zABC.a.EXAMPLE.", "z.example.", "\\001.z.example.", "*.z.example.", "\\200.z.example."}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, func(a, b string) int {
		ka, _ := CanonicalKey(a)
		kb, _ := CanonicalKey(b)
		return strings.Compare(string(ka), string(kb))
	})
	if !slices.Equal(got, want) {
		t.Errorf("canonical order:\n got %v\nwant %v", got, want)
	}
	k1, _ := CanonicalKey("a.example.")
	k2, _ := CanonicalKey(CompactNext("a.example."))
	k3, _ := CanonicalKey("\\001.a.example.")
	if !(string(k1) < string(k2) && string(k2) < string(k3)) {
		t.Error("CompactNext is not the immediate successor")
	}
}

// TestCDS: the CDS and CDNSKEY RRsets, and the DS for the parent, hold the KSKs in sync.
func TestCDS(t *testing.T) {
	now := time.Now()
	keys := readKeys(t, testutil.KeySpec{Zone: "example.org", KSK: true}, testutil.KeySpec{Zone: "example.org"},
		testutil.KeySpec{Zone: "example.org", KSK: true, SyncPublish: now.Add(time.Hour)})
	ks, _ := NewKeyset(keys)
	ds := ks.DS("example.org.", 60, now)
	if len(ds) != 1 || ds[0].KeyTag != keys[0].Tag || ds[0].DigestType != dns.SHA256 {
		t.Fatalf("DS %v, want the KSK's", ds)
	}
	cds, cdnskey := ks.CDS("example.org.", 60, now), ks.CDNSKEY("example.org.", 60, now)
	if len(cds) != 1 || cds[0].Header().Rrtype != dns.TypeCDS || cds[0].(*dns.CDS).Digest != ds[0].Digest ||
		len(cdnskey) != 1 || cdnskey[0].Header().Rrtype != dns.TypeCDNSKEY || cdnskey[0].(*dns.CDNSKEY).PublicKey != keys[0].DNSKEY.PublicKey {
		t.Errorf("CDS %v CDNSKEY %v", cds, cdnskey)
	}
	if n := len(ks.DS("example.org.", 60, now.Add(time.Hour))); n != 2 {
		t.Errorf("after the new KSK's SyncPublish, %d DS, want 2", n)
	}
}
