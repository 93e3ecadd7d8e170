package webhook

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/archfilter/archfilter/internal/placement/warnings"
)

// WarningsWebhookName is the workload warnings webhook's name inside its
// configuration.
const WarningsWebhookName = "warnings.archfilter.io"

// WarningsConfiguration is the ValidatingWebhookConfiguration of the workload
// warnings (package warnings) for r with caBundle: creates and updates of the
// workload kinds, in the namespaces the pod webhook serves, never denied
// (the handler only warns) and never waited on past the timeout.
func (r Registration) WarningsConfiguration(caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: caBundle}
	if r.URL != "" {
		cc.URL = ptr.To(r.URL + warnings.Path)
	} else if r.Service != nil {
		svc := *r.Service
		svc.Path = ptr.To(warnings.Path)
		cc.Service = &svc
	}
	scope := admissionregistrationv1.NamespacedScope
	var rules []admissionregistrationv1.RuleWithOperations
	groups := make([]string, 0, len(warnings.Kinds))
	for g := range warnings.Kinds {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	for _, g := range groups {
		rules = append(rules, admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{g}, APIVersions: []string{"v1"}, Resources: warnings.Kinds[g], Scope: &scope},
		})
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: r.WarningsName, Labels: map[string]string{"app.kubernetes.io/managed-by": "archfilter-placement"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    WarningsWebhookName,
			ClientConfig:            cc,
			Rules:                   rules,
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       r.namespaceSelector(),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(cmp.Or(r.TimeoutSeconds, DefaultTimeoutSeconds)),
		}},
	}
}

// applyWarnings creates or updates the warnings configuration.
func (r Registration) applyWarnings(ctx context.Context, client kubernetes.Interface, caBundle []byte) error {
	want := r.WarningsConfiguration(caBundle)
	api := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := api.Get(ctx, r.WarningsName, metav1.GetOptions{})
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
		return fmt.Errorf("ValidatingWebhookConfiguration %s: %w", r.WarningsName, err)
	}
	return nil
}

// deleteWarnings removes the warnings configuration; a missing one is not an error.
func (r Registration) deleteWarnings(ctx context.Context, client kubernetes.Interface) error {
	err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, r.WarningsName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ValidatingWebhookConfiguration %s: %w", r.WarningsName, err)
	}
	return nil
}
