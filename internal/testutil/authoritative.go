package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Authoritative is a meridian process serving one zone with CoreDNS's file plugin, on a free
// loopback port: a real authoritative server for tests of what reads DNS records (SVCB and
// HTTPS discovery).
type Authoritative struct {
	*Server
	origin string
	db     string
	serial int
}

// StartAuthoritative serves origin with the resource records rrs (zone file lines, names
// relative to origin), re-reading the zone file every 100 ms. The process stops when the test
// ends.
func StartAuthoritative(t testing.TB, origin string, rrs ...string) *Authoritative {
	t.Helper()
	a := &Authoritative{origin: strings.TrimSuffix(origin, ".") + "."}
	dir := t.TempDir()
	a.db = filepath.Join(dir, "db.zone")
	a.SetRecords(t, rrs...)
	a.Server = Start(t, dir, func(port int) string {
		return fmt.Sprintf(".:%d {\n\tbind 127.0.0.1\n\tfile %s %s {\n\t\treload 100ms\n\t}\n}\n", port, a.db, a.origin)
	})
	return a
}

// SetRecords replaces the zone's records with rrs and raises its serial, so that the server
// serves them from its next reload on.
func (a *Authoritative) SetRecords(t testing.TB, rrs ...string) {
	t.Helper()
	a.serial++
	tmp := a.db + ".tmp"
	if err := os.WriteFile(tmp, []byte(zoneFile(a.origin, a.serial, rrs)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, a.db); err != nil {
		t.Fatal(err)
	}
}

// zoneFile returns the text of a zone file for origin (fully qualified) with serial: an SOA, an
// NS record naming ns.origin, its address 127.0.0.1, and then rrs (zone file lines, names
// relative to origin).
func zoneFile(origin string, serial int, rrs []string) string {
	return fmt.Sprintf("$ORIGIN %s\n$TTL 30\n@ IN SOA ns.%s hostmaster.%s %d 3600 600 86400 30\n@ IN NS ns.%s\nns IN A 127.0.0.1\n%s\n",
		origin, origin, origin, serial, origin, strings.Join(rrs, "\n"))
}
