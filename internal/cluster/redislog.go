package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisLogInterval is the least time between two lines of one kind from go-redis. While Redis
// is down go-redis logs every failed dial; the lines in between are counted, and the count is
// logged with the next line of the kind.
const redisLogInterval = time.Minute

// redisLog forwards go-redis's log lines to a Logger, as warnings prefixed "go-redis: ", at most
// one line of each kind (its format string) per interval. It implements go-redis's logging
// interface. Until it has a Logger it drops every line.
type redisLog struct {
	interval time.Duration
	now      func() time.Time

	mu    sync.Mutex
	out   Logger
	kinds map[string]*redisLogKind
}

// redisLogKind is the state of one kind of line.
type redisLogKind struct {
	next    time.Time // the earliest time the next line of the kind is logged
	dropped int       // lines of the kind not logged since the last one that was
}

func newRedisLog(interval time.Duration, now func() time.Time) *redisLog {
	return &redisLog{interval: interval, now: now, kinds: make(map[string]*redisLogKind)}
}

// setOutput makes out the Logger of every line from now on.
func (l *redisLog) setOutput(out Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out = out
}

// Printf logs one line of go-redis, or counts it when a line of its kind was logged less than
// the interval ago.
func (l *redisLog) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	out := l.out
	if out == nil {
		l.mu.Unlock()
		return
	}
	now := l.now()
	k := l.kinds[format] // go-redis's formats are constants: the map stays small
	if k == nil {
		k = &redisLogKind{}
		l.kinds[format] = k
	}
	if now.Before(k.next) {
		k.dropped++
		l.mu.Unlock()
		return
	}
	dropped := k.dropped
	k.next, k.dropped = now.Add(l.interval), 0
	l.mu.Unlock()

	line := strings.TrimSuffix(fmt.Sprintf(format, v...), "\n")
	if dropped > 0 {
		line += fmt.Sprintf(" (and %d more like it since the last one logged)", dropped)
	}
	out.Warningf("go-redis: %s", line)
}

// go-redis has one logger for the whole process, installed once; the Logger it writes to is
// that of the newest cluster client.
var (
	redisLogger     = newRedisLog(redisLogInterval, time.Now)
	redisLoggerOnce sync.Once
)

// logRedisTo makes go-redis log through redisLogger, and to out from now on when out is not nil.
func logRedisTo(out Logger) {
	redisLoggerOnce.Do(func() { redis.SetLogger(redisLogger) })
	if out != nil {
		redisLogger.setOutput(out)
	}
}
