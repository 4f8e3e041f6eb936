package kubernetes

import (
	"context"
	"net/netip"
	"slices"
)

// resolveNewLocked starts resolving, in the background, the host names among hostnames that
// were never resolved; nothing before Start.
func (w *Watcher) resolveNewLocked(hostnames []string) {
	var todo []string
	for _, h := range hostnames {
		if _, ok := w.resolved[h]; !ok && !slices.Contains(todo, h) {
			todo = append(todo, h)
		}
	}
	if len(todo) == 0 || w.ctx == nil || w.ctx.Err() != nil {
		return
	}
	ctx := w.ctx
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.resolve(ctx, todo)
	}()
}

// resolveAll resolves every host name of the merged Services again.
func (w *Watcher) resolveAll(ctx context.Context) {
	w.mu.Lock()
	var hostnames []string
	if w.conn != nil {
		for _, u := range w.merged {
			hostnames = append(hostnames, w.targetLocked(u.ref, u.record).hostnames...)
		}
	}
	w.mu.Unlock()
	slices.Sort(hostnames)
	w.resolve(ctx, slices.Compact(hostnames))
}

// resolve looks hostnames up (both families) and keeps what they resolve to; the watches are
// told when that changed. A name that fails to resolve keeps its last addresses, and is
// logged.
func (w *Watcher) resolve(ctx context.Context, hostnames []string) {
	changed := false
	for _, h := range hostnames {
		lctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		found, err := w.resolver.LookupNetIP(lctx, "ip", h)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.log.Warningf("kubernetes: resolving the LoadBalancer host name %s: %v", h, err)
		}
		addrs := make([]netip.Addr, 0, len(found))
		for _, a := range found {
			addrs = append(addrs, a.Unmap())
		}
		slices.SortFunc(addrs, netip.Addr.Compare)
		w.mu.Lock()
		old, seen := w.resolved[h]
		if err == nil || !seen {
			if err != nil {
				addrs = nil
			}
			w.resolved[h] = addrs
			changed = changed || !seen && len(addrs) > 0 || seen && !slices.Equal(old, addrs)
		}
		w.mu.Unlock()
	}
	if changed {
		w.kick()
	}
}
