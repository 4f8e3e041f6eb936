// Command sites measures how fast a backend's health travels from site to site over DNS (the
// sites of docs/sites.md): a site detects its own backend's change within fall × scrape_interval
// (+ scrape_timeout), and the other sites follow within peer_interval + peer_timeout, at their
// next read of its localtargets.
//
// It starts SITES meridian processes on loopback, sites s1 ... sN, each naming the others in
// peers, all loading the same zone file: app.bench.test is a failover record with one backend
// per site (127.0.3.i, priority i, rise and fall 1, a tcp check of a listener the benchmark
// opens). It closes and reopens site 1's listener TRANSITIONS times; each time, every site moves
// between site 1's backend and site 2's. One goroutine per site queries it over UDP every
// millisecond and notes when its answer changes. Site 1's change, from the toggle, is local
// detection; the other sites' change minus site 1's is propagation. The sites start a random part
// of peer_interval apart, so that they do not read each other in step, and each toggle waits a
// random part of peer_interval first, so that it falls at any point of their read cycles.
//
// Then it kills site 1's process (SIGKILL) with its backend up: the other sites keep its backend
// until it is stale, no sooner than split_brain_threshold after the kill and no later than
// split_brain_threshold + 2 × (peer_interval + peer_timeout).
//
//	make build && go run ./bench/sites                    # 3 sites, 40 transitions, about a minute
//	go run ./bench/sites -bin bin/meridian -sites 5 -transitions 100 -scrape 100ms -peer-interval 1s
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/watch"
)

// The fixed sites options of the benchmark.
const (
	peerTimeout         = 200 * time.Millisecond
	splitBrainThreshold = 3 * time.Second
	fall                = 1 // and rise 1: each toggle is one transition
)

// params is one run's settings.
type params struct {
	bin                  string
	sites, transitions   int
	scrape, peerInterval time.Duration
	keep                 bool
}

func main() {
	var p params
	flag.StringVar(&p.bin, "bin", "bin/meridian", "the meridian binary")
	flag.IntVar(&p.sites, "sites", 3, "meridian processes, one per site (at least 2)")
	flag.IntVar(&p.transitions, "transitions", 40, "state changes of site 1's backend to measure")
	flag.DurationVar(&p.scrape, "scrape", 200*time.Millisecond, "scrape_interval of the record (scrape_timeout is half)")
	flag.DurationVar(&p.peerInterval, "peer-interval", 500*time.Millisecond, "peer_interval of every site (peer_timeout 200ms, split_brain_threshold 3s)")
	flag.BoolVar(&p.keep, "keep", false, "keep the work directory (zone file, Corefiles, logs)")
	flag.Parse()
	if p.sites < 2 || p.transitions < 1 {
		log.Fatal("want -sites >= 2 and -transitions >= 1")
	}
	if p.peerInterval < peerTimeout || 2*p.peerInterval > splitBrainThreshold {
		log.Fatalf("-peer-interval must be between %s and %s", peerTimeout, splitBrainThreshold/2)
	}
	if err := run(p); err != nil {
		log.Fatal(err)
	}
}

// backend is site i's backend address (i from 0).
func backend(i int) string { return fmt.Sprintf("127.0.3.%d", i+1) }

func run(p params) error {
	work, err := os.MkdirTemp("", "meridian-sites-bench-")
	if err != nil {
		return err
	}
	if !p.keep {
		defer os.RemoveAll(work)
	} else {
		log.Printf("work directory: %s", work)
	}
	procs := make([]*exec.Cmd, 0, p.sites)
	defer func() {
		for _, c := range procs {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()

	toggles := make([]*watch.Toggle, p.sites)
	for i := range toggles {
		if toggles[i], err = watch.NewToggle(backend(i)); err != nil {
			return err
		}
	}
	zone := filepath.Join(work, "bench.test.yml")
	if err := os.WriteFile(zone, zoneFile(p.scrape, toggles), 0o644); err != nil {
		return err
	}
	addrs := make([]string, p.sites)
	for i := range addrs {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(watch.FreePort()))
	}
	watchers := make([]*watch.Watcher, p.sites)
	for i := range p.sites {
		// Sites started together would read each other in step; real ones do not.
		time.Sleep(rand.N(p.peerInterval))
		cmd, err := startSite(p, work, zone, i, addrs)
		if err != nil {
			return err
		}
		procs = append(procs, cmd)
		watchers[i] = watch.NewWatcher(addrs[i], "app.bench.test.")
	}
	// Every site answers site 1's backend once it has read site 1.
	for i, w := range watchers {
		if err := w.WaitFor(backend(0), 30*time.Second); err != nil {
			return fmt.Errorf("site s%d: %w (logs in %s with -keep)", i+1, err, work)
		}
		go w.Watch()
	}

	detect := fall*p.scrape + p.scrape/2 // fall × scrape_interval + scrape_timeout
	propagate := p.peerInterval + peerTimeout
	timeout := 10*p.scrape + 4*propagate + 5*time.Second
	var local, prop, total []time.Duration
	up := true
	for range p.transitions {
		time.Sleep(rand.N(p.peerInterval))
		up = !up
		want := backend(0)
		if !up {
			want = backend(1)
		}
		mark := time.Now()
		if err := toggles[0].Set(up); err != nil {
			return err
		}
		at := make([]time.Time, len(watchers))
		for i, w := range watchers {
			if at[i], err = w.ChangedTo(want, mark, timeout); err != nil {
				return fmt.Errorf("site s%d: %w", i+1, err)
			}
		}
		local = append(local, at[0].Sub(mark))
		for _, a := range at[1:] {
			prop = append(prop, a.Sub(at[0]))
			total = append(total, a.Sub(mark))
		}
	}
	fmt.Printf("%d sites, %d transitions of site 1's backend; scrape_interval %s (scrape_timeout %s, rise and fall %d), peer_interval %s, peer_timeout %s\n\n",
		p.sites, p.transitions, p.scrape, p.scrape/2, fall, p.peerInterval, peerTimeout)
	fmt.Printf("| measured | n | p50 | p90 | p99 | max | budget | over budget |\n")
	fmt.Printf("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	row("site 1: local detection (toggle to its change)", local, detect)
	row(fmt.Sprintf("sites 2-%d: propagation (their change minus site 1's)", p.sites), prop, propagate)
	row(fmt.Sprintf("sites 2-%d: from the toggle", p.sites), total, detect+propagate)

	// The kill: site 1's backend up, every site on it, then SIGKILL.
	if !up {
		if err := toggles[0].Set(true); err != nil {
			return err
		}
	}
	for i, w := range watchers {
		if err := w.WaitFor(backend(0), timeout); err != nil {
			return fmt.Errorf("site s%d: %w", i+1, err)
		}
	}
	time.Sleep(rand.N(p.peerInterval))
	mark := time.Now()
	if err := procs[0].Process.Kill(); err != nil {
		return fmt.Errorf("kill site 1: %w", err)
	}
	lo, hi := splitBrainThreshold, splitBrainThreshold+2*propagate
	fmt.Printf("\nSite 1's process killed (SIGKILL), its backend up; bounds: split_brain_threshold %s to %s\n\n", lo, hi)
	fmt.Printf("| site | moved to site 2's backend after | within bounds |\n|---|---:|---|\n")
	for i, w := range watchers[1:] {
		at, err := w.ChangedTo(backend(1), mark, hi+5*time.Second)
		if err != nil {
			return fmt.Errorf("site s%d: %w", i+2, err)
		}
		took := at.Sub(mark)
		verdict := "yes"
		if took < lo || took > hi {
			verdict = "**no**"
		}
		fmt.Printf("| s%d | %s | %s |\n", i+2, watch.Ms(took), verdict)
	}
	return nil
}

// row prints one line of the propagation table: the percentiles of ds and how many exceeded
// budget.
func row(what string, ds []time.Duration, budget time.Duration) {
	slices.Sort(ds)
	over := 0
	for _, d := range ds {
		if d > budget {
			over++
		}
	}
	fmt.Printf("| %s | %d | %s | %s | %s | %s | %s | %d |\n", what, len(ds),
		watch.Ms(watch.Percentile(ds, 0.50)), watch.Ms(watch.Percentile(ds, 0.90)),
		watch.Ms(watch.Percentile(ds, 0.99)), watch.Ms(ds[len(ds)-1]), watch.Ms(budget), over)
}

// zoneFile is every site's zone: app.bench.test, failover, site i's backend at priority i+1.
func zoneFile(scrape time.Duration, toggles []*watch.Toggle) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "records:\n  app.bench.test.:\n    mode: failover\n    scrape_interval: %s\n    scrape_timeout: %s\n    scrape_retries: 0\n    backends:\n", scrape, scrape/2)
	for i, t := range toggles {
		fmt.Fprintf(&b, "      - {address: %s, site: s%d, priority: %d, rise: 1, fall: %d, healthchecks: [{type: tcp, params: {port: %d}}]}\n",
			backend(i), i+1, i+1, fall, t.Port)
	}
	return []byte(b.String())
}

// startSite writes site i's Corefile (listening on addrs[i], the other addresses its peers)
// and starts its meridian process.
func startSite(p params, work, zone string, i int, addrs []string) (*exec.Cmd, error) {
	host, port, _ := net.SplitHostPort(addrs[i])
	peers := slices.Concat(addrs[:i], addrs[i+1:])
	corefile := filepath.Join(work, fmt.Sprintf("Corefile.s%d", i+1))
	if err := os.WriteFile(corefile, fmt.Appendf(nil, `bench.test:%s {
    bind %s
    gslb {
        zone bench.test. %s
        max_stagger_start 0
        site s%d
        peers %s
        peer_interval %s
        peer_timeout %s
        split_brain_threshold %s
    }
}
`, port, host, zone, i+1, strings.Join(peers, " "), p.peerInterval, peerTimeout, splitBrainThreshold), 0o644); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(work, fmt.Sprintf("meridian.s%d.log", i+1)))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.bin, "-conf", corefile)
	defer logFile.Close() // the process has its own
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.bin, err)
	}
	return cmd, nil
}
