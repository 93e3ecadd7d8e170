package archfilter

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// coschedulingLabel names a pod's group for sigs.k8s.io/scheduler-plugins'
// Coscheduling plugin (its PodGroupLabel).
const coschedulingLabel = "scheduling.x-k8s.io/pod-group"

// gangIndex indexes unscheduled pods by gangKey.
const gangIndex = "archfilter.io/gang"

// gangKey is "namespace/group" for a pod of a gang, or "": Kubernetes' gang
// scheduling (podGroupName, gang_group.go) or scheduler-plugins' Coscheduling
// label. A gang is scheduled all at once, in Permit, which waits a bounded time
// for its members: so ArchFilter holds a member whose images are known while
// another member's still resolve, and releases them together, rather than let
// the first ones wait in Permit (holding their nodes) for one held at PreEnqueue.
func gangKey(pod *v1.Pod) string {
	group := podGroupName(pod)
	if group == "" {
		group = pod.Labels[coschedulingLabel]
	}
	if group == "" {
		return ""
	}
	return pod.Namespace + "/" + group
}

// gangs finds a gang's other unscheduled members, from the pod informer.
type gangs struct {
	indexer cache.Indexer
}

// indexGangs adds the gang index to the pod informer, which must not have
// started; the ArchFilter of another profile, sharing the informer, may have
// added it already.
func indexGangs(informer cache.SharedIndexInformer) (*gangs, error) {
	if _, ok := informer.GetIndexer().GetIndexers()[gangIndex]; ok {
		return &gangs{indexer: informer.GetIndexer()}, nil
	}
	err := informer.AddIndexers(cache.Indexers{gangIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName != "" {
			return nil, nil
		}
		if key := gangKey(pod); key != "" {
			return []string{key}, nil
		}
		return nil, nil
	}})
	if err != nil {
		return nil, err
	}
	return &gangs{indexer: informer.GetIndexer()}, nil
}

// members are the unscheduled pods of key other than uid (nil without an index).
func (g *gangs) members(key string, pod *v1.Pod) []*v1.Pod {
	if g == nil || key == "" {
		return nil
	}
	objs, err := g.indexer.ByIndex(gangIndex, key)
	if err != nil {
		return nil
	}
	out := make([]*v1.Pod, 0, len(objs))
	for _, obj := range objs {
		if p, ok := obj.(*v1.Pod); ok && p.UID != pod.UID {
			out = append(out, p)
		}
	}
	return out
}
