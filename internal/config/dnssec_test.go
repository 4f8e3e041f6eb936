package config

import (
	"strings"
	"testing"
	"time"
)

// TestParseDurationDays reads durations with days, as the signer's options write them, beside
// the other forms.
func TestParseDurationDays(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{in: "14d", want: 14 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "0d", want: 0},
		{in: "90s", want: 90 * time.Second},
		{in: "120", want: 120 * time.Second},
		{in: "d", err: true},
		{in: "1.5d", err: true},
		{in: "-1d", err: true},
		{in: "1dx", err: true},
		{in: "99999999999999d", err: true},
	} {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.err || !tt.err && got != tt.want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestSignedZones maps each zone to the dnssec block that signs it: its own zones, or every
// zone for a block that names none.
func TestSignedZones(t *testing.T) {
	origins := []string{"example.org.", "example.net."}
	got, err := SignedZones([]DNSSECOptions{{Zones: []string{"example.net."}}, {Zones: []string{"example.org."}}}, origins)
	if err != nil || got["example.net."] != 0 || got["example.org."] != 1 {
		t.Errorf("SignedZones = %v, %v", got, err)
	}
	if got, err := SignedZones([]DNSSECOptions{{}}, origins); err != nil || len(got) != 2 {
		t.Errorf("a block of no zone signs %v, %v; want every zone", got, err)
	}
	if _, err := SignedZones([]DNSSECOptions{{Line: 3}, {Zones: []string{"example.org."}, Line: 9}}, origins); err == nil || !strings.Contains(err.Error(), "lines 3 and 9") {
		t.Errorf("a zone signed twice: %v", err)
	}
}
