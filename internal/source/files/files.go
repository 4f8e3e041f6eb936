// Package files is the source of backend sets that every gslb block has: its YAML zone files
// and the shared health-check profiles file, read from disk and followed for changes. It also
// offers the file watch that other file-backed inputs (the GeoIP databases) use.
package files

import (
	"errors"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/source"
)

// Zones is the zone files of one gslb block, as a source of backend sets.
type Zones struct {
	opts config.Options
}

// New returns the zone files that opts names (its zones and its health-check profiles file).
func New(opts config.Options) *Zones { return &Zones{opts: opts} }

// Name implements source.BackendSets.
func (z *Zones) Name() string { return "zone files" }

// Merge implements source.BackendSets: it reads every file again and returns zones followed by
// the zones of the files, or every error found in any of the files.
func (z *Zones) Merge(zones []*config.Zone) ([]*config.Zone, error) {
	loaded, err := Load(z.opts)
	if err != nil {
		return nil, err
	}
	return append(zones, loaded...), nil
}

// Watch implements source.BackendSets: changed is called once a zone file or the profiles file
// changed on disk.
func (z *Zones) Watch(changed func(), log source.Logger) (stop func(), err error) {
	return Watch(z.Files(), changed, log)
}

// Files returns the files the source reads.
func (z *Zones) Files() []string {
	files := make([]string, 0, len(z.opts.Zones)+1)
	for _, src := range z.opts.Zones {
		files = append(files, src.File)
	}
	if z.opts.HealthcheckProfilesFile != "" {
		files = append(files, z.opts.HealthcheckProfilesFile)
	}
	return files
}

// Load reads the shared health-check profiles and every zone file of opts, and returns the
// zones or every error found in any of the files.
func Load(opts config.Options) ([]*config.Zone, error) {
	var errs []error
	var shared map[string]config.HealthCheck
	if opts.HealthcheckProfilesFile != "" {
		p, err := config.LoadProfiles(opts.HealthcheckProfilesFile)
		if err != nil {
			errs = append(errs, err)
		}
		shared = p
	}
	zones := make([]*config.Zone, 0, len(opts.Zones))
	for _, src := range opts.Zones {
		z, err := config.LoadZone(src, shared, opts.MaxFileSize)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		zones = append(zones, z)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return zones, nil
}

var _ source.BackendSets = (*Zones)(nil)
