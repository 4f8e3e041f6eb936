package statefile

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/publish"
)

// Logger is where the writer reports failed writes. CoreDNS's plugin logger is one.
type Logger interface {
	Warningf(format string, args ...any)
}

// Writer writes the state of its sources to one file, every interval once started, and a last
// time when its last source is removed. One writer serves every source that uses its path, so
// that the file is never written by two loops at once: during a Corefile reload the old and the
// new health manager are both sources for a moment, the newer one winning on common keys.
type Writer struct {
	path     string
	interval time.Duration
	log      Logger

	mu       sync.Mutex // guards sources, restored and the loop's channels
	sources  []Source   // in order of Add
	restored *Loaded    // see Restore
	stop     chan struct{}
	done     chan struct{}

	writeMu sync.Mutex // serialises writes, so that an older state never replaces a newer one
}

// NewWriter returns a writer of path with no source, not started.
func NewWriter(path string, interval time.Duration, log Logger) *Writer {
	return &Writer{path: path, interval: interval, log: log}
}

// Path returns the file the writer writes.
func (w *Writer) Path() string { return w.path }

// Add makes s a source of the writer, after the ones added before.
func (w *Writer) Add(s Source) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sources = append(w.sources, s)
}

// Restore notes the statuses l seeded a source with (see Take): until a probe confirms them,
// they are written with the time they were known, not as news. Later calls add to earlier ones.
func (w *Writer) Restore(l *Loaded) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.restored == nil {
		w.restored = newLoaded(l.WrittenAt, l.Format)
	}
	maps.Copy(w.restored.States, l.States)
	maps.Copy(w.restored.AsOf, l.AsOf)
}

// Start implements publish.Publisher: it starts writing every interval, once.
func (w *Writer) Start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		return
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go w.loop(w.stop, w.done)
}

func (w *Writer) loop(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_ = w.Write()
		}
	}
}

// Remove takes s out of the writer's sources. When s was the last one, it stops the writer
// (a last write of the state of s) and reports true: the writer is done. Call it before s
// forgets its state.
func (w *Writer) Remove(s Source) (last bool) {
	w.mu.Lock()
	if len(w.sources) > 1 {
		w.sources = slices.DeleteFunc(w.sources, func(o Source) bool { return o == s })
		w.mu.Unlock()
		return false
	}
	w.mu.Unlock()
	w.Stop()
	w.mu.Lock()
	w.sources = nil
	w.mu.Unlock()
	return true
}

// Name implements publish.Publisher.
func (w *Writer) Name() string { return "state file " + w.path }

// Stop implements publish.Publisher: the periodic writes stop, and the sources' state is
// written a last time.
func (w *Writer) Stop() {
	w.mu.Lock()
	stop, done := w.stop, w.done
	w.stop = nil
	w.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	_ = w.Write()
}

var _ publish.Publisher = (*Writer)(nil)

// Write writes the sources' state now. A failure is logged and counted, and returned.
func (w *Writer) Write() error { return w.write(0) }

// WriteHandover is Write for the process that replaces this one, pid, in a binary upgrade: the
// file carries the mark it waits for (File.Handover).
func (w *Writer) WriteHandover(pid int) error { return w.write(pid) }

func (w *Writer) write(handover int) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	w.mu.Lock()
	sources := w.sources
	f := Take(time.Now(), w.restored, sources...)
	w.mu.Unlock()
	f.Handover = handover
	if err := Write(w.path, f); err != nil {
		writesTotal.WithLabelValues("failure").Inc()
		w.log.Warningf("health state not saved: %v", err)
		return err
	}
	writesTotal.WithLabelValues("success").Inc()
	lastWrite.SetToCurrentTime()
	return nil
}
