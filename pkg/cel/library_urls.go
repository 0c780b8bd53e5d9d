package cel

import (
	"net/url"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// urlsLib: url(s) parses an absolute URI or an absolute path (as an HTTP
// request URI); isURL(s) reports whether it would; getScheme, getHost,
// getHostname, getPort, getEscapedPath and getQuery read its parts.
var urlsLib = &library{name: "kubernetes.urls", funcs: []cel.EnvOption{
	cel.Function("url", cel.Overload("string_to_url", []*cel.Type{cel.StringType}, URLType, cel.UnaryBinding(stringToURL))),
	cel.Function("isURL", cel.Overload("is_url_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(isURL))),
	urlPart("getScheme", "url_get_scheme", func(u *url.URL) string { return u.Scheme }),
	urlPart("getHost", "url_get_host", func(u *url.URL) string { return u.Host }),
	urlPart("getHostname", "url_get_hostname", (*url.URL).Hostname),
	urlPart("getPort", "url_get_port", (*url.URL).Port),
	urlPart("getEscapedPath", "url_get_escaped_path", (*url.URL).EscapedPath),
	cel.Function("getQuery", cel.MemberOverload("url_get_query", []*cel.Type{URLType},
		cel.MapType(cel.StringType, cel.ListType(cel.StringType)), cel.UnaryBinding(urlQuery))),
}}

func urlPart(name, overload string, part func(*url.URL) string) cel.EnvOption {
	return cel.Function(name, cel.MemberOverload(overload, []*cel.Type{URLType}, cel.StringType,
		cel.UnaryBinding(func(v ref.Val) ref.Val {
			u, ok := v.Value().(*url.URL)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return types.String(part(u))
		})))
}

func stringToURL(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	// ParseRequestURI rejects relative references; Parse keeps the fragment.
	if _, err := url.ParseRequestURI(s); err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	u, err := url.Parse(s)
	if err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	return URL{URL: u}
}

func isURL(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	_, err := url.ParseRequestURI(s)
	return types.Bool(err == nil)
}

func urlQuery(v ref.Val) ref.Val {
	u, ok := v.Value().(*url.URL)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	m := map[ref.Val]ref.Val{}
	for k, vs := range u.Query() {
		m[types.String(k)] = types.NewStringList(types.DefaultTypeAdapter, vs)
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, m)
}
