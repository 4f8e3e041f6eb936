package sites

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// heartbeatTick is how often a site's heartbeat changes: its sequence number counts the ticks.
const heartbeatTick = time.Second

// heartbeatGrace is how long a reader accepts an unchanged heartbeat as confirmed: a live site
// changes it every tick, and a reader may ask twice within one.
const heartbeatGrace = 2 * heartbeatTick

// newBoot returns a fresh boot identifier.
func newBoot() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
