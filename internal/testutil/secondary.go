package testutil

import (
	"fmt"
	"strings"
	"testing"
)

// StartKnotSecondary runs Debian's Knot DNS on 127.0.0.1:port (which the primary's NOTIFY
// goes to) as a secondary of the zones origins, transferred from primary (host:port on
// 127.0.0.1), with the TSIG key when it is not nil: it asks the primary for each zone at
// start, takes NOTIFY from 127.0.0.1, and serves what it transferred (never a zone file of its
// own). It returns once every zone answers its SOA, that is, once each was transferred. The
// test is skipped when knotd is not installed.
func StartKnotSecondary(t testing.TB, port int, primary string, key *TSIGKey, origins ...string) *UpdateServer {
	t.Helper()
	zones := make(map[string][]string, len(origins))
	for _, o := range origins {
		zones[o] = nil
	}
	kind := updateServerKind{kind: "knot", bin: "knotd", pkg: "knot", args: knotKind.args, port: port,
		config: func(dir string, port int, _ TSIGKey, origins []string) string {
			return knotSecondaryConfig(dir, port, primary, key, origins)
		}}
	return startUpdateServer(t, kind, TSIGKey{}, zones)
}

// knotSecondaryConfig is knot.conf for a secondary in dir on port of the zones origins from
// primary, transfers signed with key (nil: unsigned), NOTIFY accepted from 127.0.0.1.
func knotSecondaryConfig(dir string, port int, primary string, key *TSIGKey, origins []string) string {
	var b strings.Builder
	b.WriteString(knotServerConfig(dir, fmt.Sprintf("127.0.0.1@%d", port)))
	keyLine := ""
	if key != nil {
		fmt.Fprintf(&b, "key:\n  - id: %s\n    algorithm: %s\n    secret: %s\n", key.Name, tsigAlgorithm(*key), key.Secret)
		keyLine = "\n    key: " + key.Name
	}
	host, p, _ := strings.Cut(primary, ":")
	fmt.Fprintf(&b, `remote:
  - id: primary
    address: %s@%s%s
acl:
  - id: notify
    address: 127.0.0.1
    action: notify
template:
  - id: default
    storage: %q
    file: "%%s.zone"
    zonefile-load: none
    zonefile-sync: -1
    journal-content: none
    master: primary
    acl: notify
zone:
`, host, p, keyLine, dir)
	for _, origin := range origins {
		fmt.Fprintf(&b, "  - domain: %s\n", origin)
	}
	return b.String()
}
