package engine

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/statefile"
)

// openStateFile returns what a new health manager of o starts from, read from the block's
// state file, and the writer of that file that the manager joins. Both are nil when the block
// has no state file, and in cluster mode, where the fleet's results in Redis seed the manager
// instead. The writer is shared by every manager that uses the path, so that one loop writes
// the file: when a running manager already writes it (a Corefile reload that changed the
// manager's options), it is written first, so that the new manager starts from the running
// one's state. A file that is missing, too old or unreadable is logged and seeds nothing. The
// caller holds r.mu.
func (r *Registry) openStateFile(o config.Options, log Logger) (map[string]health.Status, *statefile.Writer) {
	st := o.State
	if !st.Enable {
		return nil, nil
	}
	if o.Cluster.Enable {
		log.Infof("state_persist_enable is ignored in cluster mode: backends start from the fleet's results in Redis")
		return nil, nil
	}
	w := r.files[st.Path]
	if w != nil {
		_ = w.Write() // a failure is logged: the file is read as it is
	} else {
		w = statefile.NewWriter(st.Path, st.Interval, log)
		r.files[st.Path] = w
	}
	l, err := r.readStateFile(st, log)
	var stale *statefile.StaleError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Infof("no state file %s yet: every probed backend starts unknown", st.Path)
	case errors.As(err, &stale):
		log.Infof("%v: every probed backend starts unknown", err)
	case err != nil:
		log.Errorf("%v: every probed backend starts unknown", err)
	default:
		log.Infof("state file %s (%s format) is %s old and names %d backends: they start at their saved health",
			st.Path, l.Format, time.Since(l.WrittenAt).Round(time.Millisecond), len(l.States))
		w.Restore(l)
		return l.States, w
	}
	statefile.SetRestored(0)
	return nil, w
}

// reportSeeded counts, once per manager, the backends of e's first snapshot that the state file
// seeded.
func (r *Registry) reportSeeded(e *Engine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sh := e.shared
	if sh.seed == nil {
		return
	}
	n := 0
	var buf [128]byte
	for _, rec := range e.Snapshot().Records() {
		for _, b := range rec.Backends {
			checked := specified(b) && checkedHere(b.Config) && len(b.Config.Checks().HealthChecks) > 0
			if checked && sh.seed[string(b.AppendKey(buf[:0]))] != health.Unknown {
				n++
			}
		}
	}
	sh.seed = nil
	statefile.SetRestored(n)
}

// WriteHandover writes every state file of the registry now, marked for the process that is
// about to replace this one in a binary upgrade (which waits for the mark: AwaitHandover). A
// failure is logged by the writer.
func (r *Registry) WriteHandover() {
	r.mu.Lock()
	writers := make([]*statefile.Writer, 0, len(r.files))
	for _, w := range r.files {
		writers = append(writers, w)
	}
	r.mu.Unlock()
	for _, w := range writers {
		_ = w.WriteHandover(os.Getpid())
	}
}

// handoverWait bounds how long a process started by a binary upgrade waits for its parent's
// state files.
const handoverWait = 5 * time.Second

// AwaitHandover makes the registry's first read of each state file, while the process parent
// runs, wait (at most handoverWait) until parent has written it for this process
// (WriteHandover): a process started by a binary upgrade starts from the health its parent
// knew when the upgrade began, not from the file's last periodic write.
func (r *Registry) AwaitHandover(parent int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handoverFrom = parent
}

// readStateFile is statefile.Read, after waiting for the handover of the parent named by
// AwaitHandover, if it still runs.
func (r *Registry) readStateFile(st config.StateOptions, log Logger) (*statefile.Loaded, error) {
	if r.handoverFrom != 0 {
		deadline := time.Now().Add(handoverWait)
		for os.Getppid() == r.handoverFrom && time.Now().Before(deadline) {
			if l, err := statefile.Read(st.Path, st.MaxAge, time.Now()); err == nil && l.Handover == r.handoverFrom {
				return l, nil
			}
			time.Sleep(10 * time.Millisecond)
		}
		if os.Getppid() == r.handoverFrom {
			log.Warningf("state file %s: the upgraded process %d did not write it within %s: read as it is", st.Path, r.handoverFrom, handoverWait)
		}
	}
	return statefile.Read(st.Path, st.MaxAge, time.Now())
}
