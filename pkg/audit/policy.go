package audit

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Attributes describe a request to a Policy.
type Attributes struct {
	// User is who sent the request; nil is nobody known (no user or group
	// rule matches).
	User *UserInfo
	// ResourceRequest is set for requests for API resources; Path is used
	// otherwise.
	ResourceRequest bool
	// Verb is the Kubernetes verb of a resource request, or the lower-case
	// HTTP method of any other.
	Verb                                  string
	APIGroup, Resource, Subresource, Name string
	Namespace                             string
	Path                                  string
}

// RequestConfig is what a Policy decides for one request.
type RequestConfig struct {
	Level Level
	// OmitStages are the stages not recorded.
	OmitStages []Stage
	// OmitManagedFields drops metadata.managedFields from recorded bodies.
	OmitManagedFields bool
}

// Omits reports whether stage is not recorded.
func (c RequestConfig) Omits(stage Stage) bool { return slices.Contains(c.OmitStages, stage) }

// LoadPolicy reads and validates a Policy file (YAML or JSON).
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit policy: %w", err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy decodes and validates an audit.k8s.io/v1 Policy (YAML or
// JSON). Unknown fields are errors, so that a misspelt rule does not
// silently match everything.
func ParsePolicy(data []byte) (*Policy, error) {
	var p Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if p.APIVersion != APIVersion || p.Kind != "Policy" {
		return nil, fmt.Errorf("apiVersion %q kind %q: want %s Policy", p.APIVersion, p.Kind, APIVersion)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks the levels, stages and URL patterns of p.
func (p *Policy) Validate() error {
	if err := validStages(p.OmitStages); err != nil {
		return fmt.Errorf("omitStages: %w", err)
	}
	for i, r := range p.Rules {
		if r.Level.ordinal() < 0 {
			return fmt.Errorf("rules[%d].level: unknown level %q", i, r.Level)
		}
		if err := validStages(r.OmitStages); err != nil {
			return fmt.Errorf("rules[%d].omitStages: %w", i, err)
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			return fmt.Errorf("rules[%d]: nonResourceURLs cannot be combined with resources or namespaces", i)
		}
		for _, u := range r.NonResourceURLs {
			if !strings.HasPrefix(u, "/") && u != "*" {
				return fmt.Errorf("rules[%d].nonResourceURLs: %q must begin with /", i, u)
			}
			if j := strings.Index(u, "*"); j >= 0 && j != len(u)-1 {
				return fmt.Errorf("rules[%d].nonResourceURLs: %q may hold * only at its end", i, u)
			}
		}
		for j, gr := range r.Resources {
			for _, res := range gr.Resources {
				if len(gr.ResourceNames) > 0 && strings.Contains(res, "*") {
					return fmt.Errorf("rules[%d].resources[%d]: resourceNames cannot be combined with the wildcard %q", i, j, res)
				}
			}
		}
	}
	return nil
}

func validStages(stages []Stage) error {
	for _, s := range stages {
		switch s {
		case StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic:
		default:
			return fmt.Errorf("unknown stage %q", s)
		}
	}
	return nil
}

// Evaluate returns what p decides for a request: its first matching
// rule's level and stages, LevelNone when no rule matches. The level of a
// request whose body may hold credentials is capped at Metadata.
func (p *Policy) Evaluate(a Attributes) RequestConfig {
	for i := range p.Rules {
		r := &p.Rules[i]
		if !r.matches(a) {
			continue
		}
		c := RequestConfig{Level: r.Level, OmitManagedFields: p.OmitManagedFields}
		c.OmitStages = append(slices.Clip(p.OmitStages), r.OmitStages...)
		if r.OmitManagedFields != nil {
			c.OmitManagedFields = *r.OmitManagedFields
		}
		if LevelMetadata.Less(c.Level) && carriesCredentials(a) {
			c.Level = LevelMetadata
		}
		return c
	}
	return RequestConfig{Level: LevelNone}
}

// carriesCredentials tells the requests whose bodies (asked or answered)
// may hold secrets: Secrets, TokenReviews and ServiceAccount token
// requests. Their bodies are never recorded, whatever the policy says.
func carriesCredentials(a Attributes) bool {
	if !a.ResourceRequest {
		return false
	}
	switch {
	case a.APIGroup == "" && a.Resource == "secrets":
		return true
	case a.APIGroup == "" && a.Resource == "serviceaccounts" && a.Subresource == "token":
		return true
	case a.APIGroup == "authentication.k8s.io" && a.Resource == "tokenreviews":
		return true
	}
	return false
}

func (r *PolicyRule) matches(a Attributes) bool {
	if len(r.Users) > 0 && (a.User == nil || !slices.Contains(r.Users, a.User.Username)) {
		return false
	}
	if len(r.UserGroups) > 0 {
		if a.User == nil || !slices.ContainsFunc(a.User.Groups, func(g string) bool { return slices.Contains(r.UserGroups, g) }) {
			return false
		}
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, a.Verb) {
		return false
	}
	if len(r.Resources) > 0 || len(r.Namespaces) > 0 {
		return r.matchesResource(a)
	}
	if len(r.NonResourceURLs) > 0 {
		return !a.ResourceRequest && slices.ContainsFunc(r.NonResourceURLs, func(u string) bool { return pathMatches(a.Path, u) })
	}
	return true
}

func (r *PolicyRule) matchesResource(a Attributes) bool {
	if !a.ResourceRequest {
		return false
	}
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, a.Namespace) {
		return false
	}
	if len(r.Resources) == 0 {
		return true
	}
	full := a.Resource
	if a.Subresource != "" {
		full += "/" + a.Subresource
	}
	for _, gr := range r.Resources {
		if gr.Group != a.APIGroup {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, a.Name) {
			continue
		}
		for _, res := range gr.Resources {
			switch {
			case res == "*" || res == full:
				return true
			case a.Subresource != "" && strings.HasPrefix(res, "*/") && res[2:] == a.Subresource:
				return true
			case strings.HasSuffix(res, "/*") && strings.TrimSuffix(res, "/*") == a.Resource:
				return true
			}
		}
	}
	return false
}

// pathMatches matches a path against a nonResourceURLs entry.
func pathMatches(path, pattern string) bool {
	if pattern == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(path, prefix)
	}
	return path == pattern
}
