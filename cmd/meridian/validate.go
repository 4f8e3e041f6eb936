package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/meridian-gslb/meridian/internal/config"
)

// runValidate runs "meridian ctl validate FILE", the check of one zone file that CoreDNS-GSLB's
// "gslbctl validate" does; -profiles names the shared profiles file the zone file's checks may
// use. The zone is -zone, or else the file's name without a "db." prefix
// and its .yml or .yaml extension, as in CoreDNS-GSLB's examples (db.example.org.yml). It
// prints every warning and error with its line and returns the exit code: 0 valid, 1 invalid
// (or, with -strict, with warnings), 2 for a wrong command line.
func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("meridian ctl validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	zone := fs.String("zone", "", "the zone of the file (default: from the file name, db.ZONE.yml)")
	strict := fs.Bool("strict", false, "fail on warnings, such as a deprecated spelling")
	profilesFile := fs.String("profiles", "", "the shared health-check profiles file (the Corefile's healthcheck_profiles) the zone file uses")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: meridian ctl validate FILE [-zone ZONE] [-profiles FILE] [-strict]")
		return 2
	}
	file := pos[0]
	origin := *zone
	if origin == "" {
		origin = zoneOfFile(file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "meridian ctl validate: %v\n", err)
		return 1
	}
	var profiles map[string]config.HealthCheck
	if *profilesFile != "" {
		if profiles, err = config.LoadProfiles(*profilesFile); err != nil {
			return reportErrors(stderr, *profilesFile, unjoin(err))
		}
	}
	z, err := config.ParseZone(file, data, origin, profiles, 0)
	if err != nil {
		return reportErrors(stderr, file, unjoin(err))
	}
	for _, w := range z.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if *strict && len(z.Warnings) > 0 {
		fmt.Fprintf(stderr, "%s: %d warning(s), failing with -strict\n", file, len(z.Warnings))
		return 1
	}
	fmt.Fprintf(stdout, "%s: OK, zone %s, %d records\n", file, z.Origin, len(z.Records))
	return 0
}

// zoneOfFile guesses the zone of a zone file from its name: db.example.org.yml is example.org.
func zoneOfFile(file string) string {
	name := filepath.Base(file)
	for _, ext := range []string{".yml", ".yaml"} {
		name = strings.TrimSuffix(name, ext)
	}
	return strings.TrimPrefix(name, "db.")
}
