package manifests

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kubernetes/pkg/registry/rbac/validation"
	rbacauthorizer "k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// Request is one API request a scheduler makes (or must not be able to make).
type Request struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

func (r Request) String() string {
	res := r.Resource
	if r.Group != "" {
		res += "." + r.Group
	}
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	if r.Name != "" {
		res += " " + r.Name
	}
	if r.Namespace != "" {
		res += " in " + r.Namespace
	}
	return r.Verb + " " + res
}

// SchedulerRequests are the requests an archfilter-scheduler whose leader
// election uses lease makes: kube-scheduler's own (a sample) and ArchFilter's.
func SchedulerRequests(lease string) []Request {
	return []Request{
		// ArchFilter: the credential store's informers and the namespace lister.
		{Verb: "list", Resource: "secrets"}, {Verb: "watch", Resource: "secrets"},
		{Verb: "list", Resource: "serviceaccounts"}, {Verb: "watch", Resource: "serviceaccounts"},
		{Verb: "list", Resource: "namespaces"}, {Verb: "watch", Resource: "namespaces"},
		// The teams' ArchFilterPolicy objects: read, and their status written.
		{Verb: "list", Group: "archfilter.io", Resource: "archfilterpolicies"}, {Verb: "watch", Group: "archfilter.io", Resource: "archfilterpolicies"},
		{Verb: "update", Group: "archfilter.io", Resource: "archfilterpolicies", Subresource: "status", Namespace: "team", Name: "p"},
		// Events (ArchFilter's and the scheduler's), events.k8s.io and core.
		{Verb: "create", Group: "events.k8s.io", Resource: "events", Namespace: "default"},
		{Verb: "patch", Group: "events.k8s.io", Resource: "events", Namespace: "default"},
		{Verb: "create", Resource: "events", Namespace: "default"},
		{Verb: "patch", Resource: "events", Namespace: "default"},
		// Scheduling.
		{Verb: "list", Resource: "pods"}, {Verb: "watch", Resource: "nodes"},
		{Verb: "create", Resource: "pods", Subresource: "binding", Namespace: "default"},
		{Verb: "patch", Resource: "pods", Subresource: "status", Namespace: "default"},
		{Verb: "update", Resource: "persistentvolumeclaims", Namespace: "default"},
		{Verb: "list", Group: "storage.k8s.io", Resource: "storageclasses"},
		// Leader election.
		{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: Namespace},
		{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: Namespace, Name: lease},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: Namespace, Name: lease},
		// The secure port's delegated authentication and authorization.
		{Verb: "get", Resource: "configmaps", Namespace: Namespace, Name: "extension-apiserver-authentication"},
		{Verb: "watch", Resource: "configmaps", Namespace: Namespace, Name: "extension-apiserver-authentication"},
		{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	}
}

// ForbiddenRequests must be denied: nothing beyond reading pull secrets
// through list/watch, nothing written but what a scheduler writes.
func ForbiddenRequests() []Request {
	return []Request{
		{Verb: "get", Resource: "secrets", Namespace: "default", Name: "registry"},
		{Verb: "get", Resource: "secrets", Namespace: Namespace, Name: "bootstrap-token-abcdef"},
		{Verb: "create", Resource: "secrets", Namespace: "default"},
		{Verb: "update", Resource: "secrets", Namespace: "default", Name: "registry"},
		{Verb: "delete", Resource: "secrets", Namespace: "default", Name: "registry"},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: Namespace, Name: Name},
		{Verb: "update", Resource: "serviceaccounts", Namespace: Namespace, Name: Name},
		{Verb: "list", Resource: "configmaps", Namespace: Namespace},
		{Verb: "get", Resource: "configmaps", Namespace: Namespace, Name: "kubeadm-config"},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: Namespace, Name: "kube-controller-manager"},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "default", Name: Name},
		{Verb: "create", Resource: "pods", Namespace: "default"},
		{Verb: "update", Resource: "pods", Namespace: "default", Name: "app"},
		{Verb: "patch", Resource: "nodes", Name: "node-1"},
		{Verb: "delete", Resource: "nodes", Name: "node-1"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: Name},
		{Verb: "impersonate", Resource: "users", Name: "admin"},
		// A team's policy is the team's: archfilter writes its status only.
		{Verb: "create", Group: "archfilter.io", Resource: "archfilterpolicies", Namespace: "team"},
		{Verb: "update", Group: "archfilter.io", Resource: "archfilterpolicies", Namespace: "team", Name: "p"},
		{Verb: "delete", Group: "archfilter.io", Resource: "archfilterpolicies", Namespace: "team", Name: "p"},
	}
}

// ServiceAccountUser is the user the Deployment's pods authenticate as.
func ServiceAccountUser() user.Info {
	return &user.DefaultInfo{
		Name:   serviceaccount.MakeUsername(Namespace, Name),
		Groups: append(serviceaccount.MakeGroupNames(Namespace), user.AllAuthenticated),
	}
}

// KubeadmUser is the user kubeadm's kube-scheduler authenticates as.
func KubeadmUser() user.Info {
	return &user.DefaultInfo{Name: user.KubeScheduler, Groups: []string{user.AllAuthenticated}}
}

// Authorizer is the RBAC authorizer of a cluster holding the bootstrap policy
// of this Kubernetes version plus the RBAC objects among objs.
func Authorizer(objs []k8sruntime.Object) authorizer.Authorizer {
	var (
		roles        []*rbacv1.Role
		roleBindings []*rbacv1.RoleBinding
		clusterRoles []*rbacv1.ClusterRole
		bindings     []*rbacv1.ClusterRoleBinding
	)
	for ns, rs := range bootstrappolicy.NamespaceRoles() {
		for i := range rs {
			r := rs[i].DeepCopy()
			r.Namespace = ns
			roles = append(roles, r)
		}
	}
	for ns, bs := range bootstrappolicy.NamespaceRoleBindings() {
		for i := range bs {
			b := bs[i].DeepCopy()
			b.Namespace = ns
			roleBindings = append(roleBindings, b)
		}
	}
	for _, r := range bootstrappolicy.ClusterRoles() {
		clusterRoles = append(clusterRoles, r.DeepCopy())
	}
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		bindings = append(bindings, b.DeepCopy())
	}
	roles = append(roles, Of[*rbacv1.Role](objs)...)
	roleBindings = append(roleBindings, Of[*rbacv1.RoleBinding](objs)...)
	clusterRoles = append(clusterRoles, Of[*rbacv1.ClusterRole](objs)...)
	bindings = append(bindings, Of[*rbacv1.ClusterRoleBinding](objs)...)
	_, static := validation.NewTestRuleResolver(roles, roleBindings, clusterRoles, bindings)
	return rbacauthorizer.New(static, static, static, static)
}

// Allowed reports whether a allows u's request r.
func Allowed(a authorizer.Authorizer, u user.Info, r Request) bool {
	d, _, err := a.Authorize(context.Background(), authorizer.AttributesRecord{
		User: u, Verb: r.Verb, APIGroup: r.Group, APIVersion: "*", Resource: r.Resource,
		Subresource: r.Subresource, Namespace: r.Namespace, Name: r.Name, ResourceRequest: true,
	})
	return err == nil && d == authorizer.DecisionAllow
}

// checkAccess checks that u may make every request of need and none of
// forbidden, and that every rule of the objects' Roles and ClusterRoles is
// needed: without it, some request of need is denied.
func checkAccess(objs []k8sruntime.Object, u user.Info, need, forbidden []Request) error {
	var p problems
	a := Authorizer(objs)
	for _, r := range need {
		if !Allowed(a, u, r) {
			p.addf("RBAC: %s may not %s", u.GetName(), r)
		}
	}
	for _, r := range forbidden {
		if Allowed(a, u, r) {
			p.addf("RBAC: %s may %s, and should not", u.GetName(), r)
		}
	}
	// Minimality: drop each rule in turn.
	for i, o := range objs {
		var rules *[]rbacv1.PolicyRule
		switch r := o.(type) {
		case *rbacv1.Role:
			rules = &r.Rules
		case *rbacv1.ClusterRole:
			rules = &r.Rules
		default:
			continue
		}
		for j := range *rules {
			without := slices.Clone(objs)
			cp := o.DeepCopyObject()
			switch r := cp.(type) {
			case *rbacv1.Role:
				r.Rules = slices.Delete(slices.Clone(r.Rules), j, j+1)
			case *rbacv1.ClusterRole:
				r.Rules = slices.Delete(slices.Clone(r.Rules), j, j+1)
			}
			without[i] = cp
			aw := Authorizer(without)
			if !slices.ContainsFunc(need, func(r Request) bool { return !Allowed(aw, u, r) }) {
				p.addf("RBAC: %s rule %d (%s) is not needed: the bootstrap policy grants it already", ID(o), j, ruleString((*rules)[j]))
			}
		}
	}
	return p.err()
}

func ruleString(r rbacv1.PolicyRule) string {
	return fmt.Sprintf("groups %v resources %v names %v verbs %v", r.APIGroups, r.Resources, r.ResourceNames, r.Verbs)
}

// CheckNoWildcards fails for any '*' in a Role's or ClusterRole's rules.
func CheckNoWildcards(objs []k8sruntime.Object) error {
	var p problems
	for _, o := range objs {
		var rules []rbacv1.PolicyRule
		switch r := o.(type) {
		case *rbacv1.Role:
			rules = r.Rules
		case *rbacv1.ClusterRole:
			rules = r.Rules
			if r.AggregationRule != nil {
				p.addf("%s: aggregation rules grant what other roles grant", ID(o))
			}
		}
		for _, r := range rules {
			for _, list := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs} {
				for _, s := range list {
					if strings.Contains(s, "*") {
						p.addf("%s: wildcard in rule %s", ID(o), ruleString(r))
					}
				}
			}
		}
	}
	return p.err()
}

func normalize(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rules))
	for i, r := range rules {
		r = *r.DeepCopy()
		for _, l := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs} {
			sort.Strings(l)
		}
		out[i] = r
	}
	return out
}

func rulesEqual(got, want []rbacv1.PolicyRule) bool {
	return equality.Semantic.DeepEqual(normalize(got), normalize(want))
}

// binding is a (Cluster)RoleBinding reduced to what it grants to whom.
type binding struct {
	namespace string
	roleRef   rbacv1.RoleRef
	subjects  []rbacv1.Subject
}

func bindingsOf(objs []k8sruntime.Object) (cluster, namespaced []binding) {
	for _, b := range Of[*rbacv1.ClusterRoleBinding](objs) {
		cluster = append(cluster, binding{roleRef: b.RoleRef, subjects: b.Subjects})
	}
	for _, b := range Of[*rbacv1.RoleBinding](objs) {
		namespaced = append(namespaced, binding{namespace: b.Namespace, roleRef: b.RoleRef, subjects: b.Subjects})
	}
	return cluster, namespaced
}

// checkBindings: every binding has exactly subject, and the role references
// are exactly want ("ClusterRole name" or "namespace Role name").
func checkBindings(objs []k8sruntime.Object, subject rbacv1.Subject, want []string) error {
	var p problems
	cluster, namespaced := bindingsOf(objs)
	var got []string
	for _, b := range append(cluster, namespaced...) {
		ref := b.roleRef.Kind + " " + b.roleRef.Name
		if b.namespace != "" {
			ref = b.namespace + " " + ref
		}
		got = append(got, ref)
		if b.roleRef.APIGroup != rbacv1.GroupName {
			p.addf("binding of %s: roleRef.apiGroup %q", ref, b.roleRef.APIGroup)
		}
		if len(b.subjects) != 1 || !equality.Semantic.DeepEqual(b.subjects[0], subject) {
			p.addf("binding of %s: subjects %v, want only %v", ref, b.subjects, subject)
		}
	}
	sort.Strings(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		p.addf("RBAC bindings:\n  got  %v\n  want %v", got, want)
	}
	return p.err()
}

// CheckSecondaryRBAC checks the secondary overlay's RBAC: the exact rules of
// ArchFilter's ClusterRole and of the lease Role, the exact bindings to the
// ServiceAccount, no wildcard, and, evaluated by the RBAC authorizer with
// the bootstrap policy, every request the scheduler makes is allowed, none
// of ForbiddenRequests is, and no rule is redundant.
func CheckSecondaryRBAC(objs []k8sruntime.Object, lease string) error {
	var p problems
	if err := CheckNoWildcards(objs); err != nil {
		p = append(p, err)
	}
	for _, r := range Of[*rbacv1.ClusterRole](objs) {
		if r.Name != Name || !rulesEqual(r.Rules, ArchFilterRules) {
			p.addf("%s: rules %v, want ClusterRole %s with %v", ID(r), r.Rules, Name, ArchFilterRules)
		}
	}
	for _, r := range Of[*rbacv1.Role](objs) {
		if r.Namespace != Namespace || r.Name != Name+":leader-election" || !rulesEqual(r.Rules, LeaderElectionRules(lease)) {
			p.addf("%s: rules %v, want Role %s/%s:leader-election with %v", ID(r), r.Rules, Namespace, Name, LeaderElectionRules(lease))
		}
	}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: Namespace}
	if err := checkBindings(objs, sa, []string{
		"ClusterRole system:kube-scheduler",
		"ClusterRole system:volume-scheduler",
		"ClusterRole " + Name,
		Namespace + " Role " + Name + ":leader-election",
		Namespace + " Role extension-apiserver-authentication-reader",
	}); err != nil {
		p = append(p, err)
	}
	if err := checkAccess(objs, ServiceAccountUser(), SchedulerRequests(lease), ForbiddenRequests()); err != nil {
		p = append(p, err)
	}
	return p.err()
}

// CheckKubeadmRBAC checks the kubeadm-replacement overlay: ArchFilter's
// ClusterRole bound to the user system:kube-scheduler, which with the
// bootstrap policy allows every request of a default scheduler (lease
// kube-scheduler) and none of ForbiddenRequests.
func CheckKubeadmRBAC(objs []k8sruntime.Object) error {
	var p problems
	if got := Inventory(objs); !slices.Equal(got, KubeadmInventory) {
		p.addf("objects: got %v, want %v", got, KubeadmInventory)
	}
	if err := CheckNoWildcards(objs); err != nil {
		p = append(p, err)
	}
	for _, r := range Of[*rbacv1.ClusterRole](objs) {
		if r.Name != Name || !rulesEqual(r.Rules, ArchFilterRules) {
			p.addf("%s: rules %v, want ClusterRole %s with %v", ID(r), r.Rules, Name, ArchFilterRules)
		}
	}
	u := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user.KubeScheduler}
	if err := checkBindings(objs, u, []string{"ClusterRole " + Name}); err != nil {
		p = append(p, err)
	}
	// The bootstrap Role system::leader-locking-kube-scheduler gives that
	// user every lease of kube-system: not ours to forbid.
	forbidden := slices.DeleteFunc(ForbiddenRequests(), func(r Request) bool {
		return r.Resource == "leases" && r.Namespace == Namespace
	})
	if err := checkAccess(objs, KubeadmUser(), SchedulerRequests("kube-scheduler"), forbidden); err != nil {
		p = append(p, err)
	}
	return p.err()
}
