package apiserver

import (
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
)

// serveDeleteCollection handles DELETE of a collection: every object the
// label and field selectors match is deleted as a single delete would, and
// the answer lists them in their last state.
func (s *Server) serveDeleteCollection(w http.ResponseWriter, r *http.Request, q *request) {
	f, err := s.negotiate(r, q.res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	listOpts, err := parseListOptions(r, q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	opts, err := s.parseDeleteOptions(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list := q.res.strategy.NewList()
	if err := q.res.store.GetList(r.Context(), q.res.prefix(q.namespace), listOpts.storage, list); err != nil {
		s.writeErrorFor(w, r, err, q.gr(), "")
		return
	}
	items, err := listItems(list)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var results []runtime.Object
	for _, item := range items {
		m := accessor(item)
		out, _, err := s.deleteAdmitted(r.Context(), q.res, m.GetNamespace(), m.GetName(), opts, w)
		if storage.IsNotFound(err) {
			continue
		}
		if err != nil {
			s.writeErrorFor(w, r, err, q.gr(), m.GetName())
			return
		}
		results = append(results, out)
	}
	if err := meta.SetList(list, results); err != nil {
		s.writeError(w, r, err)
		return
	}
	q.res.setListKind(list)
	s.writeObject(w, r, http.StatusOK, f, list)
}

// listItems returns the items of a typed list.
func listItems(list runtime.Object) ([]runtime.Object, error) {
	return meta.ExtractList(list)
}
