package admintest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Browser is a headless Chromium tab, driven over the DevTools protocol.
type Browser struct {
	t   testing.TB
	ctx context.Context

	mu     sync.Mutex
	errors []string // JavaScript exceptions thrown by the page
}

// NewBrowser starts headless Chromium (Debian's chromium, or $CHROMIUM) for the rest of the
// test, and skips the test when it is not installed. The test fails if the page throws.
func NewBrowser(t testing.TB) *Browser {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		t.Skip("Chromium is not installed (Debian package chromium; make deps installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	b := &Browser{t: t, ctx: ctx}
	// Listen starts the browser.
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			d := e.ExceptionDetails
			msg := fmt.Sprintf("%s:%d:%d: %s", d.URL, d.LineNumber+1, d.ColumnNumber+1, d.Text)
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	}); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start %s: %v", path, err)
	}
	t.Cleanup(func() {
		b.mu.Lock()
		errs := b.errors
		b.mu.Unlock()
		if len(errs) > 0 {
			t.Errorf("the page threw:\n%s", strings.Join(errs, "\n"))
		}
		cancelCtx()
		cancelAlloc()
	})
	return b
}

// Do runs chromedp actions in order, failing the test on error or after 30 seconds.
func (b *Browser) Do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// eval returns the value of the JavaScript expression js.
func eval[T any](b *Browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("browser: %s: %v", js, err)
	}
	return v
}

// Eval returns the value of the JavaScript expression js, a string.
func (b *Browser) Eval(js string) string {
	b.t.Helper()
	return eval[string](b, js)
}

// Text returns the text of the first element sel matches, or "" when there is none.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
}

// Count returns how many elements sel matches.
func (b *Browser) Count(sel string) int {
	b.t.Helper()
	return eval[int](b, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// WaitText waits until the text of the element that sel matches contains want, and fails the test
// after timeout (at least MinWait).
func (b *Browser) WaitText(sel, want string, timeout time.Duration) {
	b.t.Helper()
	var got string
	b.WaitFor(timeout, func() bool {
		got = b.Text(sel)
		return strings.Contains(got, want)
	}, func() string { return fmt.Sprintf("%s shows %q, want %q", sel, got, want) })
}

// MinWait is the shortest wait of WaitFor and WaitText, whatever timeout they are given. What
// the tests wait for is what the page shows after a poll or two, which takes a second on a
// quiet machine. On a loaded one (Chromium, its pages' servers and the tests of other
// packages on two cores, at a load average of 15) a dashboard test that passes on a quiet
// machine has failed, and the 10 s the tests ask for are then too little for a first poll to
// be sure. A wait that ends early costs nothing; only a failing one waits this long.
const MinWait = 30 * time.Second

// WaitFor polls cond every 100 ms until it holds, and fails the test with what() after timeout
// (at least MinWait).
func (b *Browser) WaitFor(timeout time.Duration, cond func() bool, what func() string) {
	b.t.Helper()
	timeout = max(timeout, MinWait)
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("after %s: %s", timeout, what())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// BackendCell returns the selector of a field of a backend's row on the dashboard: state,
// served, override, latency, reason or address.
func BackendCell(key, field string) string {
	return fmt.Sprintf(`tr[data-key=%q] td[data-field=%q]`, key, field)
}

// BackendButton returns the selector of an action button (enable, disable, drain, clear) of a
// backend's row on the dashboard.
func BackendButton(key, action string) string {
	return fmt.Sprintf(`tr[data-key=%q] button[data-action=%q]`, key, action)
}

// RepeatedBadges returns the badges that a row of the dashboard shows twice, as "ROW: TEXT"
// (ROW is the row's record name or backend key): none when every badge says something of its
// own.
func (b *Browser) RepeatedBadges() []string {
	b.t.Helper()
	out := b.Eval(`[...document.querySelectorAll("tr")].flatMap((tr) => {
		const seen = new Set();
		return [...tr.querySelectorAll(".badge")].map((e) => e.textContent)
			.filter((text) => seen.has(text) || !seen.add(text))
			.map((text) => (tr.dataset.record || tr.dataset.key || "a row") + ": " + text);
	}).join("\n")`)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}
