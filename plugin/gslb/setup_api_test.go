package gslb

import (
	"strings"
	"testing"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/config"
)

// parseAPILines parses each line of input as an api_* option.
func parseAPILines(t *testing.T, input, root string) (config.APIOptions, error) {
	t.Helper()
	var o config.APIOptions
	c := caddy.NewTestController("dns", input)
	options := apiOptions(&o, root)
	for c.Next() {
		parse, ok := options[c.Val()]
		if !ok {
			t.Fatalf("%s is not an api option", c.Val())
		}
		if err := parse(c); err != nil {
			return o, err
		}
	}
	return o, nil
}

func TestParseAPIOptions(t *testing.T) {
	o, err := parseAPILines(t, `api_enable
api_listen_addr [::1]
api_listen_port 9443
api_tls_cert tls/api.crt
api_tls_key /etc/ssl/api.key
api_basic_user admin
api_basic_pass "pass word"
api_token t0ken
api_allow_unauthenticated false
api_overrides_file state/overrides.json`, "/etc/meridian")
	if err != nil {
		t.Fatal(err)
	}
	want := config.APIOptions{
		Enable: true, ListenAddr: "::1", ListenPort: 9443, TLSCert: "/etc/meridian/tls/api.crt", TLSKey: "/etc/ssl/api.key",
		BasicUser: "admin", BasicPass: "pass word", Token: "t0ken", OverridesFile: "/etc/meridian/state/overrides.json",
	}
	if o != want {
		t.Fatalf("options\n%+v, want\n%+v", o, want)
	}
	if o.Addr() != "[::1]:9443" || o.OverridesPath() != want.OverridesFile {
		t.Errorf("Addr %s, OverridesPath %s", o.Addr(), o.OverridesPath())
	}

	defaults, _ := parseAPILines(t, "api_enable true", "")
	if defaults.Addr() != "127.0.0.1:8080" || defaults.OverridesPath() != "/var/lib/meridian/overrides.json" {
		t.Errorf("defaults: %s, %s", defaults.Addr(), defaults.OverridesPath())
	}
	if off, _ := parseAPILines(t, "api_enable\napi_enable false", ""); off.Enable {
		t.Error("api_enable false did not turn the API off")
	}

	for input, msg := range map[string]string{
		"api_enable maybe":              "not true or false",
		"api_listen_port 0":             "not a port",
		"api_listen_port 65536":         "not a port",
		"api_listen_port http":          "not a port",
		"api_listen_addr 127.0.0.1:80":  "api_listen_port",
		"api_listen_addr":               "want one argument",
		"api_basic_user a b":            "want one argument",
		"api_tls_cert":                  "want one argument",
		"api_allow_unauthenticated yes": "not true or false",
	} {
		if _, err := parseAPILines(t, input, ""); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", input, err, msg)
		}
	}

	if _, ok := apiOptions(&config.APIOptions{}, "")["redis_address"]; ok {
		t.Error("another option is an api option")
	}
}
