package files

import (
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/meridian-gslb/meridian/internal/source"
)

// settleDelay lets an editor or a deployment tool finish writing before a reload starts.
const settleDelay = 250 * time.Millisecond

// watcher calls onChange once the watched files have stopped changing for settleDelay. It
// watches the files' directories, so that files replaced by rename (editors, Kubernetes
// ConfigMaps) are followed too.
type watcher struct {
	fs   *fsnotify.Watcher
	done chan struct{}
	wg   sync.WaitGroup
}

// Watch calls onChange, from a goroutine of its own, once files have changed on disk and then
// stayed unchanged for a moment (an editor or a deployment tool has finished writing), until
// stop is called. Problems of the watch itself go to log.
func Watch(files []string, onChange func(), log source.Logger) (stop func(), err error) {
	w, err := newWatcher(files, onChange, log)
	if err != nil {
		return nil, err
	}
	return w.close, nil
}

func newWatcher(files []string, onChange func(), log source.Logger) (*watcher, error) {
	fs, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	wanted := make(map[string]bool, len(files))
	dirs := make(map[string]bool)
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			fs.Close()
			return nil, err
		}
		wanted[abs] = true
		dirs[filepath.Dir(abs)] = true
	}
	for d := range dirs {
		if err := fs.Add(d); err != nil {
			fs.Close()
			return nil, err
		}
	}
	w := &watcher{fs: fs, done: make(chan struct{})}
	w.wg.Add(1)
	go w.loop(wanted, onChange, log)
	return w, nil
}

func (w *watcher) loop(wanted map[string]bool, onChange func(), log source.Logger) {
	defer w.wg.Done()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			name := filepath.Clean(ev.Name)
			if wanted[name] || strings.HasPrefix(filepath.Base(name), "..data") {
				settle.Reset(settleDelay)
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			log.Warningf("watching configuration files: %v", err)
		case <-settle.C:
			onChange()
		}
	}
}

func (w *watcher) close() {
	close(w.done)
	w.fs.Close()
	w.wg.Wait()
}
