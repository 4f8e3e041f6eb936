package testutil

// HelmVersion is the release of Helm the tests render and lint the chart with, built from its
// Go module.
const HelmVersion = "v3.22.0"

// helm is the helm binary the tests run.
var helm = goModuleBinary{
	envVar:  "MERIDIAN_HELM",
	name:    "helm",
	module:  "helm.sh/helm/v3",
	version: HelmVersion,
	pkg:     "helm.sh/helm/v3/cmd/helm",
}

// HelmBinary returns the path of a helm binary of HelmVersion: $MERIDIAN_HELM when set, else the
// one cached under the user's cache directory, which it builds there first when it is missing,
// from the module helm.sh/helm/v3 through the Go module proxy (a few minutes on two cores; `make
// testbins` does it before the tests start). Builds of concurrent test processes wait for each
// other.
func HelmBinary() (string, error) {
	return helm.path()
}
