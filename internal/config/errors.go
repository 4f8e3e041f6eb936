package config

import (
	"strconv"
	"strings"
)

// String formats the position as file:line:col, leaving out the parts that are unknown.
func (p Position) String() string {
	var b strings.Builder
	b.WriteString(p.File())
	if p.Line > 0 {
		b.WriteString(":" + strconv.Itoa(int(p.Line)))
		if p.Column > 0 {
			b.WriteString(":" + strconv.Itoa(int(p.Column)))
		}
	}
	return b.String()
}

// Error is one problem found in a configuration file.
type Error struct {
	Pos Position
	// Path is the field the problem is about, such as
	// records["www.example.org."].backends[1].address; empty for the file as a whole.
	Path string
	Msg  string
}

// Error formats the error as "file:line:col: path: msg".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Pos.String())
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in one file, in file order. It is only returned non-empty.
type ErrorList []*Error

// Error prints one error per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors of the list, for errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}
