package deploy

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/meridian-gslb/meridian/internal/ociimage"
)

// TestImageMatchesDockerfile checks that `make image`, which writes the image without Docker,
// and the Dockerfile, which users with Docker build, stay equivalent: the Makefile's image
// target builds the binary with the Dockerfile's command (static, CGO_ENABLED=0) and hands it
// to the image writer, whose archive (written here by the same command) has the final stage's
// user, working directory, ports and entrypoint; every file the stage copies, with its owner;
// the binary's file capability as the build stage's setcap sets it; and what the distroless
// base gives (the CA bundle, the user's passwd entry, /tmp with the sticky bit).
func TestImageMatchesDockerfile(t *testing.T) {
	stages := dockerStages(t, "../Dockerfile")
	build, final := stages[0], stages[len(stages)-1]

	recipe := makeRecipeLines(t, "../Makefile", "image")
	if len(recipe) != 2 {
		t.Fatalf("the image target's commands: %q, want the build and the image writer", recipe)
	}
	goBuild, binary := withoutOutput(t, shellWords(t, recipe[0]))
	if len(goBuild) == 0 || goBuild[0] != "CGO_ENABLED=0" {
		t.Errorf("the image target builds with %q, want CGO_ENABLED=0 (the Dockerfile's ENV)", goBuild)
	}
	dockerBuild, _ := withoutOutput(t, shellWords(t, build.run(t, " build ")))
	if !slices.Contains(build.all("ENV"), "CGO_ENABLED=0") || !slices.Equal(goBuild[1:], dockerBuild) {
		t.Errorf("the image target's build %q, the Dockerfile's %q (ENV %q): want the same command, static", goBuild, dockerBuild, build.all("ENV"))
	}
	writer := shellWords(t, recipe[1])
	if i := slices.Index(writer, "-binary"); i < 0 || i+1 >= len(writer) || writer[i+1] != binary ||
		len(writer) < 3 || writer[1] != "run" || writer[2] != "./internal/ociimage/imagebuild" {
		t.Errorf("the image target's writer %q, want ./internal/ociimage/imagebuild -binary %s", writer, binary)
	}

	img := writeImage(t)
	cfg := img.Config
	var entrypoint []string
	if err := yaml.Unmarshal([]byte(final.last("ENTRYPOINT")), &entrypoint); err != nil {
		t.Fatal(err)
	}
	if cfg.User != final.last("USER") || cfg.WorkingDir != final.last("WORKDIR") || !slices.Equal(cfg.Entrypoint, entrypoint) ||
		!slices.Equal(cfg.ExposedPorts, slices.Sorted(slices.Values(strings.Fields(final.last("EXPOSE"))))) {
		t.Errorf("the image: user %q, workdir %q, entrypoint %q, ports %q; the Dockerfile: USER %s, WORKDIR %s, ENTRYPOINT %s, EXPOSE %s",
			cfg.User, cfg.WorkingDir, cfg.Entrypoint, cfg.ExposedPorts, final.last("USER"), final.last("WORKDIR"), final.last("ENTRYPOINT"), final.last("EXPOSE"))
	}
	files := map[string]ociimage.File{}
	for _, f := range img.Files {
		files[f.Path] = f
	}
	setcap := strings.Fields(build.run(t, "setcap "))
	capped := path.Join("/src", setcap[len(setcap)-1]) // the build stage's WORKDIR is /src
	for _, copied := range final.all("COPY") {
		words := strings.Fields(copied)
		src, dst := words[len(words)-2], words[len(words)-1]
		f, ok := files[dst]
		if !ok {
			t.Errorf("COPY %s: the image has no %s", copied, dst)
			continue
		}
		owner := "0:0" // COPY's default
		for _, w := range words {
			if o, ok := strings.CutPrefix(w, "--chown="); ok {
				owner = o
			}
		}
		if got := fmt.Sprintf("%d:%d", f.UID, f.GID); got != owner {
			t.Errorf("COPY %s: the image's %s is owned by %s", copied, dst, got)
		}
		if src == capped {
			if !slices.Contains(setcap, "cap_net_bind_service=+ep") || f.Xattrs["security.capability"] != ociimage.NetBindService() {
				t.Errorf("the image's %s has the capability %q, the build stage runs %q", dst, f.Xattrs["security.capability"], setcap)
			}
		}
	}
	if !strings.HasSuffix(final.last("FROM"), "distroless/static-debian12:nonroot") {
		t.Fatalf("the final stage is FROM %s: what the image writer copies of distroless needs a new look", final.last("FROM"))
	}
	uid, _, _ := strings.Cut(final.last("USER"), ":")
	if len(files[ociimage.CABundle].Data) == 0 || !strings.Contains(string(files["/etc/passwd"].Data), ":x:"+uid+":") ||
		files["/tmp"].Mode != fs.ModeDir|fs.ModeSticky|0o777 {
		t.Errorf("the image lacks what the distroless base has: the CA bundle (%d bytes), user %s in /etc/passwd (%q), /tmp 1777 (%s)",
			len(files[ociimage.CABundle].Data), uid, files["/etc/passwd"].Data, files["/tmp"].Mode)
	}
}

// all returns the arguments of the stage's op instructions, in order.
func (s stage) all(op string) []string {
	var out []string
	for _, in := range s {
		if in.op == op {
			out = append(out, in.args)
		}
	}
	return out
}

// run returns the stage's one RUN instruction that contains word, failing the test unless
// there is exactly one.
func (s stage) run(t *testing.T, word string) string {
	t.Helper()
	var found []string
	for _, in := range s.all("RUN") {
		if strings.Contains(in, word) {
			found = append(found, in)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the Dockerfile's stage has %d RUN instructions with %q, want one: %q", len(found), word, found)
	}
	return found[0]
}

// withoutOutput returns a go build command's words without its -o flag, and the -o value.
func withoutOutput(t *testing.T, words []string) ([]string, string) {
	t.Helper()
	i := slices.Index(words, "-o")
	if i < 0 || i+1 >= len(words) {
		t.Fatalf("%q has no -o", words)
	}
	return slices.Concat(words[:i], words[i+2:]), words[i+1]
}

// writeImage writes the image with the image target's writer, around a stand-in for the
// binary, and reads it back.
func writeImage(t *testing.T) ociimage.Image {
	t.Helper()
	dir := t.TempDir()
	bin, archive := filepath.Join(dir, "meridian"), filepath.Join(dir, "image.tar")
	if err := os.WriteFile(bin, []byte("a stand-in for the static meridian"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "./internal/ociimage/imagebuild", "-binary", bin, "-ref", "localhost/meridian:test", "-o", archive)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("imagebuild: %v\n%s", err, out)
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := ociimage.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if img.Ref != "localhost/meridian:test" {
		t.Errorf("the archive names the image %q", img.Ref)
	}
	return img
}
