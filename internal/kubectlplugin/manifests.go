package kubectlplugin

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/archfilter/archfilter/apis/policy/v1alpha1"
)

// workload is one object with a pod template, as a pod: the template's metadata and spec
// in the workload's namespace.
type workload struct {
	Source string // file and document, e.g. "deploy.yaml#2" or "-#1 item 3"
	Kind   string
	Pod    *v1.Pod
	// Annotations are the workload's own (a Deployment's, not its template's); nil
	// for a Pod. archfilter does not read them: check warns about its own there.
	Annotations map[string]string
}

// inputError is a file, document or object that could not be read as a workload.
type inputError struct {
	Source string
	Err    error
}

func (e inputError) Error() string { return e.Source + ": " + e.Err.Error() }

// manifestExtensions are the files a directory contributes.
var manifestExtensions = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// readWorkloads reads every path ("-" is in) and returns its workloads in order,
// and the ArchFilterPolicy objects among them; objects of known kinds without
// a pod template (Services, ConfigMaps...) are skipped.
func readWorkloads(paths []string, in io.Reader) ([]workload, []*policyv1alpha1.ArchFilterPolicy, []inputError) {
	var m manifests
	for _, p := range paths {
		if p == "-" {
			m.readStream("-", in)
			continue
		}
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || (path != p && !manifestExtensions[strings.ToLower(filepath.Ext(path))]) {
				return nil
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			m.readStream(path, f)
			return nil
		})
		if err != nil {
			m.errs = append(m.errs, inputError{Source: p, Err: err})
		}
	}
	return m.workloads, m.policies, m.errs
}

// manifests collects what readWorkloads finds.
type manifests struct {
	workloads []workload
	policies  []*policyv1alpha1.ArchFilterPolicy
	errs      []inputError
}

// readStream splits multi-document YAML (or JSON) and decodes each document.
func (m *manifests) readStream(source string, r io.Reader) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		src := fmt.Sprintf("%s#%d", source, i)
		if err != nil {
			m.errs = append(m.errs, inputError{Source: src, Err: err})
			return
		}
		m.readDocument(src, doc)
	}
}

// readDocument decodes one document: an ArchFilterPolicy strictly, anything
// else with client-go's scheme.
func (m *manifests) readDocument(source string, doc []byte) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		m.errs = append(m.errs, inputError{Source: source, Err: fmt.Errorf("malformed YAML: %w", err)})
		return
	}
	if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
		return // an empty document or only comments
	}
	var tm metav1.TypeMeta
	if json.Unmarshal(j, &tm) == nil && tm.APIVersion == policyv1alpha1.SchemeGroupVersion.String() && tm.Kind == policyv1alpha1.Kind {
		p := &policyv1alpha1.ArchFilterPolicy{}
		if err := yaml.UnmarshalStrict(j, p); err != nil {
			m.errs = append(m.errs, inputError{Source: source, Err: fmt.Errorf("malformed %s: %w", policyv1alpha1.Kind, err)})
			return
		}
		m.policies = append(m.policies, p)
		return
	}
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(j, nil, nil)
	switch {
	case runtime.IsNotRegisteredError(err), runtime.IsMissingKind(err), runtime.IsMissingVersion(err):
		m.errs = append(m.errs, inputError{Source: source, Err: fmt.Errorf("unknown kind: %w", err)})
		return
	case err != nil:
		m.errs = append(m.errs, inputError{Source: source, Err: fmt.Errorf("malformed %s: %w", kindOf(gvk), err)})
		return
	}
	if list, ok := obj.(*v1.List); ok {
		for i, item := range list.Items {
			m.readDocument(fmt.Sprintf("%s item %d", source, i+1), item.Raw)
		}
		return
	}
	if w, ok := workloadOf(obj); ok {
		w.Source = source
		m.workloads = append(m.workloads, w)
	}
}

func kindOf(gvk *schema.GroupVersionKind) string {
	if gvk == nil || gvk.Kind == "" {
		return "document"
	}
	return gvk.Kind
}

// workloadOf returns obj's pod template as a pod, for the kinds that have one.
func workloadOf(obj runtime.Object) (workload, bool) {
	var (
		kind string
		tmpl *v1.PodTemplateSpec
		pod  *v1.Pod
		name string
		ns   string
	)
	switch o := obj.(type) {
	case *v1.Pod:
		kind, pod, name, ns = "Pod", o, o.Name, o.Namespace
	case *appsv1.Deployment:
		kind, tmpl, name, ns = "Deployment", &o.Spec.Template, o.Name, o.Namespace
	case *appsv1.StatefulSet:
		kind, tmpl, name, ns = "StatefulSet", &o.Spec.Template, o.Name, o.Namespace
	case *appsv1.DaemonSet:
		kind, tmpl, name, ns = "DaemonSet", &o.Spec.Template, o.Name, o.Namespace
	case *appsv1.ReplicaSet:
		kind, tmpl, name, ns = "ReplicaSet", &o.Spec.Template, o.Name, o.Namespace
	case *batchv1.Job:
		kind, tmpl, name, ns = "Job", &o.Spec.Template, o.Name, o.Namespace
	case *batchv1.CronJob:
		kind, tmpl, name, ns = "CronJob", &o.Spec.JobTemplate.Spec.Template, o.Name, o.Namespace
	default:
		return workload{}, false
	}
	if pod == nil {
		pod = &v1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
		// The template's pods have a controller, which the rules ask about
		// (a DaemonSet's pods): the workload, or the ReplicaSet or Job it makes.
		controller := map[string]string{"Deployment": "ReplicaSet", "CronJob": "Job"}[kind]
		pod.OwnerReferences = []metav1.OwnerReference{{Kind: cmp.Or(controller, kind), Name: name, Controller: ptr.To(true)}}
	}
	pod.Name, pod.Namespace = name, ns
	w := workload{Kind: kind, Pod: pod}
	if m, ok := obj.(metav1.Object); ok && kind != "Pod" {
		w.Annotations = m.GetAnnotations()
	}
	return w, true
}
