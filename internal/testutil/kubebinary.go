package testutil

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// KubeVersion is the Kubernetes release whose kube-apiserver the tests run, built from the
// k8s.io/kubernetes module. Its staging modules (k8s.io/api, k8s.io/apiserver, ...) are
// published as v0.MINOR.PATCH of the same release: KubeStagingVersion.
const KubeVersion = "v1.37.2"

// KubeStagingVersion is the version the k8s.io/* staging modules of KubeVersion are published
// under.
const KubeStagingVersion = "v0.37.2"

// KubeAPIServerBinary returns the path of a kube-apiserver of KubeVersion: $MERIDIAN_KUBE_APISERVER
// when set, else the one cached under the user's cache directory, which it builds there first
// when it is missing (about fifteen minutes on two cores; `make testbins` does it before the
// tests). Builds of concurrent test processes wait for each other.
func KubeAPIServerBinary() (string, error) {
	if bin := os.Getenv("MERIDIAN_KUBE_APISERVER"); bin != "" {
		return bin, nil
	}
	return cachedBinary("kube-apiserver", KubeVersion, buildKubeAPIServer)
}

// stagingReplace matches a replacement of a staging module by its directory in the
// kubernetes repository's go.mod: "k8s.io/api => ./staging/src/k8s.io/api".
var stagingReplace = regexp.MustCompile(`(?m)^\s*(k8s\.io/\S+)\s+=>\s+\./staging/`)

// buildKubeAPIServer builds k8s.io/kubernetes/cmd/kube-apiserver into bin, in a module of its
// own under dir that requires the release. The release's go.mod requires its staging modules at
// v0.0.0 and replaces them by directories of its repository, which a module download does not
// hold and which do not apply to a dependency anyway: the build module replaces each of them,
// as listed in that go.mod, by its published KubeStagingVersion.
func buildKubeAPIServer(dir, bin string) error {
	src, err := goModuleDir(dir, map[string]string{"go.mod": "module meridian.test/kube-apiserver\n\ngo 1.26\n"})
	if err != nil {
		return err
	}
	out, err := runGo(src, nil, "mod", "download", "-json", "k8s.io/kubernetes@"+KubeVersion)
	if err != nil {
		return err
	}
	var mod struct{ GoMod string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return fmt.Errorf("go mod download k8s.io/kubernetes: %w", err)
	}
	kubeMod, err := os.ReadFile(mod.GoMod)
	if err != nil {
		return err
	}
	staging := stagingReplace.FindAllStringSubmatch(string(kubeMod), -1)
	if len(staging) == 0 {
		return fmt.Errorf("%s: no staging modules replaced", mod.GoMod)
	}
	var gomod strings.Builder
	fmt.Fprintf(&gomod, "module meridian.test/kube-apiserver\n\ngo 1.26\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", KubeVersion)
	for _, m := range staging {
		fmt.Fprintf(&gomod, "\t%s => %s %s\n", m[1], m[1], KubeStagingVersion)
	}
	gomod.WriteString(")\n")
	// The release's own build stamps its version in; /version says v0.0.0-master without it.
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubeVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	const v = "k8s.io/component-base/version."
	ldflags := fmt.Sprintf("-s -w -X %sgitVersion=%s -X %sgitMajor=%s -X %sgitMinor=%s -X %sgitTreeState=clean",
		v, KubeVersion, v, major, v, minor, v)
	return buildGoMain(dir, bin, "k8s.io/kubernetes/cmd/kube-apiserver", gomod.String(), nil, "-trimpath", "-ldflags="+ldflags)
}
