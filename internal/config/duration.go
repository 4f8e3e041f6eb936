package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration as the configuration files write it: a Go duration such as
// "10s" or "1m30s", or a bare number of seconds. Negative durations are errors.
func ParseDuration(s string) (time.Duration, error) {
	text := strings.TrimSpace(s)
	if secs, err := strconv.ParseInt(text, 10, 64); err == nil {
		if secs < 0 || secs > math.MaxInt64/int64(time.Second) {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return time.Duration(secs) * time.Second, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 {
		return 0, fmt.Errorf(`%q is not a duration such as "10s" or "1m30s", or a number of seconds`, s)
	}
	return d, nil
}
