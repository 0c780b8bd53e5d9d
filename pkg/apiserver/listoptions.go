package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/storage"
)

// listOptions are the parsed query parameters of a list or watch.
type listOptions struct {
	storage             storage.ListOptions
	allowWatchBookmarks bool
	timeoutSeconds      *int64
}

// parseListOptions reads and validates the list and watch parameters,
// following kube-apiserver's ListOptions validation.
func parseListOptions(r *http.Request, q *request) (*listOptions, error) {
	v := r.URL.Query()
	out := &listOptions{}
	invalid := func(errs field.ErrorList) error {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}

	label := labels.Everything()
	if s := v.Get("labelSelector"); s != "" {
		sel, err := labels.Parse(s)
		if err != nil {
			// kube-apiserver passes the parser's message on as it is.
			return nil, apierrors.NewBadRequest(err.Error())
		}
		label = sel
	}
	fieldSel := fields.Everything()
	if s := v.Get("fieldSelector"); s != "" {
		sel, err := fields.ParseSelector(s)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		for _, req := range sel.Requirements() {
			if !q.res.fieldLabels[req.Field] {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
		fieldSel = sel
	}
	if q.name != "" {
		// A watch of /watch/.../{name}: the name is a field selector.
		fieldSel = fields.AndSelectors(fieldSel, fields.OneTermEqualSelector("metadata.name", q.name))
	}
	pred := storage.Predicate{Label: label, Field: fieldSel, GetAttrs: q.res.strategy.GetAttrs}

	var errs field.ErrorList
	if s := v.Get("limit"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		// kube-apiserver pages only for a positive limit: a negative one
		// lists everything, as 0 does.
		pred.Limit = max(n, 0)
	}
	pred.Continue = v.Get("continue")
	rv := v.Get("resourceVersion")
	match := metav1.ResourceVersionMatch(v.Get("resourceVersionMatch"))
	isWatch := q.verb == "watch"
	var sendInitial *bool
	if b, ok := queryBool(v, "sendInitialEvents"); ok {
		sendInitial = &b
	}
	out.allowWatchBookmarks, _ = queryBool(v, "allowWatchBookmarks")
	if s := v.Get("timeoutSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		out.timeoutSeconds = &n
	}

	if pred.Continue != "" && rv != "" && rv != "0" {
		// kube-apiserver's storage refuses this with 400, not as invalid options.
		return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	if isWatch {
		if sendInitial != nil {
			if match != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), fmt.Sprintf("sendInitialEvents requires setting resourceVersionMatch to %s", metav1.ResourceVersionMatchNotOlderThan)))
			}
		} else if match != "" {
			errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		}
	} else {
		if sendInitial != nil {
			errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
		}
		switch match {
		case "":
		case metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan:
			if rv == "" {
				errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch is forbidden unless resourceVersion is provided"))
			}
			if pred.Continue != "" {
				errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch is forbidden when continue is provided"))
			}
			if match == metav1.ResourceVersionMatchExact && rv == "0" {
				errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""))
			}
		default:
			errs = append(errs, field.NotSupported(field.NewPath("resourceVersionMatch"), match, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan), ""}))
		}
	}
	if _, err := storage.ParseResourceVersion(rv); err != nil {
		return nil, toStatusError(err, q.gr(), "")
	}
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	out.storage = storage.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: match,
		Predicate:            pred,
		Recursive:            true,
		ProgressNotify:       out.allowWatchBookmarks,
		SendInitialEvents:    sendInitial,
	}
	return out, nil
}

// queryBool reads a boolean query parameter as kube-apiserver does: absent
// is (false, false); otherwise the first value is false when it is "0" or
// "false" in any case, and true when it is anything else, even empty.
func queryBool(v url.Values, name string) (value, ok bool) {
	vals, ok := v[name]
	if !ok || len(vals) == 0 {
		return false, false
	}
	switch strings.ToLower(vals[0]) {
	case "0", "false":
		return false, true
	}
	return true, true
}
