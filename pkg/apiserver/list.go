package apiserver

import (
	"net/http"
)

// serveList handles GET of a collection.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, q *request) {
	f, err := s.negotiate(r, q.res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	opts, err := parseListOptions(r, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list := q.res.strategy.NewList()
	if err := q.res.store.GetList(r.Context(), q.res.prefix(q.namespace), opts.storage, list); err != nil {
		s.writeErrorFor(w, r, err, q.gr(), "")
		return
	}
	q.res.setListKind(list)
	s.writeObject(w, r, http.StatusOK, f, list)
}
