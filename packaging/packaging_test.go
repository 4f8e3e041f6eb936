package packaging

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// nobody is the user that the installed binary runs as, standing in for the unit's DynamicUser.
const nobody = 65534

// capNetBindService is CAP_NET_BIND_SERVICE, the unit's only capability.
const capNetBindService = 10

// TestDebianPackage builds the Debian package with the Makefile (make deb-only, of the binary
// the tests share), installs it with dpkg into a scratch root that stands in for a Debian
// system, and checks what it installed: the files, the unit (systemd-analyze verify and
// security), `meridian check` of the default configuration, and the installed binary serving
// it, chrooted into the scratch root as an unprivileged user with the unit's capability, in a
// network namespace of its own, so that it listens where the configuration says (port 53 and
// 8053 of 127.0.0.1) without taking those of the machine.
func TestDebianPackage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: dpkg --root, chroot and a network namespace")
	}
	bin := testutil.Binary(t)
	root := scratchRoot(t, bin)
	install(t, root, buildDeb(t, bin))

	t.Run("files", func(t *testing.T) { checkFiles(t, root, bin) })
	t.Run("unit", func(t *testing.T) { verifyUnit(t, root) })
	t.Run("check", func(t *testing.T) {
		out, err := chrooted(root, "check", "-conf", "/etc/meridian/Corefile").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "/etc/meridian/Corefile: OK") {
			t.Fatalf("meridian check of the installed configuration: %v\n%s", err, out)
		}
	})
	t.Run("serves", func(t *testing.T) { serveInstalled(t, root) })
}

// buildDeb runs `make deb-only` on bin and returns the package it built.
func buildDeb(t *testing.T, bin string) string {
	t.Helper()
	dist := t.TempDir()
	out, err := exec.Command("make", "--no-print-directory", "-C", "..", "deb-only", "BIN="+bin, "DIST="+dist).CombinedOutput()
	if err != nil {
		t.Fatalf("make deb-only: %v\n%s", err, out)
	}
	debs, err := filepath.Glob(filepath.Join(dist, "meridian_*_*.deb"))
	if err != nil || len(debs) != 1 {
		t.Fatalf("make deb-only built %q, not one package (%v):\n%s", debs, err, out)
	}
	return debs[0]
}

// scratchRoot returns a directory laid out as a Debian 12 system for the package: /usr merged
// (bin, lib and lib64 are links into usr), an empty dpkg database but for the C library that the
// package depends on, that library's files (those of bin, found by ldd), and systemd's units and
// /bin/kill, which systemd-analyze verify looks for in the root.
func scratchRoot(t *testing.T, bin string) string {
	t.Helper()
	root := t.TempDir()
	for _, dir := range []string{"usr/bin", "usr/lib/systemd/system", "usr/lib64", "var/lib/dpkg/info", "var/lib/dpkg/updates", "var/log"} {
		mkdirAll(t, filepath.Join(root, dir))
	}
	for _, link := range []string{"bin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+link, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	libcVersion := mustRun(t, "dpkg-query", "-W", "-f=${Version}", "libc6")
	arch := strings.TrimSpace(mustRun(t, "dpkg", "--print-architecture"))
	status := fmt.Sprintf("Package: libc6\nStatus: install ok installed\nPriority: optional\nSection: libs\n"+
		"Maintainer: stand-in\nArchitecture: %s\nMulti-Arch: same\nVersion: %s\n"+
		"Description: the C library of the machine that runs the test\n", arch, libcVersion)
	writeFile(t, filepath.Join(root, "var/lib/dpkg/status"), status)
	writeFile(t, filepath.Join(root, "var/lib/dpkg/info/libc6:"+arch+".list"), "")
	for _, lib := range sharedLibraries(t, bin) {
		mkdirAll(t, filepath.Dir(filepath.Join(root, lib)))
		mustRun(t, "cp", "-L", lib, filepath.Join(root, lib))
	}
	kill, err := exec.LookPath("kill")
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, "cp", "-L", kill, filepath.Join(root, "usr/bin/kill"))
	mustRun(t, "cp", "-a", "/usr/lib/systemd/system/.", filepath.Join(root, "usr/lib/systemd/system"))
	return root
}

// sharedLibraries returns the paths of the shared libraries that bin loads (ldd), none for a
// static binary.
func sharedLibraries(t *testing.T, bin string) []string {
	t.Helper()
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if bytes.Contains(out, []byte("not a dynamic executable")) {
		return nil
	}
	if err != nil {
		t.Fatalf("ldd %s: %v\n%s", bin, err, out)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				libs = append(libs, f)
			}
		}
	}
	return libs
}

// install installs deb into root with dpkg, which checks its dependencies against root's
// database.
func install(t *testing.T, root, deb string) {
	t.Helper()
	out, err := exec.Command("dpkg", "--root="+root, "--log="+filepath.Join(root, "var/log/dpkg.log"), "-i", deb).CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	status := mustRun(t, "dpkg-query", "--admindir="+filepath.Join(root, "var/lib/dpkg"), "-W", "-f=${Status}", "meridian")
	if status != "install ok installed" {
		t.Fatalf("after dpkg -i, meridian is %q", status)
	}
}

// checkFiles checks that the package installed the binary, the unit, the configuration (as
// conffiles) and the man page of the binary's help.
func checkFiles(t *testing.T, root, bin string) {
	manPage, err := exec.Command(bin, "help", "-man").Output()
	if err != nil {
		t.Fatalf("%s help -man: %v", bin, err)
	}
	for _, f := range []struct {
		installed string
		want      func(t *testing.T) []byte
		mode      os.FileMode
	}{
		{"/usr/bin/meridian", readFile(bin), 0o755},
		{"/usr/lib/systemd/system/meridian.service", readFile("meridian.service"), 0o644},
		{"/etc/meridian/Corefile", readFile("etc/meridian/Corefile"), 0o644},
		{"/etc/meridian/example.test.yml", readFile("etc/meridian/example.test.yml"), 0o644},
		{"/usr/share/man/man8/meridian.8.gz", func(*testing.T) []byte { return manPage }, 0o644},
	} {
		path := filepath.Join(root, f.installed)
		info, err := os.Stat(path)
		if err != nil {
			t.Errorf("not installed: %v", err)
			continue
		}
		if info.Mode() != f.mode {
			t.Errorf("%s: mode %v, want %v", f.installed, info.Mode(), f.mode)
		}
		got := readFile(path)(t)
		if strings.HasSuffix(path, ".gz") {
			got = gunzip(t, got)
		}
		if sha256.Sum256(got) != sha256.Sum256(f.want(t)) {
			t.Errorf("%s is not what the package was built from", f.installed)
		}
	}
	conffiles := mustRun(t, "dpkg-query", "--admindir="+filepath.Join(root, "var/lib/dpkg"), "-W", "-f=${Conffiles}", "meridian")
	for _, c := range []string{"/etc/meridian/Corefile", "/etc/meridian/example.test.yml"} {
		if !strings.Contains(conffiles, c+" ") {
			t.Errorf("%s is not a conffile: %q", c, conffiles)
		}
	}
}

// verifyUnit runs systemd-analyze verify on the installed unit, which must find nothing to say
// (it warns and still succeeds on an unknown directive), with the man page of its
// Documentation= where man is installed; and systemd-analyze security, whose exposure must stay
// "OK" (at most 2.0 of 10).
func verifyUnit(t *testing.T, root string) {
	args := []string{"verify", "--root=" + root, "meridian.service"}
	if _, err := exec.LookPath("man"); err != nil {
		args = append(args, "--man=no")
	}
	cmd := exec.Command("systemd-analyze", args...)
	cmd.Env = append(os.Environ(), "MANPATH="+filepath.Join(root, "usr/share/man"))
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err := exec.Command("systemd-analyze", "security", "--offline=yes", "--root="+root, "--threshold=20", "meridian.service").CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.0 (%v):\n%s", err, out)
	}
}

// chrooted returns the command that runs the installed meridian with args, chrooted into root,
// as nobody, with an empty environment but PATH.
func chrooted(root string, args ...string) *exec.Cmd {
	cmd := exec.Command("/usr/bin/meridian", args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return cmd
}

// serveInstalled runs the installed binary on the installed configuration as the unit would (a
// user of its own, CAP_NET_BIND_SERVICE, the state directory its own) in a network namespace
// of its own, and checks that it answers the example zone on 127.0.0.1:53 and nothing else,
// takes an override through its admin API with `meridian ctl`, reloads on SIGUSR1, and keeps
// the overrides and the state file in the state directory.
func serveInstalled(t *testing.T, root string) {
	stateDir := filepath.Join(root, "var/lib/meridian")
	if err := os.Mkdir(stateDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(stateDir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	logs := logFile(filepath.Join(t.TempDir(), "meridian.log"))
	out, err := os.Create(string(logs))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := chrooted(root, "-conf", "/etc/meridian/Corefile", "-quiet")
	cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	cmd.SysProcAttr.AmbientCaps = []uintptr{capNetBindService}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("meridian did not stop within 10 s of SIGTERM:\n%s", logs)
		}
	}
	t.Cleanup(stop)
	pid := cmd.Process.Pid
	if err := loopbackUp(pid); err != nil {
		t.Fatal(err)
	}

	answers := func(name, want string) func() bool {
		return func() bool {
			r, err := query(pid, name, dns.TypeA)
			return err == nil && r.Rcode == dns.RcodeSuccess && r.Authoritative && len(r.Answer) == 1 &&
				r.Answer[0].(*dns.A).A.String() == want
		}
	}
	testutil.Eventually(t, 20*time.Second, answers("www.example.test.", "192.0.2.10"),
		"the installed meridian does not answer www.example.test with its first site:\n%s", logs)
	if r, err := query(pid, "www.example.com.", dns.TypeA); err != nil || r.Rcode != dns.RcodeRefused {
		t.Errorf("a name outside the example zone: %v, %v; want REFUSED", r, err)
	}

	ctl := exec.Command("nsenter", "--target", fmt.Sprint(pid), "--net", "--root", "--wd",
		fmt.Sprintf("--setuid=%d", nobody), fmt.Sprintf("--setgid=%d", nobody),
		"/usr/bin/meridian", "ctl", "drain", "-address-prefix", "192.0.2.10", "-reason", "package test")
	ctl.Env = []string{"CORE_DNS_COREFILE=/etc/meridian/Corefile"}
	if out, err := ctl.CombinedOutput(); err != nil {
		t.Fatalf("meridian ctl drain through the installed configuration's API: %v\n%s\nserver:\n%s", err, out, logs)
	}
	testutil.Eventually(t, 5*time.Second, answers("www.example.test.", "198.51.100.10"),
		"www.example.test is not answered with its second site after its first was drained:\n%s", logs)
	ownedByNobody(t, filepath.Join(stateDir, "overrides.json"))

	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Contains(logs.String(), "Reloading complete") },
		"SIGUSR1 did not reload:\n%s", logs)
	testutil.Eventually(t, 5*time.Second, answers("www.example.test.", "198.51.100.10"),
		"after the reload, www.example.test is not answered with its second site:\n%s", logs)

	stop()
	ownedByNobody(t, filepath.Join(stateDir, "state.json"))
}

// query asks name/qtype of 127.0.0.1:53 in the network namespace of process pid.
func query(pid int, name string, qtype uint16) (*dns.Msg, error) {
	var r *dns.Msg
	err := inNetns(pid, func() error {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		var err error
		r, _, err = (&dns.Client{Net: "udp", Timeout: time.Second}).Exchange(m, "127.0.0.1:53")
		return err
	})
	return r, err
}

// inNetns runs f on an OS thread in the network namespace of process pid, so that the sockets f
// opens are there. The thread stays locked to its goroutine and ends with it, never returning
// to the runtime in another namespace.
func inNetns(pid int, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns.Name(), err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// loopbackUp brings up the loopback interface in the network namespace of process pid: a new
// namespace has it down.
func loopbackUp(pid int) error {
	return inNetns(pid, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket: %w", err)
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq("lo")
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return fmt.Errorf("the flags of lo: %w", err)
		}
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("bringing lo up: %w", err)
		}
		return nil
	})
}

// ownedByNobody checks that path exists and belongs to nobody, the user meridian runs as.
func ownedByNobody(t *testing.T, path string) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Errorf("not written: %v", err)
		return
	}
	if st := info.Sys().(*syscall.Stat_t); st.Uid != nobody {
		t.Errorf("%s belongs to uid %d, not to the service's user %d", path, st.Uid, nobody)
	}
}

// logFile is the file a process logs to; its String is what it holds so far.
type logFile string

func (l logFile) String() string {
	b, err := os.ReadFile(string(l))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// mustRun runs a command and returns its standard output, failing the test when it fails.
func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// readFile returns a function that reads path, failing the test when it cannot.
func readFile(path string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// mkdirAll creates the directory path and its parents, failing the test when it cannot.
func mkdirAll(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes content to path, failing the test when it cannot.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gunzip returns the decompressed content of b, failing the test when it is not gzip.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDebianVersion(t *testing.T) {
	for _, tc := range []struct{ describe, want string }{
		{"v1.2.3", "1.2.3"},
		{"1.2.3", "1.2.3"},
		{"v1.2.3-rc1", "1.2.3~rc1"},
		{"v1.2.3-4-gabc1234", "1.2.3+4.gabc1234"},
		{"v1.2.3-4-gabc1234-dirty", "1.2.3+4.gabc1234.dirty"},
		{"v1.2.3-dirty", "1.2.3+dirty"},
		{"v1.2.3-rc1-2-gabc1234", "1.2.3~rc1+2.gabc1234"},
		{"abc1234", "0.0.0~gabc1234"},
		{"abc1234-dirty", "0.0.0~gabc1234+dirty"},
		{"dev", "0.0.0~dev"},
		{"v1.2.3_x", ""},
	} {
		out, err := exec.Command("./debversion.sh", tc.describe).Output()
		if got := strings.TrimSpace(string(out)); got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("debversion.sh %s = %q (%v), want %q", tc.describe, got, err, tc.want)
		}
	}
	// Debian orders them as the releases: a pre-release before its release, commits after it.
	order := []string{"0.0.0~gabc1234", "1.2.3~rc1", "1.2.3~rc1+2.gabc1234", "1.2.3", "1.2.3+4.gabc1234", "1.2.3+4.gabc1234.dirty", "1.2.4"}
	for i := 1; i < len(order); i++ {
		if err := exec.Command("dpkg", "--compare-versions", order[i-1], "lt", order[i]).Run(); err != nil {
			t.Errorf("dpkg does not order %s before %s", order[i-1], order[i])
		}
	}
}
