package apiserver

import (
	"net/http"
	"runtime"
)

func goVersion() string  { return runtime.Version() }
func goCompiler() string { return runtime.Compiler }
func goPlatform() string { return runtime.GOOS + "/" + runtime.GOARCH }

// serveVersion answers /version.
func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.writeError(w, r, methodNotAllowed(r))
		return
	}
	writeJSON(w, http.StatusOK, s.cfg.Version)
}
