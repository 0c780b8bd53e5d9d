package apiserver

import (
	"net/http"

	"github.com/kplane/kplane/pkg/storage"
)

// serveGet handles GET of one object, its status or its scale.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, q *request) {
	f, err := s.negotiate(r, q.res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	obj := q.res.strategy.New()
	opts := storage.GetOptions{ResourceVersion: r.URL.Query().Get("resourceVersion")}
	if err := q.res.store.Get(r.Context(), q.res.key(q.namespace, q.name), opts, obj); err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	q.res.setKind(obj)
	if q.subresource == "scale" {
		scale, err := q.res.strategy.Scale(obj)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeObject(w, r, http.StatusOK, f, scale)
		return
	}
	s.writeObject(w, r, http.StatusOK, f, obj)
}
