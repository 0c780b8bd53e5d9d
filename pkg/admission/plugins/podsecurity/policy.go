package podsecurity

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Level is a Pod Security Standards level.
type Level string

// The levels, from the most to the least permissive.
const (
	Privileged Level = "privileged"
	Baseline   Level = "baseline"
	Restricted Level = "restricted"
)

// rank orders the levels: privileged < baseline < restricted.
func (l Level) rank() int {
	switch l {
	case Privileged:
		return 0
	case Baseline:
		return 1
	}
	return 2
}

// The namespace labels that choose the policy.
const (
	labelPrefix         = "pod-security.kubernetes.io/"
	EnforceLevelLabel   = labelPrefix + "enforce"
	EnforceVersionLabel = labelPrefix + "enforce-version"
	AuditLevelLabel     = labelPrefix + "audit"
	AuditVersionLabel   = labelPrefix + "audit-version"
	WarnLevelLabel      = labelPrefix + "warn"
	WarnVersionLabel    = labelPrefix + "warn-version"
)

// The audit annotations the plugin records, under labelPrefix.
const (
	EnforcePolicyAnnotation   = labelPrefix + "enforce-policy"
	AuditViolationsAnnotation = labelPrefix + "audit-violations"
	ErrorAnnotation           = labelPrefix + "error"
)

// latestMinor is the newest version of the checks: "latest", and any
// later version, evaluate as this one (v1.<latestMinor>).
const latestMinor = 37

// version is v1.<minor>, or latest.
type version struct {
	minor  int
	latest bool
}

func (v version) String() string {
	if v.latest {
		return "latest"
	}
	return "v1." + strconv.Itoa(v.minor)
}

// effective is the minor version whose checks apply.
func (v version) effective() int {
	if v.latest || v.minor > latestMinor {
		return latestMinor
	}
	return v.minor
}

// levelVersion is a level at a version, as "restricted:latest".
type levelVersion struct {
	level   Level
	version version
}

func (lv levelVersion) String() string { return string(lv.level) + ":" + lv.version.String() }

// policy is what a namespace's labels choose for each mode.
type policy struct {
	enforce, audit, warn levelVersion
}

func (p policy) fullyPrivileged() bool {
	return p.enforce.level == Privileged && p.audit.level == Privileged && p.warn.level == Privileged
}

var versionPattern = regexp.MustCompile(`^v1\.(0|[1-9][0-9]*)$`)

func parseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case Privileged, Baseline, Restricted:
		return l, nil
	}
	return Restricted, fmt.Errorf("must be one of privileged, baseline, restricted")
}

func parseVersion(s string) (version, error) {
	if s == "latest" {
		return version{latest: true}, nil
	}
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		return version{latest: true}, fmt.Errorf(`must be "latest" or "v1.x"`)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return version{latest: true}, fmt.Errorf(`must be "latest" or "v1.x"`)
	}
	return version{minor: n}, nil
}

// policyOf reads a namespace's labels as Kubernetes does: every mode is
// privileged:latest unless labelled; an invalid enforce level enforces
// restricted (it fails closed), an invalid audit or warn level is
// privileged (they fail open), an invalid version is latest; warn
// follows an enforce level stricter than it unless warn is labelled. The
// errors are those of the invalid labels, in label order.
func policyOf(labels map[string]string) (policy, field.ErrorList) {
	latest := version{latest: true}
	p := policy{
		enforce: levelVersion{Privileged, latest},
		audit:   levelVersion{Privileged, latest},
		warn:    levelVersion{Privileged, latest},
	}
	var errs field.ErrorList
	path := field.NewPath("metadata", "labels")
	bad := func(label, value string, err error) {
		if err != nil {
			errs = append(errs, field.Invalid(path.Key(label), value, err.Error()))
		}
	}
	var err error
	hasEnforce := false
	if v, ok := labels[EnforceLevelLabel]; ok {
		p.enforce.level, err = parseLevel(v)
		hasEnforce = err == nil
		bad(EnforceLevelLabel, v, err)
	}
	if v, ok := labels[EnforceVersionLabel]; ok {
		p.enforce.version, err = parseVersion(v)
		bad(EnforceVersionLabel, v, err)
	}
	if v, ok := labels[AuditLevelLabel]; ok {
		if p.audit.level, err = parseLevel(v); err != nil {
			p.audit.level = Privileged
		}
		bad(AuditLevelLabel, v, err)
	}
	if v, ok := labels[AuditVersionLabel]; ok {
		p.audit.version, err = parseVersion(v)
		bad(AuditVersionLabel, v, err)
	}
	_, hasWarn := labels[WarnLevelLabel]
	if v, ok := labels[WarnLevelLabel]; ok {
		if p.warn.level, err = parseLevel(v); err != nil {
			p.warn.level = Privileged
		}
		bad(WarnLevelLabel, v, err)
	}
	_, hasWarnVersion := labels[WarnVersionLabel]
	if v, ok := labels[WarnVersionLabel]; ok {
		p.warn.version, err = parseVersion(v)
		bad(WarnVersionLabel, v, err)
	}
	if !hasWarn && hasEnforce && p.enforce.level.rank() > p.warn.level.rank() {
		p.warn.level = p.enforce.level
		if !hasWarnVersion {
			p.warn.version = p.enforce.version
		}
	}
	return p, errs
}

// result is the outcome of evaluating a pod at a level: the reasons of
// the failed checks with their details, in check order.
type result struct {
	reasons, details []string
}

func (r result) allowed() bool { return len(r.reasons) == 0 }

// reason joins the reasons alone: "allowPrivilegeEscalation != false,
// unrestricted capabilities".
func (r result) reason() string { return strings.Join(r.reasons, ", ") }

// detail joins each reason with its detail in parentheses.
func (r result) detail() string {
	var b strings.Builder
	for i, reason := range r.reasons {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(reason)
		if r.details[i] != "" {
			b.WriteString(" (" + r.details[i] + ")")
		}
	}
	return b.String()
}
