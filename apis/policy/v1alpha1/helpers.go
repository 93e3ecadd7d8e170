package v1alpha1

// MatchingLabels returns a selector of the pods with all of labels.
func MatchingLabels(labels map[string]string) *LabelSelector {
	sel := &LabelSelector{MatchLabels: make(map[string]LabelValue, len(labels))}
	for k, v := range labels {
		sel.MatchLabels[k] = LabelValue(v)
	}
	return sel
}
