package testutil

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// KubeVersion is the Kubernetes release whose programs the tests run, built from the
// k8s.io/kubernetes module. Its staging modules (k8s.io/api, k8s.io/apiserver, ...) are
// published as v0.MINOR.PATCH of the same release: KubeStagingVersion.
const KubeVersion = "v1.37.2"

// KubeStagingVersion is the version the k8s.io/* staging modules of KubeVersion are published
// under.
const KubeStagingVersion = "v0.37.2"

// KubeAPIServerBinary returns the path of a kube-apiserver of KubeVersion: $MERIDIAN_KUBE_APISERVER
// when set, else KubeBinaries' (about fifteen minutes on two cores the first time; `make
// testbins` does it before the tests).
func KubeAPIServerBinary() (string, error) {
	if bin := os.Getenv("MERIDIAN_KUBE_APISERVER"); bin != "" {
		return bin, nil
	}
	bins, err := KubeBinaries("kube-apiserver")
	return bins["kube-apiserver"], err
}

// KubeComponents are the programs of KubeVersion that KubeBinaries builds: the main packages
// k8s.io/kubernetes/cmd/NAME. StartCluster runs all of them.
var KubeComponents = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"}

// KubeBinaries returns the paths, by name, of the programs names (of KubeComponents), cached
// under the user's cache directory in meridian-test/kubernetes-KubeVersion, building the missing
// ones there first. They are built together, from one module and one build cache that stays in
// that directory (about 5 GB): the programs share most of their packages, which the first build
// compiles (about fifteen minutes on two cores) and each later one reuses (kube-apiserver alone
// is what `make test` needs; the other components add about seven minutes for `make test-k8s`).
// Builds of concurrent test processes wait for each other.
func KubeBinaries(names ...string) (map[string]string, error) {
	for _, name := range names {
		if !slices.Contains(KubeComponents, name) {
			return nil, fmt.Errorf("%s is not one of the Kubernetes components %v", name, KubeComponents)
		}
	}
	return cachedBinaries("kubernetes-"+KubeVersion, names, buildKube)
}

// stagingReplace matches a replacement of a staging module by its directory in the
// kubernetes repository's go.mod: "k8s.io/api => ./staging/src/k8s.io/api".
var stagingReplace = regexp.MustCompile(`(?m)^\s*(k8s\.io/\S+)\s+=>\s+\./staging/`)

// buildKube builds the components names into the directory out, in a module of its own under
// dir that requires the release, with a build cache under dir that it keeps. The release's
// go.mod requires its staging modules at v0.0.0 and replaces them by directories of its
// repository, which a module download does not hold and which do not apply to a dependency
// anyway: the build module replaces each of them, as listed in that go.mod, by its published
// KubeStagingVersion. The programs are static (CGO_ENABLED=0), as the release's are.
func buildKube(dir string, names []string, out string) error {
	src, err := goModuleDir(dir, map[string]string{"go.mod": "module meridian.test/kubernetes\n\ngo 1.26\n"})
	if err != nil {
		return err
	}
	mod, err := runGo(src, nil, "mod", "download", "-json", "k8s.io/kubernetes@"+KubeVersion)
	if err != nil {
		return err
	}
	var download struct{ GoMod string }
	if err := json.Unmarshal(mod, &download); err != nil {
		return fmt.Errorf("go mod download k8s.io/kubernetes: %w", err)
	}
	kubeMod, err := os.ReadFile(download.GoMod)
	if err != nil {
		return err
	}
	staging := stagingReplace.FindAllStringSubmatch(string(kubeMod), -1)
	if len(staging) == 0 {
		return fmt.Errorf("%s: no staging modules replaced", download.GoMod)
	}
	var gomod, tools strings.Builder
	fmt.Fprintf(&gomod, "module meridian.test/kubernetes\n\ngo 1.26\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", KubeVersion)
	for _, m := range staging {
		fmt.Fprintf(&gomod, "\t%s => %s %s\n", m[1], m[1], KubeStagingVersion)
	}
	gomod.WriteString(")\n")
	// Every component is imported, so that the module's requirements are the same whichever
	// are built.
	tools.WriteString("//go:build tools\n\npackage tools\n\nimport (\n")
	for _, name := range KubeComponents {
		fmt.Fprintf(&tools, "\t_ \"k8s.io/kubernetes/cmd/%s\"\n", name)
	}
	tools.WriteString(")\n")
	if src, err = goModuleDir(dir, map[string]string{"go.mod": gomod.String(), "tools.go": tools.String()}); err != nil {
		return err
	}
	// The release's own build stamps its version in; /version says v0.0.0-master without it.
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubeVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	const v = "k8s.io/component-base/version."
	ldflags := fmt.Sprintf("-s -w -X %sgitVersion=%s -X %sgitMajor=%s -X %sgitMinor=%s -X %sgitTreeState=clean",
		v, KubeVersion, v, major, v, minor, v)
	args := []string{"build", "-trimpath", "-ldflags=" + ldflags, "-o", out + string(filepath.Separator)}
	for _, name := range names {
		args = append(args, "k8s.io/kubernetes/cmd/"+name)
	}
	_, err = runGo(src, []string{"CGO_ENABLED=0", "GOCACHE=" + filepath.Join(dir, "gocache")}, args...)
	return err
}
