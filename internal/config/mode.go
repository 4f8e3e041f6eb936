package config

import (
	"fmt"
	"strings"
)

// ParseMode returns the Mode for a name, ignoring case and surrounding spaces. For an unknown name
// the error suggests the closest valid mode.
func ParseMode(s string) (Mode, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, m := range Modes {
		if string(m) == t {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", unknownChoice("mode", s, names)
}

// unknownChoice is the error for a value that is not one of valid: it names the closest valid
// value when there is one, and lists the valid values when there are not too many.
func unknownChoice(what, got string, valid []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown %s %q", what, got)
	if s := suggest(got, valid); s != "" {
		fmt.Fprintf(&b, "; did you mean %q?", s)
	}
	if len(valid) > 0 && len(valid) <= 24 {
		fmt.Fprintf(&b, " (valid: %s)", strings.Join(valid, ", "))
	}
	return fmt.Errorf("%s", b.String())
}

// suggest returns the valid value closest to s: the one equal to it once case, '-', '_' and
// spaces are ignored, else the first one within an edit distance of 3 (and less than the length
// of s). It returns "" when none is close.
func suggest(s string, valid []string) string {
	ns := normalize(s)
	for _, v := range valid {
		if normalize(v) == ns {
			return v
		}
	}
	if len(ns) > 64 {
		return ""
	}
	best, bestDist := "", 4
	for _, v := range valid {
		if d := levenshtein(ns, normalize(v)); d < bestDist && d < len(ns) {
			best, bestDist = v, d
		}
	}
	return best
}

func normalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', ' ':
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(s)))
}

// levenshtein is the edit distance between two strings, counted in bytes.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
