package testutil

import (
	"fmt"
	"strings"
	"sync"
)

// Log records what a component logs (it has the Infof, Warningf and Errorf of CoreDNS's plugin
// logger), from any goroutine, for a test to read. Each line starts with its level.
type Log struct {
	mu    sync.Mutex
	lines []string
}

// Infof records an INFO line.
func (l *Log) Infof(format string, args ...any) { l.add("INFO " + fmt.Sprintf(format, args...)) }

// Warningf records a WARNING line.
func (l *Log) Warningf(format string, args ...any) { l.add("WARNING " + fmt.Sprintf(format, args...)) }

// Errorf records an ERROR line.
func (l *Log) Errorf(format string, args ...any) { l.add("ERROR " + fmt.Sprintf(format, args...)) }

func (l *Log) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

// Count returns how many lines contain s.
func (l *Log) Count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// String returns every line so far, one per line.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
