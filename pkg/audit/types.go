package audit

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// APIVersion is the apiVersion of Policies and Events.
const APIVersion = "audit.k8s.io/v1"

// Level is how much of a request is recorded.
type Level string

// The levels, in increasing detail.
const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

// ordinal ranks the levels; unknown levels rank below None.
func (l Level) ordinal() int {
	switch l {
	case LevelNone:
		return 0
	case LevelMetadata:
		return 1
	case LevelRequest:
		return 2
	case LevelRequestResponse:
		return 3
	}
	return -1
}

// Less reports whether l records less than other.
func (l Level) Less(other Level) bool { return l.ordinal() < other.ordinal() }

// Stage is a point of a request's handling at which an Event is written.
type Stage string

// The stages.
const (
	// StageRequestReceived is as soon as the request is received.
	StageRequestReceived Stage = "RequestReceived"
	// StageResponseStarted is once the response headers are sent, for
	// long-running requests (watches) only.
	StageResponseStarted Stage = "ResponseStarted"
	// StageResponseComplete is once the response is sent.
	StageResponseComplete Stage = "ResponseComplete"
	// StagePanic is when the handler panicked.
	StagePanic Stage = "Panic"
)

// Policy is the audit.k8s.io/v1 Policy: the rules deciding each
// request's Level.
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Rules are tried in order; the first that matches decides. A request
	// no rule matches is not recorded.
	Rules []PolicyRule `json:"rules"`
	// OmitStages are left out of every request's events.
	OmitStages []Stage `json:"omitStages,omitempty"`
	// OmitManagedFields drops metadata.managedFields from recorded bodies
	// unless a rule says otherwise.
	OmitManagedFields bool `json:"omitManagedFields,omitempty"`
}

// PolicyRule matches requests; every field set must match.
type PolicyRule struct {
	// Level is what matching requests record.
	Level Level `json:"level"`
	// Users are user names; empty matches every user.
	Users []string `json:"users,omitempty"`
	// UserGroups match a user in any of them; empty matches every user.
	UserGroups []string `json:"userGroups,omitempty"`
	// Verbs are Kubernetes verbs (get, list, watch, create, ...) or, for
	// non-resource requests, lower-case HTTP methods; empty matches all.
	Verbs []string `json:"verbs,omitempty"`
	// Resources match resource requests only; empty matches all of them.
	Resources []GroupResources `json:"resources,omitempty"`
	// Namespaces match resource requests in them ("" is cluster-scoped);
	// empty matches all.
	Namespaces []string `json:"namespaces,omitempty"`
	// NonResourceURLs match non-resource requests by path, exactly or, for
	// an entry ending in "*", by prefix.
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
	// OmitStages are left out of matching requests' events, besides the
	// policy's.
	OmitStages []Stage `json:"omitStages,omitempty"`
	// OmitManagedFields, when set, overrides the policy's.
	OmitManagedFields *bool `json:"omitManagedFields,omitempty"`
}

// GroupResources names resources of one API group.
type GroupResources struct {
	// Group is the API group; "" is the core group.
	Group string `json:"group,omitempty"`
	// Resources are resource names: "pods", "pods/log" (a subresource),
	// "pods/*" (a resource and its subresources), "*/scale" (a subresource
	// of any resource) or "*". Empty matches every resource of Group.
	Resources []string `json:"resources,omitempty"`
	// ResourceNames, when set, restricts the match to objects of these names.
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// Event is one audit.k8s.io/v1 Event: a request at one Stage.
type Event struct {
	metav1.TypeMeta `json:",inline"`
	Level           Level     `json:"level"`
	AuditID         types.UID `json:"auditID"`
	Stage           Stage     `json:"stage"`
	RequestURI      string    `json:"requestURI"`
	Verb            string    `json:"verb"`
	User            UserInfo  `json:"user"`
	// ImpersonatedUser is who the user acted as, if anyone.
	ImpersonatedUser *UserInfo       `json:"impersonatedUser,omitempty"`
	SourceIPs        []string        `json:"sourceIPs,omitempty"`
	UserAgent        string          `json:"userAgent,omitempty"`
	ObjectRef        *ObjectRef      `json:"objectRef,omitempty"`
	ResponseStatus   *metav1.Status  `json:"responseStatus,omitempty"`
	RequestObject    json.RawMessage `json:"requestObject,omitempty"`
	ResponseObject   json.RawMessage `json:"responseObject,omitempty"`
	// RequestReceivedTimestamp and StageTimestamp have microseconds.
	RequestReceivedTimestamp metav1.MicroTime  `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime  `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// UserInfo is a user as events record it (authentication.k8s.io/v1 UserInfo).
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// ObjectRef names the object a request concerns.
type ObjectRef struct {
	Resource        string    `json:"resource,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	Name            string    `json:"name,omitempty"`
	UID             types.UID `json:"uid,omitempty"`
	APIGroup        string    `json:"apiGroup,omitempty"`
	APIVersion      string    `json:"apiVersion,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Subresource     string    `json:"subresource,omitempty"`
}
