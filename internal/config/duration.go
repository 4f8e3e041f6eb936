package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration as the configuration files write it: a Go duration such as
// "10s" or "1m30s", optionally after a number of days ("14d", "1d12h"), or a bare number of
// seconds. Negative durations are errors.
func ParseDuration(s string) (time.Duration, error) {
	text := strings.TrimSpace(s)
	if secs, err := strconv.ParseInt(text, 10, 64); err == nil {
		if secs < 0 || secs > math.MaxInt64/int64(time.Second) {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return time.Duration(secs) * time.Second, nil
	}
	bad := fmt.Errorf(`%q is not a duration such as "10s", "1m30s" or "14d", or a number of seconds`, s)
	var days time.Duration
	if n, rest, ok := strings.Cut(text, "d"); ok {
		d, err := strconv.ParseInt(n, 10, 64)
		if err != nil || d < 0 || d > math.MaxInt64/int64(24*time.Hour)/2 {
			return 0, bad
		}
		if days, text = time.Duration(d)*24*time.Hour, rest; text == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 {
		return 0, bad
	}
	return days + d, nil
}
