package published

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Heartbeat is what one heartbeat TXT record says: "site=<site>" "time=<unix seconds>"
// "seq=<n>" "boot=<16 hex digits>". Boot is random per process start; Seq counts the
// heartbeat's ticks since then. A reader judges freshness by (Boot, Seq) changing on its own
// clock, so that clocks need not agree between sites; Time is shown, never compared.
type Heartbeat struct {
	Site string    `json:"site"`
	Time time.Time `json:"time"`
	Seq  uint64    `json:"seq"`
	Boot string    `json:"boot"`
}

// TXT returns the heartbeat's TXT strings.
func (h Heartbeat) TXT() []string {
	return []string{
		"site=" + h.Site,
		"time=" + strconv.FormatInt(h.Time.Unix(), 10),
		"seq=" + strconv.FormatUint(h.Seq, 10),
		"boot=" + h.Boot,
	}
}

// ParseHeartbeat reads a heartbeat from the strings of one TXT record. Unknown keys are
// ignored (a later version may add some); each known key must appear once and be valid.
func ParseHeartbeat(txt []string) (Heartbeat, error) {
	var h Heartbeat
	seen := map[string]bool{}
	for _, s := range txt {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			continue
		}
		switch k {
		case "site", "time", "seq", "boot":
		default:
			continue
		}
		if seen[k] {
			return h, fmt.Errorf("heartbeat: %s appears twice", k)
		}
		seen[k] = true
		var err error
		switch k {
		case "site":
			h.Site = v
		case "time":
			var sec int64
			sec, err = strconv.ParseInt(v, 10, 64)
			h.Time = time.Unix(sec, 0)
		case "seq":
			h.Seq, err = strconv.ParseUint(v, 10, 64)
		case "boot":
			if len(v) != 16 {
				err = fmt.Errorf("%d characters, not 16", len(v))
			} else {
				_, err = hex.DecodeString(v)
			}
			h.Boot = v
		}
		if err != nil {
			return h, fmt.Errorf("heartbeat: %s=%q: %w", k, v, err)
		}
	}
	for _, k := range []string{"site", "time", "seq", "boot"} {
		if !seen[k] {
			return h, fmt.Errorf("heartbeat: no %s", k)
		}
	}
	return h, nil
}

// Served is the heartbeat a site serves: the TXT strings it serves at heartbeat-<site>.<zone> in each
// of its zones, for the other sites to read (see docs/sites.md). The sites source sets it; the
// query path only loads it. A snapshot without one serves no published names.
type Served struct {
	label string
	txt   atomic.Pointer[[]string]
}

// NewServed returns the heartbeat of site, with no strings until Set.
func NewServed(site string) *Served {
	return &Served{label: HeartbeatPrefix + site}
}

// Label returns the first label of the heartbeat's name, heartbeat-<site>.
func (h *Served) Label() string { return h.label }

// Set makes txt the heartbeat's strings. The caller must not change txt afterwards.
func (h *Served) Set(txt []string) { h.txt.Store(&txt) }

// TXT returns the heartbeat's current strings, nil before the first Set.
func (h *Served) TXT() []string {
	if p := h.txt.Load(); p != nil {
		return *p
	}
	return nil
}
