// Package docs holds Meridian's documentation, and embeds the pages that the binary prints from:
// `meridian help` renders the Corefile option tables of configuration.md, so that the help text,
// the man page and the documentation are one table.
package docs

import _ "embed"

// Configuration is configuration.md, the reference of the Corefile options and the YAML zone
// file. Its tables under "## Corefile" whose first column is "Option" are what `meridian help`
// prints.
//
//go:embed configuration.md
var Configuration string
