// Command cluster measures how fast a health result travels through a Meridian cluster: the
// budget (DESIGN.md section 4) is 100 ms at the 99th percentile from the probe to every
// instance.
//
// It starts a private redis-server and INSTANCES meridian processes in lock mode, all serving
// app.bench.test: a failover record whose primary (127.0.0.1) is a TCP listener the benchmark
// opens and closes, and whose secondary (127.0.0.2) is always up. With rise and fall 1, each
// open or close is one transition, seen by the one instance that probes the cycle and, through
// Redis, by the others. One goroutine per instance queries it over UDP every millisecond and
// notes when its answer changes; the spread between the first and the last instance to change is the
// transition's propagation time (the instance that probed changes first), to about a
// millisecond. The run also reads the
// instances' own coredns_gslb_cluster_propagation_delay_seconds histograms (from the end of the
// probe to the result applied, with the message's millisecond timestamps).
//
//	make build && go run ./bench/cluster                  # 200 transitions, 3 instances
//	go run ./bench/cluster -transitions 50 -bin bin/meridian
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/watch"
)

func main() {
	bin := flag.String("bin", "bin/meridian", "the meridian binary")
	instances := flag.Int("instances", 3, "meridian processes in the cluster")
	transitions := flag.Int("transitions", 200, "state changes of the primary to measure")
	interval := flag.Duration("interval", 200*time.Millisecond, "scrape_interval of the record")
	keep := flag.Bool("keep", false, "keep the work directory (Corefiles, logs)")
	flag.Parse()
	if err := run(*bin, *instances, *transitions, *interval, *keep); err != nil {
		log.Fatal(err)
	}
}

func run(bin string, instances, transitions int, interval time.Duration, keep bool) error {
	work, err := os.MkdirTemp("", "meridian-cluster-bench-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(work)
	} else {
		log.Printf("work directory: %s", work)
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}()

	redisAddr, p, err := startRedis(work)
	if err != nil {
		return err
	}
	procs = append(procs, p)

	primary, err := watch.NewToggle("127.0.0.1")
	if err != nil {
		return err
	}
	secondary, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		return err
	}
	go watch.AcceptAndClose(secondary)
	zone := filepath.Join(work, "bench.test.yml")
	if err := os.WriteFile(zone, fmt.Appendf(nil, `records:
  app.bench.test.:
    mode: failover
    scrape_interval: %s
    scrape_timeout: %s
    scrape_retries: 0
    backends:
      - {address: 127.0.0.1, priority: 1, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
      - {address: 127.0.0.2, priority: 2, rise: 1, fall: 1, healthchecks: [{type: tcp, params: {port: %d}}]}
`, interval, interval/2, primary.Port, secondary.Addr().(*net.TCPAddr).Port), 0o644); err != nil {
		return err
	}

	var watchers []*watcher
	for i := range instances {
		dnsPort, metricsPort := watch.FreePort(), watch.FreePort()
		corefile := filepath.Join(work, fmt.Sprintf("Corefile.%d", i))
		if err := os.WriteFile(corefile, fmt.Appendf(nil, `bench.test:%d {
    bind 127.0.0.1
    prometheus 127.0.0.1:%d
    gslb {
        zone bench.test. %s
        max_stagger_start 0
        redis_enable
        redis_addr %s
    }
}
`, dnsPort, metricsPort, zone, redisAddr), 0o644); err != nil {
			return err
		}
		cmd := exec.Command(bin, "-conf", corefile)
		logFile, err := os.Create(filepath.Join(work, fmt.Sprintf("meridian.%d.log", i)))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start %s: %w", bin, err)
		}
		procs = append(procs, cmd)
		w := &watcher{Watcher: watch.NewWatcher(net.JoinHostPort("127.0.0.1", strconv.Itoa(dnsPort)), "app.bench.test."), metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)}
		if err := w.WaitFor("127.0.0.1", 15*time.Second); err != nil {
			return fmt.Errorf("instance %d: %w", i, err)
		}
		watchers = append(watchers, w)
	}
	before := make([]histogram, len(watchers))
	for i, w := range watchers {
		if before[i], err = w.histogram(); err != nil {
			return err
		}
	}
	for _, w := range watchers {
		go w.Watch()
	}

	var spreads []time.Duration
	want := "127.0.0.1"
	for range transitions {
		up := want == "127.0.0.2"
		if up {
			want = "127.0.0.1"
		} else {
			want = "127.0.0.2"
		}
		mark := time.Now()
		if err := primary.Set(up); err != nil {
			return err
		}
		var first, last time.Time
		for _, w := range watchers {
			at, err := w.ChangedTo(want, mark, 10*interval+5*time.Second)
			if err != nil {
				return err
			}
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
		spreads = append(spreads, last.Sub(first))
	}

	var delays histogram
	for i, w := range watchers {
		after, err := w.histogram()
		if err != nil {
			return err
		}
		delays = delays.add(after.sub(before[i]))
	}
	slices.Sort(spreads)
	pct := func(p float64) time.Duration { return watch.Percentile(spreads, p) }
	ms := watch.Ms
	fmt.Printf("| instances | transitions | interval | p50 | p90 | p99 | max | metric p50 | metric p99 | results applied by message |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %d |\n", instances, len(spreads), interval,
		ms(pct(0.50)), ms(pct(0.90)), ms(pct(0.99)), ms(spreads[len(spreads)-1]),
		delays.quantile(0.5), delays.quantile(0.99), int(delays.count))
	return nil
}

// watcher is an instance's watcher with the address of its metrics.
type watcher struct {
	*watch.Watcher
	metrics string
}

// histogram is a Prometheus histogram's cumulative buckets (upper bound in seconds -> count).
type histogram struct {
	bounds []float64
	counts []float64
	count  float64
}

const delayMetric = "coredns_gslb_cluster_propagation_delay_seconds"

func (w *watcher) histogram() (histogram, error) {
	resp, err := http.Get(w.metrics)
	if err != nil {
		return histogram{}, err
	}
	defer resp.Body.Close()
	var h histogram
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, delayMetric+"_bucket{le=\""):
			rest := strings.TrimPrefix(line, delayMetric+"_bucket{le=\"")
			le, value, _ := strings.Cut(rest, "\"} ")
			bound, _ := strconv.ParseFloat(le, 64)
			n, _ := strconv.ParseFloat(value, 64)
			h.bounds, h.counts = append(h.bounds, bound), append(h.counts, n)
		case strings.HasPrefix(line, delayMetric+"_count "):
			h.count, _ = strconv.ParseFloat(strings.TrimPrefix(line, delayMetric+"_count "), 64)
		}
	}
	return h, sc.Err()
}

func (h histogram) sub(o histogram) histogram {
	out := histogram{bounds: h.bounds, counts: slices.Clone(h.counts), count: h.count - o.count}
	for i := range out.counts {
		if i < len(o.counts) {
			out.counts[i] -= o.counts[i]
		}
	}
	return out
}

func (h histogram) add(o histogram) histogram {
	if h.bounds == nil {
		return o
	}
	out := histogram{bounds: h.bounds, counts: slices.Clone(h.counts), count: h.count + o.count}
	for i := range out.counts {
		out.counts[i] += o.counts[i]
	}
	return out
}

// quantile returns the upper bound of the bucket that holds quantile q.
func (h histogram) quantile(q float64) string {
	for i, n := range h.counts {
		if n >= q*h.count {
			return fmt.Sprintf("<= %g ms", h.bounds[i]*1000)
		}
	}
	return "n/a"
}

// startRedis starts a private redis-server and returns its address.
func startRedis(dir string) (string, *exec.Cmd, error) {
	port := watch.FreePort()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server (Debian package redis-server): %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, cmd, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", cmd, fmt.Errorf("redis-server does not listen on %s", addr)
}
