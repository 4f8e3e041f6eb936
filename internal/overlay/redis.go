package overlay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisPoll is how often a Redis store reads the overrides again, to catch up with the
// messages it missed.
const DefaultRedisPoll = 5 * time.Second

// redisMinBackoff is the first wait before the subscription is tried again after it failed; the
// waits double up to the poll interval.
const redisMinBackoff = 100 * time.Millisecond

// The operations of applyScript, in triples op, field, value.
const (
	opSet    = "set"    // store value
	opDelete = "del"    // remove the field
	opExpire = "expire" // remove the field if it still holds value
)

// applyScript makes changes to the overrides hash KEYS[1] in one step, publishes ARGV[2] on the
// channel ARGV[1] when the hash changed, and returns the whole hash. The changes are the triples
// of ARGV[3:]. Every write is to the one key, which the script checks first: either the first
// write is refused (out of memory) and nothing changed, or all of them are made.
var applyScript = redis.NewScript(`
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' and kind ~= 'none' then
	return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not the hash of the overrides')
end
local changed = false
for i = 3, #ARGV, 3 do
	local op, field, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
	if op == 'set' then
		redis.call('HSET', KEYS[1], field, value)
		changed = true
	elseif op == 'del' or (op == 'expire' and redis.call('HGET', KEYS[1], field) == value) then
		changed = redis.call('HDEL', KEYS[1], field) == 1 or changed
	end
end
if changed then
	redis.call('PUBLISH', ARGV[1], ARGV[2])
end
return redis.call('HGETALL', KEYS[1])
`)

// Logger is where a Redis store reports its connection's failures and recoveries; CoreDNS's
// plugin logger is one.
type Logger interface {
	Infof(format string, args ...any)
	Warningf(format string, args ...any)
}

// RedisOptions are the settings of a Redis store.
type RedisOptions struct {
	// Prefix starts the names of the hash and the channel: cluster mode's redis_key_prefix.
	Prefix string
	// Name identifies the instance in the messages it publishes, for people watching them.
	Name string
	// Poll is how often the hash is read again; 0 for DefaultRedisPoll.
	Poll time.Duration
	// Clock decides when overrides expire; nil for SystemClock.
	Clock Clock
	// Log receives the failures of Redis (the first of a series), the recoveries, and the
	// fields of the hash that are not overrides. It must be set.
	Log Logger
}

// Redis is the Store of cluster mode: the overrides of every instance that shares a Redis (and a
// key prefix), kept in one hash, field the backend key, value the override as JSON, as the API
// lists it. A change is made in Redis by a script, all of it or nothing, and announced on a
// channel; every instance then reads the hash again, and reads it every poll interval anyway, so
// that a lost message or a reconnection delays a change by one interval at most.
//
// The store serves the overrides it read last: while Redis is unreachable, Get and List go on
// answering with them, and Apply fails. Each instance removes an override from its answers when
// its expiry passes by its own clock; the first instance that reads it expired deletes it from
// the hash, unless it was changed meanwhile.
type Redis struct {
	mem     *Memory // the overrides read last, their expiry timer and the subscribers
	rdb     redis.UniversalClient
	hash    string
	channel string
	name    string
	poll    time.Duration
	log     Logger
	ctx     context.Context
	cancel  context.CancelFunc
	start   sync.Once     // starts the listener, or marks a store closed before it started
	done    chan struct{} // closed when listen returns
	failing atomic.Bool   // the last operation on Redis failed (logged once)

	// redisMu orders the operations on Redis with the updates of mem that follow them, so that
	// the overrides read by an older operation never replace those of a newer one.
	redisMu sync.Mutex
	bad     map[string]string // the invalid fields of the hash already reported, with redisMu held

	mu sync.Mutex
	ps *redis.PubSub // the subscription, which listen replaces and Close closes, with mu held
}

// OpenRedis returns the store of the overrides in rdb, which it takes over: Close closes it. It
// reads the overrides, waiting as long as rdb's timeouts allow; when Redis is unreachable it
// starts without overrides, logs it, and reads them as soon as Redis answers (once Start has
// started following the changes).
func OpenRedis(rdb redis.UniversalClient, o RedisOptions) *Redis {
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Redis{
		mem: NewMemory(o.Clock), rdb: rdb,
		hash: o.Prefix + "overrides", channel: o.Prefix + "overrides:updates",
		name: o.Name, poll: o.Poll, log: o.Log,
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
		bad: make(map[string]string),
	}
	if s.poll <= 0 {
		s.poll = DefaultRedisPoll
	}
	s.reread()
	return s
}

// Start implements Store: it subscribes to the channel of changes and starts the listener,
// which reads the overrides again on every change, on every (re)subscription and every poll
// interval.
func (s *Redis) Start() {
	s.start.Do(func() {
		s.mu.Lock()
		s.ps = s.rdb.Subscribe(s.ctx, s.channel)
		s.mu.Unlock()
		go s.listen()
	})
}

// Key returns the name of the hash that holds the overrides.
func (s *Redis) Key() string { return s.hash }

// Get implements Store.
func (s *Redis) Get(key string) (Override, bool) { return s.mem.Get(key) }

// List implements Store.
func (s *Redis) List() []Override { return s.mem.List() }

// Subscribe implements Store. Besides the goroutines of Apply and of expiry, fn runs on the
// store's listener when another instance changed the overrides.
func (s *Redis) Subscribe(fn func()) (cancel func()) { return s.mem.Subscribe(fn) }

// Apply implements Store: it makes the changes in Redis and, once Redis confirmed them, serves
// the overrides as Redis holds them after the changes. When Redis cannot be reached (or its
// operation times out) the error says so; the changes were made everywhere or nowhere, and the
// next read of the hash shows which.
func (s *Redis) Apply(ctx context.Context, changes []Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.mem.clock.Now()
	if err := validate(changes, now); err != nil {
		return err
	}
	ops := make([]any, 0, 3*len(changes))
	for _, c := range changes {
		if c.Action == Clear {
			ops = append(ops, opDelete, c.Key, "")
			continue
		}
		value, err := json.Marshal(c.override(now))
		if err != nil {
			return fmt.Errorf("encode the override of %s: %w", c.Key, err)
		}
		ops = append(ops, opSet, c.Key, value)
	}
	s.redisMu.Lock()
	raw, err := s.run(ctx, ops)
	var subs []func()
	if err == nil {
		live, _ := s.decode(raw, now)
		subs = s.mem.replace(live)
	}
	s.redisMu.Unlock()
	if err != nil {
		return err
	}
	notify(subs)
	return nil
}

// Close implements Store: it stops reading Redis and the expiry of overrides, and closes the
// client.
func (s *Redis) Close() error {
	s.cancel()
	s.start.Do(func() { close(s.done) }) // never started: there is no listener to wait for
	s.mu.Lock()
	if s.ps != nil {
		_ = s.ps.Close()
	}
	s.mu.Unlock()
	<-s.done
	s.mem.Close()
	if err := s.rdb.Close(); err != nil {
		return fmt.Errorf("close the Redis client of the overrides: %w", err)
	}
	return nil
}

// listen reads the hash again on every message of the channel, on every (re)subscription, and
// every poll interval. The poll also sends a PING on the subscription: when its PONG has not come
// by the next poll, the connection is dead without saying so, and it is replaced.
func (s *Redis) listen() {
	defer close(s.done)
	s.mu.Lock()
	ps := s.ps
	s.mu.Unlock()
	next := time.Now().Add(s.poll)
	backoff := redisMinBackoff
	pinged := false
	for {
		wait := time.Until(next)
		if wait <= 0 {
			if pinged {
				ps = s.resubscribe()
			}
			pinged = ps.Ping(s.ctx) == nil
			s.reread()
			next = time.Now().Add(s.poll)
			continue
		}
		msg, err := ps.ReceiveTimeout(s.ctx, wait)
		if s.ctx.Err() != nil {
			return
		}
		if err != nil {
			// Not the poll's timeout: the subscription failed. go-redis subscribes again on
			// the next receive; the poll reports Redis unreachable, if it is.
			if d := min(backoff, time.Until(next)); d > 0 {
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(d):
				}
				backoff = min(2*backoff, s.poll)
			}
			continue
		}
		backoff = redisMinBackoff
		switch msg.(type) {
		case *redis.Pong:
			pinged = false
		case *redis.Subscription, *redis.Message:
			s.reread()
		}
	}
}

// resubscribe replaces the subscription, unless the store is closing.
func (s *Redis) resubscribe() *redis.PubSub {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() == nil {
		_ = s.ps.Close()
		s.ps = s.rdb.Subscribe(s.ctx, s.channel)
	}
	return s.ps
}

// reread reads the hash and tells the subscribers when the overrides changed. It deletes from
// the hash the overrides that expired by this instance's clock, when they still hold what was
// read; the others removed them from their answers at the same time, by their clocks.
func (s *Redis) reread() {
	s.redisMu.Lock()
	raw, err := s.rdb.HGetAll(s.ctx, s.hash).Result()
	err = s.track(err)
	var subs []func()
	if err == nil {
		now := s.mem.clock.Now()
		live, expired := s.decode(raw, now)
		if len(expired) > 0 {
			ops := make([]any, 0, 3*len(expired))
			for field, value := range expired {
				ops = append(ops, opExpire, field, value)
			}
			if after, err := s.run(s.ctx, ops); err == nil {
				live, _ = s.decode(after, now)
			}
		}
		subs = s.mem.replace(live)
	}
	s.redisMu.Unlock()
	notify(subs)
}

// run runs applyScript with ops, and returns the hash after it.
func (s *Redis) run(ctx context.Context, ops []any) (map[string]string, error) {
	args := append([]any{s.channel, s.name}, ops...)
	flat, err := applyScript.Run(ctx, s.rdb, []string{s.hash}, args...).StringSlice()
	if err = s.track(err); err != nil {
		return nil, fmt.Errorf("write the overrides to Redis (%s): %w", s.hash, err)
	}
	raw := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		raw[flat[i]] = flat[i+1]
	}
	return raw, nil
}

// decode parses the fields of the hash, and returns the overrides in effect at now and the raw
// values of those that expired, by field. A field that is not an override (written by hand,
// say) is left alone and logged the first time it is seen.
func (s *Redis) decode(raw map[string]string, now time.Time) (live []Override, expired map[string]string) {
	expired = make(map[string]string)
	for field, value := range raw {
		var o Override
		err := json.Unmarshal([]byte(value), &o)
		if err == nil && o.Key == "" {
			o.Key = field
		}
		switch {
		case err == nil && o.Key != field:
			err = fmt.Errorf("the override is of %s", o.Key)
		case err == nil && !o.Action.valid():
			err = fmt.Errorf("unknown action %q", o.Action)
		case err == nil && !o.Starts.IsZero() && o.Action != Drain:
			err = fmt.Errorf("%s has a start time, which only a drain takes", o.Action)
		}
		switch {
		case err != nil:
			if s.bad[field] != value {
				s.bad[field] = value
				s.log.Warningf("overrides: ignoring field %q of Redis hash %s: %v", field, s.hash, err)
			}
		case o.expired(now):
			expired[field] = value
		default:
			live = append(live, o)
		}
	}
	maps.DeleteFunc(s.bad, func(field, value string) bool { return raw[field] != value })
	return live, expired
}

// track logs the first error of a series of failed operations on Redis, and the success that
// ends it. It returns err. A cancelled operation (the store closing, an API client gone) is not
// a failure of Redis.
func (s *Redis) track(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
	case err != nil:
		if !s.failing.Swap(true) {
			s.log.Warningf("overrides: Redis failed (%v): serving the %d overrides read last; changes fail until it answers", err, len(s.List()))
		}
	case s.failing.Swap(false):
		s.log.Infof("overrides: Redis answers again (%s)", s.hash)
	}
	return err
}

// replace makes overrides, read from Redis, the state of m. It returns the subscribers to tell
// once the caller released its locks, none when nothing changed.
func (m *Memory) replace(overrides []Override) []func() {
	next := make(map[string]Override, len(overrides))
	for _, o := range overrides {
		next[o.Key] = o
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || maps.EqualFunc(m.byKey, next, Override.Same) {
		return nil
	}
	m.byKey = next
	return m.changed(m.clock.Now())
}
