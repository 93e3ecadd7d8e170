package webhook

import (
	"cmp"
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// WebhookName is the webhook's name inside its configuration.
const WebhookName = "placement.archfilter.io"

// OptOutLabel on a namespace, set to OptOutValue, keeps its pods ungated.
const (
	OptOutLabel = "archfilter.io/placement"
	OptOutValue = "disabled"
)

// Registration says how the apiserver reaches the webhook.
type Registration struct {
	// Name of the MutatingWebhookConfiguration the component owns.
	Name string
	// WarningsName names the ValidatingWebhookConfiguration of the workload
	// warnings (package warnings): applied with Name's when Warnings is true,
	// deleted when it is false (a leftover of an earlier run), deleted with
	// Name's. Empty: no such configuration.
	WarningsName string
	Warnings     bool
	// URL ("https://127.0.0.1:9443") is used when set; otherwise Service.
	URL     string
	Service *admissionregistrationv1.ServiceReference
	// ExcludedNamespaces are left out by the namespace selector.
	ExcludedNamespaces sets.Set[string]
	// NamespaceSelector is ArchFilterArgs.namespaceSelector, ANDed into the
	// webhook's: the apiserver does not call the webhook for pods of other
	// namespaces (the handler checks again). Nil selects every namespace.
	NamespaceSelector *metav1.LabelSelector
	// TimeoutSeconds is how long the apiserver waits for an answer before it
	// creates the pod ungated (failurePolicy Ignore); 0 means DefaultTimeoutSeconds.
	TimeoutSeconds int32
}

// DefaultTimeoutSeconds is the webhook's timeout when none is given.
const DefaultTimeoutSeconds = 5

// Configuration is the MutatingWebhookConfiguration for r with caBundle.
func (r Registration) Configuration(caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: caBundle}
	if r.URL != "" {
		cc.URL = ptr.To(r.URL + Path)
	} else if r.Service != nil {
		svc := *r.Service
		svc.Path = ptr.To(Path)
		cc.Service = &svc
	}
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	scope := admissionregistrationv1.NamespacedScope
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{"app.kubernetes.io/managed-by": "archfilter-placement"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         WebhookName,
			ClientConfig: cc,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope},
			}},
			// A webhook that is down never blocks a pod: it is created ungated.
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			NamespaceSelector:       r.namespaceSelector(),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(cmp.Or(r.TimeoutSeconds, DefaultTimeoutSeconds)),
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		}},
	}
}

// namespaceSelector leaves out the excluded namespaces and those opted out with
// OptOutLabel, and keeps only those NamespaceSelector selects.
func (r Registration) namespaceSelector() *metav1.LabelSelector {
	sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: sets.List(r.ExcludedNamespaces)},
		{Key: OptOutLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{OptOutValue}},
	}}
	if r.NamespaceSelector != nil {
		sel.MatchLabels = r.NamespaceSelector.MatchLabels
		sel.MatchExpressions = append(sel.MatchExpressions, r.NamespaceSelector.MatchExpressions...)
	}
	return sel
}

// Apply creates or updates the configuration with caBundle.
func (r Registration) Apply(ctx context.Context, client kubernetes.Interface, caBundle []byte) error {
	want := r.Configuration(caBundle)
	api := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := api.Get(ctx, r.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		got.Labels = want.Labels
		got.Webhooks = want.Webhooks
		_, err = api.Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("MutatingWebhookConfiguration %s: %w", r.Name, err)
	}
	switch {
	case r.WarningsName == "":
		return nil
	case r.Warnings:
		return r.applyWarnings(ctx, client, caBundle)
	}
	return r.deleteWarnings(ctx, client)
}

// Delete removes the configuration; a missing one is not an error.
func (r Registration) Delete(ctx context.Context, client kubernetes.Interface) error {
	err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, r.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting MutatingWebhookConfiguration %s: %w", r.Name, err)
	}
	if r.WarningsName != "" {
		return r.deleteWarnings(ctx, client)
	}
	return nil
}
