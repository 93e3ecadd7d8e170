package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ArchFilterPolicy is a namespace team's rules for its own pods: the platforms
// they prefer and may run on, what happens when their images' platforms cannot
// be learned, or that archfilter leaves them alone. A pod's own annotations win
// over a policy, and a policy wins over the cluster's ArchFilterArgs, within
// what ArchFilterArgs.policies lets a policy override.
//
// When several policies select a pod, one governs it: a policy with a
// non-empty podSelector before one that selects every pod, then the policy
// whose name sorts first. The others report it in their Overlapping condition.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=afp,categories=archfilter
// +kubebuilder:printcolumn:name="Allowed",type=string,JSONPath=`.spec.allowedPlatforms`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Pods",type=integer,JSONPath=`.status.selectedPods`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ArchFilterPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ArchFilterPolicySpec `json:"spec"`
	// +optional
	Status ArchFilterPolicyStatus `json:"status,omitempty"`
}

// ArchFilterPolicySpec is what a team asks for its pods. Every field is
// optional; an unset field leaves the cluster's setting in force.
type ArchFilterPolicySpec struct {
	// PodSelector selects the pods of the namespace the policy applies to.
	// Unset or empty selects every pod of the namespace.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, !format.qualifiedName().validate(k).hasValue())",message="matchLabels keys must be qualified names (an optional DNS-subdomain prefix and '/', then at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit)",fieldPath=".matchLabels",reason=FieldValueInvalid
	PodSelector *LabelSelector `json:"podSelector,omitempty"`

	// PreferredPlatforms add weight, when scoring nodes, to nodes of a
	// platform, e.g. to prefer cheaper arm64 nodes for the team's images that
	// run on both. They replace ArchFilterArgs.preferredPlatforms for the pods
	// selected; a pod's archfilter.io/preferred-platforms annotation replaces
	// them in turn.
	// +optional
	// +listType=map
	// +listMapKey=platform
	// +kubebuilder:validation:MaxItems=16
	PreferredPlatforms []PlatformPreference `json:"preferredPlatforms,omitempty"`

	// AllowedPlatforms ("os/arch[/variant]") are the only platforms the
	// selected pods are placed on, intersected with the platforms their images
	// run on (or declare with archfilter.io/platforms). A pod whose images run
	// on none of them is rejected with a message naming this policy. Unset
	// allows every platform.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?$`
	// +kubebuilder:validation:items:MaxLength=128
	AllowedPlatforms []string `json:"allowedPlatforms,omitempty"`

	// FailurePolicy replaces ArchFilterArgs.failurePolicy for the selected
	// pods: Ignore places a pod whose images' platforms cannot be learned
	// without a constraint (or on the fallbackPlatforms), Fail keeps it Pending
	// and retries.
	// +optional
	// +kubebuilder:validation:Enum=Ignore;Fail
	FailurePolicy *FailurePolicy `json:"failurePolicy,omitempty"`

	// OptOut, when true, makes archfilter leave the selected pods alone, as the
	// archfilter.io/skip annotation does; a pod annotated
	// archfilter.io/skip: "false" is still constrained.
	// +optional
	OptOut bool `json:"optOut,omitempty"`
}

// LabelSelector is metav1.LabelSelector with the validation the API server
// does not apply to a selector inside a custom resource: a valid operator,
// values only where the operator takes them, and valid keys and values.
type LabelSelector struct {
	// MatchLabels selects pods whose label of each key has the value.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`
	// MatchExpressions select pods by set-based requirements, all of which
	// must hold.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement of a LabelSelector.
//
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) : !has(self.values) || size(self.values) == 0",message="operators In and NotIn need values; Exists and DoesNotExist take none",fieldPath=".values",reason=FieldValueInvalid
type LabelSelectorRequirement struct {
	// Key is the label key the requirement applies to.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="must be a qualified name (an optional DNS-subdomain prefix and '/', then at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit)",reason=FieldValueInvalid
	Key string `json:"key"`
	// Operator is In, NotIn, Exists or DoesNotExist.
	// +required
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator string `json:"operator"`
	// Values are the label values for In and NotIn; empty for Exists and
	// DoesNotExist.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Values []LabelValue `json:"values,omitempty"`
}

// LabelValue is a label's value: at most 63 characters of letters, digits,
// '-', '_' and '.', starting and ending with a letter or digit, or empty.
//
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// PlatformPreference adds Weight to nodes of Platform when scoring.
type PlatformPreference struct {
	// Platform is "os/arch[/variant]", e.g. linux/arm64.
	// +required
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?$`
	// +kubebuilder:validation:MaxLength=128
	Platform string `json:"platform"`
	// Weight is from 1 to 100, as for ArchFilterArgs.preferredPlatforms.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`
}

// FailurePolicy is Ignore or Fail.
type FailurePolicy string

const (
	// FailurePolicyIgnore places a pod whose images' platforms cannot be
	// learned without a constraint, or on the fallbackPlatforms.
	FailurePolicyIgnore FailurePolicy = "Ignore"
	// FailurePolicyFail keeps such a pod Pending and retries.
	FailurePolicyFail FailurePolicy = "Fail"
)

// ArchFilterPolicyStatus is what archfilter made of the policy.
type ArchFilterPolicyStatus struct {
	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SelectedPods is how many of the namespace's pods the policy selects,
	// whether or not it governs them.
	// +optional
	SelectedPods int32 `json:"selectedPods"`
	// GovernedPods is how many of them it governs (no other policy wins).
	// +optional
	GovernedPods int32 `json:"governedPods"`
	// Conditions: Accepted (the policy is in force, or why not), Overlapping
	// (another policy governs some pods this one selects), Overstepping (it
	// sets fields ArchFilterArgs.policies does not let a policy override, which
	// are ignored) and Effective (warnings: a platform no node has, a selector
	// that matches no pod). Each carries the observedGeneration it describes.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of an ArchFilterPolicy.
const (
	// ConditionAccepted is True when the policy is in force; False with reason
	// PoliciesDisabled, NamespaceExcluded, NamespaceNotSelected or Invalid.
	ConditionAccepted = "Accepted"
	// ConditionOverlapping is True when another policy governs some of the pods
	// this one selects (reason OtherPolicyWins).
	ConditionOverlapping = "Overlapping"
	// ConditionOverstepping is True when the policy sets fields the cluster's
	// ArchFilterArgs.policies.allowedOverrides leave out; they are ignored
	// (reason FieldsNotAllowed).
	ConditionOverstepping = "Overstepping"
	// ConditionEffective is False when the policy, though in force, changes
	// nothing or cannot be met: a selector that matches no pod
	// (NoPodsSelected), platforms no node has (NoNodeOfPlatform).
	ConditionEffective = "Effective"
)

// Reasons of the conditions.
const (
	ReasonInForce              = "InForce"
	ReasonPoliciesDisabled     = "PoliciesDisabled"
	ReasonNamespaceExcluded    = "NamespaceExcluded"
	ReasonNamespaceNotSelected = "NamespaceNotSelected"
	ReasonInvalid              = "Invalid"
	ReasonOtherPolicyWins      = "OtherPolicyWins"
	ReasonNoOverlap            = "NoOverlap"
	ReasonFieldsNotAllowed     = "FieldsNotAllowed"
	ReasonWithinLimits         = "WithinLimits"
	ReasonNoPodsSelected       = "NoPodsSelected"
	ReasonNoNodeOfPlatform     = "NoNodeOfPlatform"
	ReasonEffective            = "Effective"
)

// ArchFilterPolicyList is a list of ArchFilterPolicy.
//
// +kubebuilder:object:root=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ArchFilterPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ArchFilterPolicy `json:"items"`
}
