package engine

import (
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/policy"
)

// openGeo opens the GeoIP sources that opts names, or returns nil when it names none; a
// location map of more than maxFileSize bytes (max_file_size) is refused.
func openGeo(opts config.GeoIPOptions, maxFileSize int64) (*geo.Store, error) {
	if opts == (config.GeoIPOptions{}) {
		return nil, nil
	}
	// The errors name their option (geoip_maxmind ..., geoip_custom) or the map's file and
	// line already, and stay a list that `meridian check` prints one per line.
	return geo.NewStore(opts, maxFileSize)
}

// Geo returns the current GeoIP sources, or nil when none are configured. It never blocks.
func (e *Engine) Geo() *geo.Sources {
	if e.geo == nil {
		return nil
	}
	return e.geo.Sources()
}

// reloadGeo reads the GeoIP sources again after their files changed; on error the current
// ones keep serving.
func (e *Engine) reloadGeo() {
	if err := e.geo.Reload(); err != nil {
		countReload("failure")
		e.log.Errorf("geoip reload failed, still using the previous data: %v", err)
		return
	}
	countReload("success")
	e.log.Infof("reloaded the geoip sources")
}

// warnGeoless logs the records of zones that use a geo mode while no GeoIP source is
// configured: they select like failover until one is.
func warnGeoless(zones []*config.Zone, opts config.GeoIPOptions, log Logger) {
	if opts != (config.GeoIPOptions{}) {
		return
	}
	for _, z := range zones {
		for _, r := range z.Records {
			if policy.IsGeo(r.Mode) {
				log.Warningf("%s:%d: %s uses mode %s but no geoip_maxmind or geoip_custom source is configured: it selects like failover", r.Pos.File(), r.Pos.Line, r.Name, r.Mode)
			}
		}
	}
}
