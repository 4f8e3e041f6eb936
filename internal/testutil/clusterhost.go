package testutil

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The host side of StartCluster: what a one-node cluster changes on the machine, and the sweep
// that undoes it, at the end of a run and at the start of the next one after a crash.

// The cluster's network, on a bridge of its own: the node's address (the kubelet, the API
// server, the bridge's gateway), the pods' subnet, the Services' cluster IPs, and the external
// addresses tests give LoadBalancer Services; the host routes all of 10.37.0.0/16 to the bridge.
const (
	clusterBridge      = "meridian-k8s0"
	clusterNodeIP      = "10.37.0.1"
	clusterPodCIDR     = "10.37.0.0/24"
	clusterServiceCIDR = "10.37.1.0/24"
	clusterRoutedCIDR  = "10.37.0.0/16"
	clusterExternalNet = "10.37.2."
	// clusterBridgeMAC is the bridge's MAC address, locally administered.
	clusterBridgeMAC = "02:37:00:00:00:01"
	// clusterNetwork is the CNI network's name.
	clusterNetwork = "meridian-test"
)

// clusterDir holds everything of the cluster: configuration, credentials, containerd's and the
// kubelet's state, the pods' logs. Its path is fixed, so that a later run finds what a crashed
// one left; it exists only while a cluster runs (or after a crash).
var clusterDir = filepath.Join(os.TempDir(), "meridian-test-cluster")

// clusterLockFile serialises the clusters of the machine's test processes.
var clusterLockFile = filepath.Join(os.TempDir(), "meridian-test-cluster.lock")

// clusterSysctls are the kernel settings the cluster changes, under /proc/sys: forwarding and
// the bridge's netfilter hooks (set by StartCluster), and those the kubelet sets to its liking
// (it would leave kernel.panic at 10 and kernel.panic_on_oops at 1) and kube-proxy may set.
// Their values are saved before the cluster starts and restored by the sweep.
var clusterSysctls = map[string]string{
	"net/ipv4/ip_forward":                                "1",
	"net/bridge/bridge-nf-call-iptables":                 "1",
	"net/bridge/bridge-nf-call-ip6tables":                "1",
	"vm/overcommit_memory":                               "",
	"vm/panic_on_oom":                                    "",
	"kernel/panic":                                       "",
	"kernel/panic_on_oops":                               "",
	"kernel/keys/root_maxkeys":                           "",
	"kernel/keys/root_maxbytes":                          "",
	"net/ipv4/conf/all/route_localnet":                   "",
	"net/netfilter/nf_conntrack_max":                     "",
	"net/netfilter/nf_conntrack_tcp_timeout_established": "",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait":  "",
}

// clusterHostDirs are the directories outside clusterDir that containerd, runc, the CNI
// plugins and the kubelet create whatever their configuration says: runc's state and the shims'
// sockets (/run/containerd), the pods' network namespaces, the CNI plugins' cache, the links to
// the containers' logs, and the kubelet's device plugin sockets. Those that did not exist
// before the cluster are removed by the sweep.
var clusterHostDirs = []string{"/run/containerd", "/run/netns", "/var/lib/cni", "/var/log/containers", "/var/lib/kubelet"}

// hostFile is where what the host had before the cluster is kept while it runs.
var hostFile = filepath.Join(clusterDir, "host.json")

// hostBefore is what the host had before the cluster: the values of clusterSysctls, and which
// of clusterHostDirs did not exist.
type hostBefore struct {
	Sysctls map[string]string `json:"sysctls"`
	Absent  []string          `json:"absent"`
}

// ownChain reports whether an iptables chain is one that Kubernetes (the kubelet, kube-proxy)
// or a CNI plugin (portmap) creates.
func ownChain(name string) bool {
	return strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "CNI-")
}

// iptablesTables are the tables the kubelet, kube-proxy and the CNI plugins write.
var iptablesTables = []string{"filter", "nat", "mangle"}

// prepareHost saves the host's kernel settings, sets those the cluster needs, and creates the
// bridge with the node's address and the route of the cluster's addresses.
func prepareHost() error {
	if err := os.MkdirAll(clusterDir, 0o755); err != nil {
		return err
	}
	before := hostBefore{Sysctls: map[string]string{}}
	for key := range clusterSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil {
			before.Sysctls[key] = strings.TrimSpace(string(v))
		}
	}
	for _, dir := range clusterHostDirs {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			before.Absent = append(before.Absent, dir)
		}
	}
	data, err := json.Marshal(before)
	if err != nil {
		return err
	}
	if err := os.WriteFile(hostFile, data, 0o600); err != nil {
		return err
	}
	for key, value := range clusterSysctls {
		if value != "" {
			if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644); err != nil {
				return fmt.Errorf("sysctl %s: %w", key, err)
			}
		}
	}
	for _, args := range [][]string{
		// A MAC address of its own: a bridge without one takes the lowest of its ports', and
		// changes it (flushing the host's neighbour entries of the pods) as pods come and go.
		{"link", "add", clusterBridge, "address", clusterBridgeMAC, "type", "bridge"},
		{"addr", "add", clusterNodeIP + "/24", "dev", clusterBridge},
		{"link", "set", clusterBridge, "up"},
		{"route", "add", clusterRoutedCIDR, "dev", clusterBridge, "src", clusterNodeIP},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// foreignCluster returns why the host seems to run a Kubernetes node or CNI network that is not
// the tests' (which the sweep would destroy), or "" when it does not. It is asked when no
// cluster of the tests ran or was left over (clusterDir does not exist).
func foreignCluster() string {
	if cgroups := kubepodsCgroups(); len(cgroups) > 0 {
		return "the kubepods cgroup of another kubelet exists: " + cgroups[0]
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			rules, _ := iptablesRules(bin, table)
			for _, r := range rules {
				if len(r) == 2 && r[0] == "-N" && ownChain(r[1]) {
					return fmt.Sprintf("%s's table %s has the chain %s, of another Kubernetes or CNI network", bin, table, r[1])
				}
			}
		}
	}
	return ""
}

// sweepCluster undoes everything a cluster of the tests did to the host, whether it stopped
// cleanly or not: it kills the processes that name clusterDir (containerd, its shims, the
// Kubernetes components) and those of the pods' cgroups, unmounts what is mounted under
// clusterDir and the pods' network namespaces, removes the iptables chains of Kubernetes and
// CNI, the bridge, the pods' cgroups and log links, restores the kernel settings and removes
// clusterDir. It returns what it found, one line each, and the errors it met.
func sweepCluster() ([]string, error) {
	var found []string
	var errs []error
	note := func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }
	pids := processesNaming(clusterDir)
	for _, pid := range pids {
		note("process %d: %s", pid, processCommand(pid))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(5 * time.Second); len(pids) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		pids = processesNaming(clusterDir) // a killed process (a zombie) has no command line
	}
	errs = append(errs, sweepCgroups(note))
	errs = append(errs, sweepMounts(note))
	netns, _ := filepath.Glob("/run/netns/cni-*")
	for _, ns := range netns {
		note("network namespace %s", ns)
		errs = append(errs, os.Remove(ns))
	}
	errs = append(errs, sweepIPTables(note))
	if _, err := os.Stat("/sys/class/net/" + clusterBridge); err == nil {
		note("bridge %s", clusterBridge)
		if out, err := exec.Command("ip", "link", "del", clusterBridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %v: %s", clusterBridge, err, out))
		}
	}
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, clusterDir+"/") {
			note("log link %s", l)
			errs = append(errs, os.Remove(l))
		}
	}
	sandboxes, _ := os.ReadDir(filepath.Join(clusterDir, "containerd", "root", "io.containerd.grpc.v1.cri", "sandboxes"))
	for _, sb := range sandboxes {
		results, _ := filepath.Glob("/var/lib/cni/results/*-" + sb.Name() + "-*")
		for _, r := range results {
			note("CNI result %s", r)
			errs = append(errs, os.Remove(r))
		}
	}
	errs = append(errs, restoreHost(note))
	if _, err := os.Stat(clusterDir); err == nil {
		errs = append(errs, os.RemoveAll(clusterDir))
	}
	return found, errors.Join(errs...)
}

// processesNaming returns the processes, but this one, whose command line mentions dir.
func processesNaming(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if strings.Contains(processCommand(pid), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processCommand returns a process's command line, its arguments separated by spaces.
func processCommand(pid int) string {
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
}

// cgroupMounts returns the mount points of the cgroup hierarchies (v1 and v2).
func cgroupMounts() []string {
	var out []string
	for _, m := range mountPoints() {
		if m.fsType == "cgroup" || m.fsType == "cgroup2" {
			out = append(out, m.path)
		}
	}
	return out
}

// kubepodsCgroups returns the kubelet's kubepods cgroup in every hierarchy that has one.
func kubepodsCgroups() []string {
	var out []string
	for _, root := range cgroupMounts() {
		if _, err := os.Stat(filepath.Join(root, "kubepods")); err == nil {
			out = append(out, filepath.Join(root, "kubepods"))
		}
	}
	return out
}

// sweepCgroups kills the processes of the kubepods cgroups (the pods' containers) and removes
// the cgroups, deepest first.
func sweepCgroups(note func(string, ...any)) error {
	cgroups := kubepodsCgroups()
	if len(cgroups) == 0 {
		return nil
	}
	var dirs []string
	for _, root := range cgroups {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	note("cgroups: %d under %s", len(dirs), strings.Join(cgroups, ", "))
	deadline := time.Now().Add(10 * time.Second)
	for {
		alive := 0
		for _, d := range dirs {
			procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			for _, f := range strings.Fields(string(procs)) {
				if pid, err := strconv.Atoi(f); err == nil {
					alive++
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if alive == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	var errs []error
	for _, d := range dirs {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// mount is a line of /proc/self/mountinfo: where, and the file system's type.
type mount struct{ path, fsType string }

// mountPoints returns the mounts of this process's mount namespace.
func mountPoints() []mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		out = append(out, mount{path: unescapeMount(fields[4]), fsType: fields[sep+1]})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sweepMounts unmounts (lazily) what is mounted under clusterDir and the network namespaces
// containerd mounts under /run/netns, deepest first, until none is left.
func sweepMounts(note func(string, ...any)) error {
	var last error
	for pass := 0; pass < 5; pass++ {
		var ours []string
		for _, m := range mountPoints() {
			if strings.HasPrefix(m.path, clusterDir+"/") || m.path == clusterDir || strings.HasPrefix(m.path, "/run/netns/cni-") {
				ours = append(ours, m.path)
			}
		}
		if len(ours) == 0 {
			return nil
		}
		if pass == 0 {
			note("mounts: %d, such as %s", len(ours), ours[0])
		}
		slices.SortFunc(ours, func(a, b string) int { return len(b) - len(a) })
		for _, p := range ours {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				last = fmt.Errorf("umount %s: %w", p, err)
			}
		}
	}
	return fmt.Errorf("mounts left under %s after five passes: %v", clusterDir, last)
}

// iptablesRules returns the rules of a table as `iptables -S` prints them, each split into its
// arguments ("-N CHAIN", "-A CHAIN ARGS...").
func iptablesRules(bin, table string) ([][]string, error) {
	out, err := exec.Command(bin, "-w", "-t", table, "-S").Output()
	if err != nil {
		return nil, fmt.Errorf("%s -t %s -S: %w", bin, table, err)
	}
	var rules [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if args := splitQuoted(line); len(args) >= 2 {
			rules = append(rules, args)
		}
	}
	return rules, nil
}

// splitQuoted splits a line into its arguments as iptables -S quotes them: by spaces, with
// double-quoted arguments (comments) kept whole and backslash escapes inside them undone.
func splitQuoted(line string) []string {
	var args []string
	var cur strings.Builder
	inQuote, started := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuote && c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '"':
			inQuote, started = !inQuote, true
		case c == ' ' && !inQuote:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(c)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}

// sweepIPTables removes, in both families and every table the cluster writes, the rules of the
// host's chains that jump to a chain of Kubernetes or CNI, and then those chains.
func sweepIPTables(note func(string, ...any)) error {
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			rules, err := iptablesRules(bin, table)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			var chains []string
			for _, r := range rules {
				switch {
				case r[0] == "-N" && ownChain(r[1]):
					chains = append(chains, r[1])
				case r[0] == "-A" && !ownChain(r[1]) && jumpsToOwn(r):
					args := append([]string{"-w", "-t", table, "-D"}, r[1:]...)
					if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
						errs = append(errs, fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, out))
					}
				}
			}
			if len(chains) > 0 {
				note("%s %s chains: %s", bin, table, strings.Join(chains, " "))
			}
			for _, op := range []string{"-F", "-X"} {
				for _, c := range chains {
					if out, err := exec.Command(bin, "-w", "-t", table, op, c).CombinedOutput(); err != nil {
						errs = append(errs, fmt.Errorf("%s -t %s %s %s: %v: %s", bin, table, op, c, err, out))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// jumpsToOwn reports whether a rule's target (-j or -g) is a chain of Kubernetes or CNI.
func jumpsToOwn(rule []string) bool {
	for i := 0; i+1 < len(rule); i++ {
		if (rule[i] == "-j" || rule[i] == "-g") && ownChain(rule[i+1]) {
			return true
		}
	}
	return false
}

// restoreHost writes back the kernel settings hostFile saved, and removes the directories of
// clusterHostDirs that did not exist before the cluster.
func restoreHost(note func(string, ...any)) error {
	data, err := os.ReadFile(hostFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var before hostBefore
	if err := json.Unmarshal(data, &before); err != nil {
		return fmt.Errorf("%s: %w", hostFile, err)
	}
	var errs []error
	for key, value := range before.Sysctls {
		path := filepath.Join("/proc/sys", key)
		if now, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(now)) != value {
			note("sysctl %s: %s, restored to %s", key, strings.TrimSpace(string(now)), value)
			errs = append(errs, os.WriteFile(path, []byte(value), 0o644))
		}
	}
	for _, dir := range before.Absent {
		if _, err := os.Stat(dir); err == nil {
			note("directory %s", dir)
			errs = append(errs, os.RemoveAll(dir))
		}
	}
	return errors.Join(errs...)
}
