package cluster

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/health"
)

func TestKeyNames(t *testing.T) {
	k := keyspace{"gslb:"}
	for _, tt := range []struct{ got, want string }{
		{k.result("abc"), "gslb:health:abc"},
		{k.lock("abc", 42), "gslb:lock:abc:42"},
		{k.channel(), "gslb:health:updates"},
		{k.votes("abc", 42), "gslb:votes:abc:42"},
		{k.voteChannel(), "gslb:votes:updates"},
	} {
		if tt.got != tt.want {
			t.Errorf("key %q, want %q", tt.got, tt.want)
		}
	}
}

func TestMessageRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	s := health.Shared{Check: "abc", Cycle: 170000000, OK: true, Reason: "http 200", At: at,
		Status: map[string]health.Status{"www.example.org.|192.0.2.10|0": health.Up, "www.example.org.|192.0.2.11|0": health.Down}}
	payload, err := encode(s, "host-1-abcdef", voteInfo{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"check":"abc","backends":["www.example.org.|192.0.2.10|0","www.example.org.|192.0.2.11|0"],` +
		`"status":{"www.example.org.|192.0.2.10|0":"up","www.example.org.|192.0.2.11|0":"down"},` +
		`"cycle":170000000,"ok":true,"reason":"http 200","time":1700000000123,"instance":"host-1-abcdef"}`
	if string(payload) != want {
		t.Fatalf("message %s\nwant    %s (docs/cluster.md documents this format)", payload, want)
	}
	got, vi, err := decode(payload, noInterval)
	s.Instance = "host-1-abcdef"
	if err != nil || !reflect.DeepEqual(got, s) || vi != (voteInfo{}) {
		t.Fatalf("decoded %+v, %+v, %v; want %+v", got, vi, err, s)
	}
}

func TestVoteRoundTrip(t *testing.T) {
	s := health.Shared{Check: "abc", Cycle: 170000000, OK: false, Reason: "connect: connection refused", At: time.UnixMilli(1_700_000_000_123)}
	vi := voteInfo{site: "eu-west", isolated: true}
	payload, err := encode(s, "host-2-abcdef", vi)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"check":"abc","cycle":170000000,"ok":false,"reason":"connect: connection refused","time":1700000000123,` +
		`"instance":"host-2-abcdef","site":"eu-west","isolated":true}`
	if string(payload) != want {
		t.Fatalf("vote %s\nwant %s (docs/cluster.md documents this format)", payload, want)
	}
	got, gotVI, err := decode(payload, noInterval)
	s.Instance = "host-2-abcdef"
	if err != nil || !reflect.DeepEqual(got, s) || gotVI != vi {
		t.Fatalf("decoded %+v, %+v, %v; want %+v, %+v", got, gotVI, err, s, vi)
	}
}

func noInterval(string) (time.Duration, bool) { return 0, false }

func TestDecode(t *testing.T) {
	interval := func(check string) (time.Duration, bool) { return 10 * time.Second, check == "known" }
	tests := []struct {
		name      string
		payload   string
		wantCycle int64
		wantErr   error
	}{
		{"explicit cycle", `{"check":"known","cycle":7,"ok":true,"time":1700000000000,"instance":"a"}`, 7, nil},
		{"cycle from the time", `{"check":"known","ok":true,"time":1700000005000,"instance":"a"}`, 170000000, nil},
		{"unknown check keeps cycle 0", `{"check":"other","ok":true,"time":1700000005000,"instance":"a"}`, 0, nil},
		{"no time", `{"check":"known","ok":true,"instance":"a"}`, 0, errIncomplete},
		{"no instance", `{"check":"known","ok":true,"time":1}`, 0, errIncomplete},
		{"no check", `{"ok":true,"time":1,"instance":"a"}`, 0, errIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := decode([]byte(tt.payload), interval)
			if !errors.Is(err, tt.wantErr) || (err == nil && s.Cycle != tt.wantCycle) {
				t.Fatalf("decode: cycle %d, error %v; want cycle %d, error %v", s.Cycle, err, tt.wantCycle, tt.wantErr)
			}
		})
	}
	if _, _, err := decode([]byte("not json"), interval); err == nil {
		t.Fatal("decoded a message that is not JSON")
	}
}

// FuzzDecode feeds arbitrary messages, as an external agent or a broken peer could publish
// them, to decode: it must never panic, and what it accepts must encode and decode to itself.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"check":"abc","cycle":7,"ok":true,"reason":"ok","time":1700000000000,"instance":"i1"}`,
		`{"check":"web|10.0.0.1|80","ok":false,"time":1700000000000,"instance":"agent","status":{"web|10.0.0.1|80":"down"}}`,
		`{"check":"abc","time":1,"instance":"i","site":"eu","isolated":true}`,
		`{"check":"abc","time":-5,"instance":"i"}`, `[]`, `{"status":{"a":"sideways"}}`,
	} {
		f.Add([]byte(seed))
	}
	interval := func(check string) (time.Duration, bool) { return 10 * time.Second, len(check)%2 == 0 }
	f.Fuzz(func(t *testing.T, data []byte) {
		s, vi, err := decode(data, interval)
		if err != nil {
			return
		}
		again, err := encode(s, s.Instance, vi)
		if err != nil {
			t.Fatalf("an accepted message does not encode: %v", err)
		}
		s2, vi2, err := decode(again, interval)
		if err != nil || s2.Check != s.Check || s2.Cycle != s.Cycle || s2.OK != s.OK || s2.Instance != s.Instance || vi2 != vi || len(s2.Status) != len(s.Status) {
			t.Fatalf("round trip changed the message: %+v %+v -> %+v %+v (%v)", s, vi, s2, vi2, err)
		}
	})
}

// TestLoadRoundTrip: a result that read a load carries it (an agent may publish one), a
// negative one decodes as unknown, and a result without one has none.
func TestLoadRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		s       health.Shared
		payload string // the "load" part, empty for none
		hasLoad bool
		load    float64
	}{
		{"a load", health.Shared{Check: "abc", OK: true, At: time.UnixMilli(1_700_000_000_000), HasLoad: true, Load: 0.42}, `"load":0.42`, true, 0.42},
		{"unreadable: not published", health.Shared{Check: "abc", OK: true, At: time.UnixMilli(1_700_000_000_000), HasLoad: true, Load: math.NaN()}, "", false, 0},
		{"none", health.Shared{Check: "abc", OK: true, At: time.UnixMilli(1_700_000_000_000)}, "", false, 0},
	}
	for _, tt := range tests {
		payload, err := encode(tt.s, "agent-1", voteInfo{})
		if err != nil {
			t.Fatal(err)
		}
		if tt.payload != "" && !strings.Contains(string(payload), tt.payload) || tt.payload == "" && strings.Contains(string(payload), `"load"`) {
			t.Errorf("%s: %s", tt.name, payload)
		}
		got, _, err := decode(payload, noInterval)
		if err != nil || got.HasLoad != tt.hasLoad || tt.hasLoad && got.Load != tt.load {
			t.Errorf("%s: decoded %+v, %v", tt.name, got, err)
		}
	}
	got, _, err := decode([]byte(`{"check":"abc","ok":true,"time":1700000000000,"instance":"agent-1","load":-1}`), noInterval)
	if err != nil || !got.HasLoad || !math.IsNaN(got.Load) {
		t.Errorf("a negative load: %+v, %v; want unknown", got, err)
	}
}

// TestVoteRTT: a vote carries its probe's RTT in milliseconds, and decodes to it.
func TestVoteRTT(t *testing.T) {
	s := health.Shared{Check: "abc", Cycle: 7, OK: true, At: time.UnixMilli(1_700_000_000_000), Latency: 1500 * time.Microsecond}
	payload, err := encode(s, "host-1", voteInfo{site: "eu"})
	if err != nil || !strings.Contains(string(payload), `"rtt_ms":1.5`) {
		t.Fatalf("vote %s, %v: want rtt_ms 1.5", payload, err)
	}
	got, vi, err := decode(payload, noInterval)
	if err != nil || got.Latency != 1500*time.Microsecond || vi.site != "eu" {
		t.Errorf("decoded %+v %+v, %v", got, vi, err)
	}
	if got, _, _ := decode([]byte(`{"check":"abc","ok":true,"time":1700000000000,"instance":"a","rtt_ms":-3}`), noInterval); got.Latency != 0 {
		t.Errorf("a negative RTT decoded as %v, want none", got.Latency)
	}
}
