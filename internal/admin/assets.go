package admin

import (
	"embed"
	"io/fs"
	"net/http"
	"unicode/utf8"
)

// OpenAPI is the OpenAPI 3 document of the admin API, served at /api/v1/openapi.yaml and
// kept identical to docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

// ui holds the dashboard: plain HTML, CSS and JavaScript, with nothing loaded from elsewhere.
//
//go:embed ui
var ui embed.FS

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(OpenAPI)
}

// uiHandler serves the dashboard under /ui/. Its content security policy allows only the
// dashboard's own files, so that nothing it shows can run as script.
func uiHandler() http.Handler {
	files, err := fs.Sub(ui, "ui")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	fileServer := http.StripPrefix("/ui", http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		if !utf8.ValidString(r.URL.Path) {
			// No embedded file has such a name; the file server would call it an error (500).
			http.Error(w, "invalid path", http.StatusBadRequest)
			return
		}
		fileServer.ServeHTTP(w, r)
	})
}
