package etcd

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
)

// parseRV reads a resourceVersion; "" and "0" are 0.
func parseRV(key, s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, storage.NewError(storage.ErrCodeInvalidObj, key, 0, fmt.Sprintf("invalid resource version %q", s))
	}
	return v, nil
}

// setRV sets obj's metadata.resourceVersion.
func setRV(obj runtime.Object, rv int64) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if rv == 0 {
		m.SetResourceVersion("")
	} else {
		m.SetResourceVersion(strconv.FormatInt(rv, 10))
	}
	return nil
}

// continueToken is the state a list page hands the next: the revision the
// first page read at, and the key (relative to the listed prefix) to start at.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueTokenVersion = "meta.k8s.io/v1"

func encodeContinue(rv int64, start string) (string, error) {
	b, err := json.Marshal(continueToken{APIVersion: continueTokenVersion, ResourceVersion: rv, StartKey: start})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func decodeContinue(key, token string) (rv int64, start string, err error) {
	bad := func(why string) error {
		return storage.NewError(storage.ErrCodeInvalidContinue, key, 0, why)
	}
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", bad("continue token is not base64")
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil {
		return 0, "", bad("continue token is not valid json")
	}
	if t.APIVersion != continueTokenVersion {
		return 0, "", bad(fmt.Sprintf("continue token version %q is not %q", t.APIVersion, continueTokenVersion))
	}
	if t.ResourceVersion <= 0 {
		return 0, "", bad("continue token has no resource version")
	}
	if strings.Contains(t.StartKey, "..") || strings.HasPrefix(t.StartKey, "/") {
		return 0, "", bad("continue token has an invalid start key")
	}
	return t.ResourceVersion, t.StartKey, nil
}

// everything reports whether p selects every object.
func everything(p storage.Predicate) bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// matches reports whether obj passes p's label and field selectors.
func matches(p storage.Predicate, obj runtime.Object) (bool, error) {
	if everything(p) {
		return true, nil
	}
	var ls labels.Set
	var fs fields.Set
	if p.GetAttrs != nil {
		var err error
		if ls, fs, err = p.GetAttrs(obj); err != nil {
			return false, err
		}
	} else {
		m, err := meta.Accessor(obj)
		if err != nil {
			return false, err
		}
		ls = m.GetLabels()
		fs = fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
	}
	if p.Label != nil && !p.Label.Matches(ls) {
		return false, nil
	}
	if p.Field != nil && !p.Field.Matches(fs) {
		return false, nil
	}
	return true, nil
}

// checkKey rejects keys that are not absolute paths of clean segments.
func checkKey(key string) error {
	if key == "" || key[0] != '/' || key == "/" {
		return fmt.Errorf("etcd storage: invalid key %q: must be a path such as /pods/default/nginx", key)
	}
	for seg := range strings.SplitSeq(key[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("etcd storage: invalid key %q: empty, . or .. segment", key)
		}
	}
	return nil
}
