// Package houserules holds the rules of the house as tests, so that they cannot drift from
// what docs/architecture.md says: the dependency table of that document, read from it, against
// every package's imports; internal packages that know nothing of CoreDNS; and the package
// variables that are allowed (Prometheus collectors, pools, read-only tables, and a short list
// of process-wide state, each with its reason). It has no code of its own.
package houserules
