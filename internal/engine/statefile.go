package engine

import (
	"errors"
	"io/fs"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/source/statefile"
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
	l, err := statefile.Read(st.Path, st.MaxAge, time.Now())
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
	for _, s := range e.specs {
		if len(s.Checks) > 0 && sh.seed[s.Key] != health.Unknown {
			n++
		}
	}
	sh.seed = nil
	statefile.SetRestored(n)
}

// WriteStateFiles writes every state file of the registry now, for a process about to take
// over from this one (a binary upgrade), which reads them when it starts. A failure is logged
// by the writer.
func (r *Registry) WriteStateFiles() {
	r.mu.Lock()
	writers := make([]*statefile.Writer, 0, len(r.files))
	for _, w := range r.files {
		writers = append(writers, w)
	}
	r.mu.Unlock()
	for _, w := range writers {
		_ = w.Write()
	}
}
