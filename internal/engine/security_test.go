package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestSecurityOptions: the engine builds the limiter and the cookie jar its options ask for,
// shares the process's random cookie secret across loads without a secrets file, and Check
// and Open report what does not load, naming the option.
func TestSecurityOptions(t *testing.T) {
	dir := t.TempDir()
	zone := filepath.Join(dir, "zone.yml")
	if err := os.WriteFile(zone, []byte("records:\n  www.example.org.:\n    backends: [{address: 10.0.0.1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := config.DefaultOptions()
	base.Zones = []config.ZoneSource{{Origin: "example.org.", File: zone}}

	r := NewRegistry()
	open := func(opts config.Options) *Engine {
		t.Helper()
		e, err := r.Open(nil, opts, &testutil.Log{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Stop() })
		return e
	}
	plain := open(base)
	if a := plain.AnswerOptions(); a.Limit != nil || a.Cookies == nil || a.RequireCookie || plain.ServerTLS() != nil {
		t.Errorf("defaults: %+v", a)
	}
	limited := base
	limited.RRL.Enable, limited.RRL.NXDomainsPerSecond, limited.Cookies.Require = true, 0, true
	e := open(limited)
	a := e.AnswerOptions()
	if a.Limit == nil || a.Limit.Config().Rates[2] != 0 || a.Limit.Config().Rates[0] != 20 || !a.RequireCookie {
		t.Errorf("rrl: %+v", a.Limit.Config())
	}
	if a.Cookies.Secrets() != plain.AnswerOptions().Cookies.Secrets() {
		t.Error("two loads without a secrets file have different cookie secrets")
	}

	for _, c := range []struct {
		change func(*config.Options)
		want   string
	}{
		{func(o *config.Options) {
			o.RRL.Enable, o.RRL.ResponsesPerSecond, o.RRL.Window = true, 100000, time.Minute
		}, "rrl: the positive rate 100000 times the window 1m0s"},
		{func(o *config.Options) { o.Cookies.SecretFile = filepath.Join(dir, "missing") }, "cookie_secret_file:"},
		{func(o *config.Options) { o.Cookies.SecretFile = zone }, "zone.yml:1: a secret is 32 hexadecimal digits"},
		{func(o *config.Options) { o.TLS = config.DNSTLSOptions{Cert: zone, Key: zone} }, "tls_cert " + zone},
	} {
		opts := base
		c.change(&opts)
		if _, _, err := Check(opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check: %v, want %q", err, c.want)
		}
		if _, err := r.Open(nil, opts, &testutil.Log{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open: %v, want %q", err, c.want)
		}
	}
}
