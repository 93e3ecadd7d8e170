package policystore

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
)

// Options tune Start.
type Options struct {
	// SyncTimeout bounds how long Start waits for the informer's first list.
	// Default: 30s.
	SyncTimeout time.Duration
	// Recheck is how often a store that cannot watch (CRD absent, access
	// forbidden) tries again: one LIST request. Default: 10s, so that a CRD
	// installed after archfilter started is honoured within seconds.
	Recheck time.Duration
}

// Start fills store from the cluster and keeps it in step until ctx ends. It
// returns once the store has synced (watching is true), or once it knows it
// cannot yet: the CRD is not installed or listing policies is forbidden. Then
// the store stays empty, its State says why, and Start's goroutine tries again
// every Options.Recheck, watching from the moment it can. Every outcome is
// logged with what to do about it.
func Start(ctx context.Context, client dynamic.Interface, store *Store, opts Options) (watching bool) {
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = 30 * time.Second
	}
	if opts.Recheck <= 0 {
		opts.Recheck = 10 * time.Second
	}
	logger := klog.FromContext(ctx).WithValues("resource", policyv1alpha1.SchemeGroupResource.String())
	if err := probe(ctx, client); err != nil {
		store.setState(State{Reason: err.Error()})
		logger.Info("Not watching ArchFilterPolicy objects: policies are not honoured until this is mended; retrying", "reason", err.Error(), "every", opts.Recheck)
		go func() {
			_ = wait.PollUntilContextCancel(ctx, opts.Recheck, false, func(ctx context.Context) (bool, error) {
				if err := probe(ctx, client); err != nil {
					store.setState(State{Reason: err.Error()})
					logger.V(2).Info("Still not watching ArchFilterPolicy objects", "reason", err.Error())
					return false, nil
				}
				inform(ctx, client, store, opts.SyncTimeout, logger)
				return true, nil
			})
		}()
		return false
	}
	return inform(ctx, client, store, opts.SyncTimeout, logger)
}

// probe lists one policy to learn whether the CRD is installed and listing
// is allowed.
func probe(ctx context.Context, client dynamic.Interface) error {
	_, err := client.Resource(policyv1alpha1.SchemeGroupVersionResource).List(ctx, metav1.ListOptions{Limit: 1})
	return explain(err)
}

// explain turns a list error into what to do about it.
func explain(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the CRD %s (%s) is not installed: install it (the chart and kustomize's base do)",
			policyv1alpha1.SchemeGroupResource, policyv1alpha1.SchemeGroupVersion)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("listing %s is forbidden: grant get, list and watch on it (the chart's and kustomize's RBAC do): %w",
			policyv1alpha1.SchemeGroupResource, err)
	}
	return fmt.Errorf("listing %s: %w", policyv1alpha1.SchemeGroupResource, err)
}

// inform runs an informer into store and waits up to timeout for its first list.
func inform(ctx context.Context, client dynamic.Interface, store *Store, timeout time.Duration, logger klog.Logger) bool {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	informer := factory.ForResource(policyv1alpha1.SchemeGroupVersionResource).Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(store, obj, logger) },
		UpdateFunc: func(_, obj any) { set(store, obj, logger) },
		DeleteFunc: func(obj any) {
			if p, err := FromObject(obj); err == nil {
				store.Delete(p.Namespace, p.Name)
			} else if key, kerr := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); kerr == nil {
				ns, name, _ := cache.SplitMetaNamespaceKey(key)
				store.Delete(ns, name)
			}
		},
	})
	if err != nil {
		store.setState(State{Reason: err.Error()})
		logger.Error(err, "Cannot watch ArchFilterPolicy objects")
		return false
	}
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		reason := fmt.Sprintf("the first list of %s did not finish within %s", policyv1alpha1.SchemeGroupResource, timeout)
		if errors.Is(ctx.Err(), context.Canceled) {
			reason = "stopped"
		}
		store.setState(State{Reason: reason})
		logger.Info("ArchFilterPolicy objects not synced yet: policies apply once they are", "reason", reason)
		go func() {
			if cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
				store.setState(State{Watching: true})
				logger.Info("Watching ArchFilterPolicy objects", "policies", store.Len())
			}
		}()
		return false
	}
	store.setState(State{Watching: true})
	logger.Info("Watching ArchFilterPolicy objects", "policies", store.Len())
	return true
}

func set(store *Store, obj any, logger klog.Logger) {
	p, err := FromObject(obj)
	if err != nil {
		logger.Error(err, "Ignoring an ArchFilterPolicy that does not convert")
		return
	}
	store.Set(p)
	if err := store.Invalid(p.Namespace, p.Name); err != nil {
		logger.Info("ArchFilterPolicy not applied: it does not parse", "policy", klog.KObj(p), "err", err.Error())
	}
}
