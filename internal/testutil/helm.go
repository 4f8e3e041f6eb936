package testutil

import "os"

// HelmVersion is the release of Helm the tests render and lint the chart with, built from its
// Go module.
const HelmVersion = "v3.22.0"

// helmKubeMinor is the Kubernetes minor release HelmVersion renders and lints for by default,
// 1 + the minor of the k8s.io/client-go it requires (v0.37.0), as helm's Makefile sets it. A
// plain `go build` would leave helm's fallback, Kubernetes 1.20.
const helmKubeMinor = "37"

// helmLDFlags are the variables helm's release build sets: its version, and the Kubernetes
// release it renders and lints for.
const helmLDFlags = "-X helm.sh/helm/v3/internal/version.version=" + HelmVersion +
	" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=" + helmKubeMinor +
	" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=" + helmKubeMinor

// HelmBinary returns the path of a helm binary of HelmVersion: $MERIDIAN_HELM when set, else the
// one cached under the user's cache directory, which it builds there first when it is missing,
// from the module helm.sh/helm/v3 through the Go module proxy (a few minutes on two cores; `make
// testbins` does it before the tests start). Builds of concurrent test processes wait for each
// other.
func HelmBinary() (string, error) {
	if bin := os.Getenv("MERIDIAN_HELM"); bin != "" {
		return bin, nil
	}
	return cachedBinary("helm", HelmVersion, func(dir, bin string) error {
		gomod := "module meridian.test/helm\n\ngo 1.26\n\nrequire helm.sh/helm/v3 " + HelmVersion + "\n"
		return buildGoMain(dir, bin, "helm.sh/helm/v3/cmd/helm", gomod, nil, "-trimpath", "-ldflags", helmLDFlags)
	})
}
