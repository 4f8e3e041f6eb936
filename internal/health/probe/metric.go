package probe

// The http check's metric parameter reads a backend's load from a Prometheus text-format
// exposition (https://prometheus.io/docs/instrumenting/exposition_formats/) in the response
// body. The parser here is small and does only that: it reads the body line by line up to the
// first sample the selector matches, and rejects a malformed line before it rather than guess.
// expfmt's parser (used by lua's metric_get) builds every family of the body into protobuf
// messages, and fails on anything it dislikes anywhere in the body; a probe every few seconds
// of thousands of backends wants neither.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// metricSelector picks one sample of an exposition: its metric name, and labels it must have.
// A label wanted with an empty value matches a sample without that label, as in PromQL.
type metricSelector struct {
	name   string
	labels []metricLabel
}

// metricLabel is one label of a sample or of a selector.
type metricLabel struct{ name, value string }

// String returns the selector as the metric parameter writes it, for reasons: a name that is
// not a legacy name is quoted inside the braces.
func (s *metricSelector) String() string {
	legacy := isLegacyName(s.name, true)
	if legacy && len(s.labels) == 0 {
		return s.name
	}
	var b strings.Builder
	if legacy {
		b.WriteString(s.name)
	}
	b.WriteByte('{')
	if !legacy {
		writeMetricQuoted(&b, s.name)
	}
	for i, l := range s.labels {
		if i > 0 || !legacy {
			b.WriteByte(',')
		}
		if isLegacyName(l.name, false) {
			b.WriteString(l.name)
		} else {
			writeMetricQuoted(&b, l.name)
		}
		b.WriteByte('=')
		writeMetricQuoted(&b, l.value)
	}
	b.WriteByte('}')
	return b.String()
}

// isLegacyName reports whether s is a legacy metric name (colons) or label name.
func isLegacyName(s string, colons bool) bool {
	sc := metricScanner{s: s}
	return s != "" && sc.legacyName(colons) == s
}

// writeMetricQuoted writes s double-quoted with the exposition's escapes.
func writeMetricQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// parseMetricSelector parses a selector: a metric name, optionally followed by labels in
// braces, `http_inflight{pool="a"}`, written as a sample's name and labels are.
func parseMetricSelector(s string) (*metricSelector, error) {
	var sc metricScanner
	sc.s = strings.TrimSpace(s)
	name, labels, err := sc.nameAndLabels()
	if err != nil {
		return nil, err
	}
	sc.blanks()
	if sc.i < len(sc.s) {
		return nil, fmt.Errorf("unexpected %q after the selector", sc.s[sc.i:])
	}
	return &metricSelector{name: name, labels: labels}, nil
}

// matches reports whether a sample called name with labels is one the selector picks.
func (s *metricSelector) matches(name string, labels []metricLabel) bool {
	if name != s.name {
		return false
	}
	for _, want := range s.labels {
		got := ""
		for _, l := range labels {
			if l.name == want.name {
				got = l.value
				break
			}
		}
		if got != want.value {
			return false
		}
	}
	return true
}

// errMetricNotFound reports a body without a sample the selector matches.
var errMetricNotFound = errors.New("not found")

// find returns the value of the first sample of body that s matches. Comments and blank lines
// are skipped; a malformed line before the sample is an error naming its line number.
func (s *metricSelector) find(body []byte) (float64, error) {
	text := string(body)
	for n := 1; text != ""; n++ {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		sc := metricScanner{s: trimmed}
		name, labels, v, err := sc.sample()
		if err != nil {
			return 0, fmt.Errorf("line %d: %w", n, err)
		}
		if s.matches(name, labels) {
			return v, nil
		}
	}
	return 0, errMetricNotFound
}

// metricScanner reads a sample line, or a selector, from s at i.
type metricScanner struct {
	s string
	i int
}

// sample reads a whole sample line: name, labels, value, and an optional timestamp, after
// which only an OpenMetrics exemplar (" # {...} value") may follow.
func (sc *metricScanner) sample() (string, []metricLabel, float64, error) {
	name, labels, err := sc.nameAndLabels()
	if err != nil {
		return "", nil, 0, err
	}
	if !sc.blanks() {
		return "", nil, 0, errors.New("no space before the value")
	}
	tok := sc.token()
	v, err := parseMetricValue(tok)
	if err != nil {
		return "", nil, 0, err
	}
	if sc.blanks() && sc.i < len(sc.s) && sc.s[sc.i] != '#' {
		ts := sc.token()
		if _, err := strconv.ParseFloat(ts, 64); err != nil {
			return "", nil, 0, fmt.Errorf("bad timestamp %q", ts)
		}
		sc.blanks()
	}
	if sc.i < len(sc.s) && sc.s[sc.i] != '#' {
		return "", nil, 0, fmt.Errorf("unexpected %q after the value", sc.s[sc.i:])
	}
	return name, labels, v, nil
}

// parseMetricValue reads a sample's value: a Go float, or Inf, +Inf, -Inf, NaN in any case.
func parseMetricValue(tok string) (float64, error) {
	if tok == "" {
		return 0, errors.New("no value")
	}
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return 0, fmt.Errorf("bad value %q", tok)
	}
	return v, nil
}

// nameAndLabels reads a metric name and its optional labels. The name is a legacy name
// ([a-zA-Z_:][a-zA-Z0-9_:]*), or, in the UTF-8 syntax of Prometheus 3, a quoted string
// inside the braces: {"my.metric", pool="a"}.
func (sc *metricScanner) nameAndLabels() (string, []metricLabel, error) {
	name := sc.legacyName(true)
	afterName := sc.i
	sc.blanks() // blanks may come before the braces
	if sc.i >= len(sc.s) || sc.s[sc.i] != '{' {
		if name == "" {
			return "", nil, errors.New("no metric name")
		}
		sc.i = afterName
		return name, nil, nil
	}
	sc.i++
	var labels []metricLabel
	for {
		sc.blanks()
		if sc.i >= len(sc.s) {
			return "", nil, errors.New("labels not closed by }")
		}
		if sc.s[sc.i] == '}' {
			sc.i++
			break
		}
		var key string
		quoted := sc.s[sc.i] == '"'
		if quoted {
			q, err := sc.quoted()
			if err != nil {
				return "", nil, err
			}
			key = q
		} else if key = sc.legacyName(false); key == "" {
			return "", nil, fmt.Errorf("bad label name at %q", sc.s[sc.i:])
		}
		sc.blanks()
		if quoted && name == "" && sc.i < len(sc.s) && (sc.s[sc.i] == ',' || sc.s[sc.i] == '}') {
			name = key // the quoted metric name of the UTF-8 syntax
		} else {
			if sc.i >= len(sc.s) || sc.s[sc.i] != '=' {
				return "", nil, fmt.Errorf("label %s without =", key)
			}
			sc.i++
			sc.blanks()
			if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
				return "", nil, fmt.Errorf("the value of label %s is not quoted", key)
			}
			value, err := sc.quoted()
			if err != nil {
				return "", nil, err
			}
			labels = append(labels, metricLabel{name: key, value: value})
			sc.blanks()
		}
		switch {
		case sc.i < len(sc.s) && sc.s[sc.i] == ',':
			sc.i++
		case sc.i < len(sc.s) && sc.s[sc.i] == '}':
		case sc.i >= len(sc.s):
			return "", nil, errors.New("labels not closed by }")
		default:
			return "", nil, errors.New("labels not separated by commas")
		}
	}
	if name == "" {
		return "", nil, errors.New("no metric name")
	}
	return name, labels, nil
}

// legacyName reads [a-zA-Z_:][a-zA-Z0-9_:]* (without ':' for a label name, colons false).
func (sc *metricScanner) legacyName(colons bool) string {
	start := sc.i
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		ok := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == ':' && colons ||
			'0' <= c && c <= '9' && sc.i > start
		if !ok {
			break
		}
		sc.i++
	}
	return sc.s[start:sc.i]
}

// quoted reads a double-quoted string with the exposition's escapes: \\, \" and \n.
func (sc *metricScanner) quoted() (string, error) {
	sc.i++ // the opening quote
	var b strings.Builder
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		sc.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if sc.i >= len(sc.s) {
				return "", errors.New("unterminated string")
			}
			e := sc.s[sc.i]
			sc.i++
			switch e {
			case '\\', '"':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			default:
				return "", fmt.Errorf("bad escape \\%c", e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("unterminated string")
}

// blanks skips spaces and tabs and reports whether there were some.
func (sc *metricScanner) blanks() bool {
	start := sc.i
	for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t') {
		sc.i++
	}
	return sc.i > start
}

// token reads up to the next space or tab.
func (sc *metricScanner) token() string {
	start := sc.i
	for sc.i < len(sc.s) && sc.s[sc.i] != ' ' && sc.s[sc.i] != '\t' {
		sc.i++
	}
	return sc.s[start:sc.i]
}

// checkLoad returns v as a backend's load, or NaN (unknown) and why: a load is a finite
// number, not negative.
func checkLoad(v float64) (float64, string) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return math.NaN(), fmt.Sprintf("load %v is not a finite number", v)
	case v < 0:
		return math.NaN(), fmt.Sprintf("load %v is negative", v)
	}
	return v, ""
}
