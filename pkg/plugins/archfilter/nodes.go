package archfilter

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// nodeListener is kept up to date with the cluster's nodes by watchNodes.
type nodeListener interface {
	// set is called with every node object the informer adds or updates.
	set(node *v1.Node)
	// remove is called with the name of every node the informer deletes.
	remove(name string)
}

// watchNodes feeds every listener from one handler of the node informer, so they
// see the same events in the same order.
func watchNodes(informer cache.SharedIndexInformer, listeners ...nodeListener) error {
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { setNode(obj, listeners) },
		UpdateFunc: func(_, obj any) { setNode(obj, listeners) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if node, ok := obj.(*v1.Node); ok {
				for _, l := range listeners {
					l.remove(node.Name)
				}
			}
		},
	})
	return err
}

func setNode(obj any, listeners []nodeListener) {
	if node, ok := obj.(*v1.Node); ok {
		for _, l := range listeners {
			l.set(node)
		}
	}
}
