package probe

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// params reads a check's `params:` map with types and defaults, collecting every error. Keys
// that no reader asked for are reported by Err as unknown, so typos do not pass silently.
type params struct {
	m       config.Params
	used    []string // the keys asked for, each once
	errs    []error
	regexps map[string]*regexp.Regexp // shared by the checks of one Compiler
	// shared holds what checks of one Compiler share apart from their targets, by a key
	// that their type's constructor spells (see share); key is its buffer.
	shared map[string]any
	key    []byte
	pool   *pool // the load's, when its Compilers run at the same time (NewCompilers); else nil
}

// pool is what the Compilers of one load (NewCompilers) share while they compile its parts at
// the same time: the regular expressions and the shared parts of checks, each made by the first
// Compiler that needs it and used by all, so that a load keeps one of each however it is split.
type pool struct {
	mu      sync.Mutex
	regexps map[string]*regexp.Regexp
	shared  map[string]any
}

// share returns what p's Compiler keeps under key (which starts with the check's type), made
// by build on first use: the part of a check that does not depend on its target, one for every
// check of a load that has it (thousands of backends of a profile keep one).
func share[T any](p *params, key []byte, build func() *T) *T {
	if v, ok := p.shared[string(key)]; ok {
		return v.(*T)
	}
	v, _ := pooled(p.shared, p.pool, func(pl *pool) map[string]any { return pl.shared }, string(key), func() (any, bool) { return build(), true })
	return v.(*T)
}

// pooled returns, for a key that local (a Compiler's own map) lacks, what pl (nil for a
// Compiler of its own) keeps in its map inPool, or else what build makes, kept in both; build
// reports false when it fails, and then nothing is kept.
func pooled[V any](local map[string]V, pl *pool, inPool func(*pool) map[string]V, key string, build func() (V, bool)) (V, bool) {
	if pl != nil {
		pl.mu.Lock()
		defer pl.mu.Unlock()
		if v, ok := inPool(pl)[key]; ok {
			local[key] = v
			return v, true
		}
	}
	v, ok := build()
	if !ok {
		return v, false
	}
	local[key] = v
	if pl != nil {
		inPool(pl)[key] = v
	}
	return v, true
}

// reset makes p read m (plain values as the config loader produces them), keeping its buffers and regexps: a Compiler reads the parameters of
// every check of a load with one params.
func (p *params) reset(m config.Params) {
	clear(p.used)
	p.m, p.used, p.errs = m, p.used[:0], nil
}

func (p *params) get(key string) (any, bool) {
	if !slices.Contains(p.used, key) {
		p.used = append(p.used, key)
	}
	v, ok := p.m.Get(key)
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

func (p *params) fail(key, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("params.%s: %s", key, fmt.Sprintf(format, args...)))
}

// Errorf records an error about key that a probe's own validation found.
func (p *params) Errorf(key, format string, args ...any) { p.fail(key, format, args...) }

// Err returns every error recorded, and one for each parameter nobody read.
func (p *params) Err() error {
	unread := false
	for k := range p.m.All() {
		unread = unread || !slices.Contains(p.used, k)
	}
	if !unread && len(p.errs) == 0 {
		return nil // the common case, without sorting the keys
	}
	for k := range p.m.All() { // in the order of the keys
		if !slices.Contains(p.used, k) {
			known := slices.Sorted(slices.Values(p.used))
			p.errs = append(p.errs, fmt.Errorf("params.%s: unknown parameter (known: %s)", k, strings.Join(known, ", ")))
		}
	}
	return errors.Join(p.errs...)
}

// String returns a string parameter, or def.
func (p *params) String(key, def string) string {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	switch x := v.(type) {
	case string:
		return x
	case int, float64, bool:
		return fmt.Sprint(x)
	}
	p.fail(key, "must be a string")
	return def
}

// Int returns an integer parameter within [lo, hi], or def.
func (p *params) Int(key string, def, lo, hi int) int {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	n, ok := toInt(v)
	if !ok || n < lo || n > hi {
		p.fail(key, "must be an integer from %d to %d, not %v", lo, hi, v)
		return def
	}
	return n
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case float64:
		if x == math.Trunc(x) {
			return int(x), true
		}
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		return n, err == nil
	}
	return 0, false
}

// Port returns the `port` parameter, else the target's port, else def.
func (p *params) Port(t Target, def int) int {
	if t.Port != 0 {
		def = int(t.Port)
	}
	return p.Int("port", def, 1, 65535)
}

// Bool returns a boolean parameter, or def.
func (p *params) Bool(key string, def bool) bool {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	switch x := v.(type) {
	case bool:
		return x
	case string:
		if b, err := strconv.ParseBool(x); err == nil {
			return b
		}
	}
	p.fail(key, "must be true or false, not %v", v)
	return def
}

// Duration returns a duration parameter (a Go duration or a number of seconds) above zero, or def.
func (p *params) Duration(key string, def time.Duration) time.Duration {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	d, err := config.ParseDuration(fmt.Sprint(v))
	if err != nil || d <= 0 {
		p.fail(key, `must be a duration above zero such as "5s", not %v`, v)
		return def
	}
	return d
}

// Strings returns a parameter given as one string or a list of strings.
func (p *params) Strings(key string) []string {
	v, ok := p.get(key)
	if !ok {
		return nil
	}
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, item := range x {
			s, ok := item.(string)
			if !ok {
				p.fail(key, "must be a list of strings")
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	p.fail(key, "must be a string or a list of strings")
	return nil
}

// Ints returns a parameter given as one integer or a list of integers within [lo, hi], or def.
func (p *params) Ints(key string, def []int, lo, hi int) []int {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	items, isList := v.([]any)
	if !isList {
		items = []any{v}
	}
	out := make([]int, 0, len(items))
	for _, item := range items {
		n, ok := toInt(item)
		if !ok || n < lo || n > hi {
			p.fail(key, "must be an integer from %d to %d or a list of them, not %v", lo, hi, v)
			return def
		}
		out = append(out, n)
	}
	return out
}

// StringMap returns a mapping of strings (for example HTTP headers).
func (p *params) StringMap(key string) map[string]string {
	v, ok := p.get(key)
	if !ok {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		p.fail(key, "must be a mapping of names to strings")
		return nil
	}
	out := make(map[string]string, len(m))
	for k, item := range m {
		out[k] = fmt.Sprint(item)
	}
	return out
}

// Regexp compiles a regular expression parameter; nil when it is absent or empty.
func (p *params) Regexp(key string) *regexp.Regexp {
	s := p.String(key, "")
	if s == "" {
		return nil
	}
	if re, ok := p.regexps[s]; ok {
		return re // a compiled Regexp is safe for concurrent use, so checks share it
	}
	re, _ := pooled(p.regexps, p.pool, func(pl *pool) map[string]*regexp.Regexp { return pl.regexps }, s, func() (*regexp.Regexp, bool) {
		re, err := regexp.Compile(s)
		if err != nil {
			p.fail(key, "invalid regular expression: %v", err)
		}
		return re, err == nil
	})
	return re
}

// writeCanonical writes v in a deterministic form (maps sorted by key), for check identity.
func writeCanonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		writeCanonical(b, config.NewParams(x))
	case config.Params:
		b.WriteByte('{')
		for k, v := range x.All() {
			fmt.Fprintf(b, "%q:", k)
			writeCanonical(b, v)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for _, item := range x {
			writeCanonical(b, item)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "%#v", x)
	}
}
